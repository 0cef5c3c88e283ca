package declared

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// presets are the kinds shipped for common operators, by the name
// --workload-kinds-preset takes. Each is tested on its project's real CRD
// (test/integration), of the version docs/workload-kinds.md names.
var presets = map[string][]Kind{
	// OpenKruise CloneSet: its pod template, its partition pause and its
	// updated-and-ready counts.
	"kruise": {{
		Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet", Resource: "clonesets",
		Template: "spec.template",
		Paused:   "spec.updateStrategy.paused",
		Ready: &Ready{ObservedGeneration: DefaultObservedGeneration, Replicas: &Replicas{
			Desired: "spec.replicas", Updated: "status.updatedReplicas", Available: "status.updatedReadyReplicas",
		}},
	}},
	// External Secrets ExternalSecret: a new value of its force-sync
	// annotation makes the operator fetch the secret again.
	"external-secrets": {{
		Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret", Resource: "externalsecrets",
		Restart: &Restart{Annotation: "force-sync"},
	}},
}

// PresetNames are the presets' names, sorted.
func PresetNames() []string { return slices.Sorted(maps.Keys(presets)) }

// Presets returns the kinds of the named presets, one Source each; an
// unknown name is an error that lists the known ones.
func Presets(names []string) ([]Source, error) {
	var out []Source
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		kinds, ok := presets[n]
		if !ok {
			return nil, fmt.Errorf("%q is not a preset; use one of %s", n, strings.Join(PresetNames(), ", "))
		}
		out = append(out, Source{Name: "preset " + n, Kinds: slices.Clone(kinds)})
	}
	return out, nil
}
