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
	// OpenKruise's workloads, each with its pod template, the pause of its
	// rolling update and its updated-and-ready counts. Advanced StatefulSet
	// and Advanced DaemonSet share the built-in kinds' names, so Ripple
	// names them with their group (StatefulSet.apps.kruise.io).
	"kruise": {{
		Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet", Resource: "clonesets",
		Template: "spec.template",
		Paused:   "spec.updateStrategy.paused",
		Ready: &Ready{ObservedGeneration: DefaultObservedGeneration, Replicas: &Replicas{
			Desired: "spec.replicas", Updated: "status.updatedReplicas", Available: "status.updatedReadyReplicas",
		}},
	}, {
		Group: "apps.kruise.io", Version: "v1beta1", Kind: "StatefulSet", Resource: "statefulsets",
		Template: "spec.template",
		Paused:   "spec.updateStrategy.rollingUpdate.paused",
		Ready: &Ready{ObservedGeneration: DefaultObservedGeneration, Replicas: &Replicas{
			Desired: "spec.replicas", Updated: "status.updatedReplicas", Available: "status.updatedAvailableReplicas",
		}},
	}, {
		Group: "apps.kruise.io", Version: "v1alpha1", Kind: "DaemonSet", Resource: "daemonsets",
		Template: "spec.template",
		Paused:   "spec.updateStrategy.rollingUpdate.paused",
		Ready: &Ready{ObservedGeneration: DefaultObservedGeneration, Replicas: &Replicas{
			Desired: "status.desiredNumberScheduled", Updated: "status.updatedNumberScheduled", Available: "status.numberAvailable",
		}},
	}},
	// Knative Serving Service: a new revision template makes a new
	// Revision, ready once the Service's Ready condition says so.
	"knative": {{
		Group: "serving.knative.dev", Version: "v1", Kind: "Service", Resource: "services",
		Template: "spec.template",
		Ready:    &Ready{ObservedGeneration: DefaultObservedGeneration, Condition: "Ready"},
	}},
	// KEDA ScaledJob: the Jobs it starts after a change get the new
	// template. It has no rollout to follow (no observedGeneration) and
	// pauses by an annotation, not a field.
	"keda": {{
		Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledJob", Resource: "scaledjobs",
		Template: "spec.jobTargetRef.template",
	}},
	// External Secrets ExternalSecret: a new value of its force-sync
	// annotation makes the operator fetch the secret again. The ConfigMaps
	// and Secrets its target's template is rendered from (templateFrom)
	// are its references, as a pod template's are a Deployment's.
	"external-secrets": {{
		Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret", Resource: "externalsecrets",
		Restart: &Restart{Annotation: "force-sync"},
		Refs: []Ref{
			{Path: "spec.target.template.templateFrom[].configMap.name", Kind: "ConfigMap"},
			{Path: "spec.target.template.templateFrom[].secret.name", Kind: "Secret"},
		},
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
		out = append(out, Source{Name: "preset " + n, Flag: "--workload-kinds-preset=" + n, Kinds: slices.Clone(kinds)})
	}
	return out, nil
}
