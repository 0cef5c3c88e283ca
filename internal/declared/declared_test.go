package declared

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		file string
		want []Kind
		// errs are substrings the error must hold, in order; none: no error.
		errs []string
	}{{
		name: "template kind with defaults",
		file: "- {group: example.com, version: v1, kind: Widget, template: spec.template}\n",
		want: []Kind{{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets", Template: "spec.template"}},
	}, {
		name: "restart kind",
		file: "- group: external-secrets.io\n  version: v1\n  kind: ExternalSecret\n  restart: {annotation: force-sync}\n",
		want: []Kind{{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret", Resource: "externalsecrets", Restart: &Restart{Annotation: "force-sync"}}},
	}, {
		name: "ready condition gets the default observedGeneration; resource given",
		file: "- {group: a.io, version: v1beta1, kind: Policy, resource: mypolicies, template: spec.pod.template, paused: spec.paused, ready: {condition: Ready}}\n",
		want: []Kind{{Group: "a.io", Version: "v1beta1", Kind: "Policy", Resource: "mypolicies", Template: "spec.pod.template", Paused: "spec.paused",
			Ready: &Ready{ObservedGeneration: DefaultObservedGeneration, Condition: "Ready"}}},
	}, {
		name: "plural of a kind ending in y",
		file: "- {group: a.io, version: v1, kind: Proxy, template: spec.template}\n",
		want: []Kind{{Group: "a.io", Version: "v1", Kind: "Proxy", Resource: "proxies", Template: "spec.template"}},
	}, {
		name: "empty file declares nothing",
		file: "",
	}, {
		name: "not a list",
		file: "group: a.io\n",
		errs: []string{"kinds.yaml: not a YAML list of kinds"},
	}, {
		name: "unknown field names entry and field",
		file: "- {group: a.io, version: v1, kind: Widget, template: spec.template}\n- {group: a.io, version: v1, kind: Gadget, templat: spec.template}\n",
		errs: []string{`kinds.yaml: entry 2`, `unknown field "templat"`},
	}, {
		name: "both template and restart",
		file: "- {group: a.io, version: v1, kind: Widget, template: spec.template, restart: {annotation: x}}\n",
		errs: []string{"kinds.yaml: entry 1 (Widget): template: set either template or restart, not both"},
	}, {
		name: "neither template nor restart",
		file: "- {group: a.io, version: v1, kind: Widget}\n",
		errs: []string{"entry 1 (Widget): template: missing"},
	}, {
		name: "bad paths, group, version and kind, each named",
		file: "- {group: A_B, version: V1, kind: widget, template: spec..template, paused: 'spec paused'}\n",
		errs: []string{"entry 1 (widget)", `group: "A_B"`, `version: "V1"`, `kind: "widget" is not a kind`, `template: "spec..template"`, `paused: "spec paused"`},
	}, {
		name: "bad annotation key",
		file: "- {group: a.io, version: v1, kind: Widget, restart: {annotation: 'not a key'}}\n",
		errs: []string{`entry 1 (Widget): restart.annotation: "not a key" is not an annotation key`},
	}, {
		name: "paused on a restart kind",
		file: "- {group: a.io, version: v1, kind: Widget, restart: {annotation: x}, paused: spec.paused}\n",
		errs: []string{"paused: only a kind with a template can be paused"},
	}, {
		name: "ready with both forms",
		file: "- {group: a.io, version: v1, kind: Widget, template: spec.template, ready: {condition: Ready, replicas: {desired: a, updated: b, available: c}}}\n",
		errs: []string{"ready.condition: set either condition"},
	}, {
		name: "refs of a restart kind, kinds in any case",
		file: "- {group: a.io, version: v1, kind: Widget, restart: {annotation: x}, refs: [{path: 'spec.from[].configMap.name', kind: configmap}, {path: spec.secretName, kind: Secret}]}\n",
		want: []Kind{{Group: "a.io", Version: "v1", Kind: "Widget", Resource: "widgets", Restart: &Restart{Annotation: "x"},
			Refs: []Ref{{Path: "spec.from[].configMap.name", Kind: "configmap"}, {Path: "spec.secretName", Kind: "Secret"}}}},
	}, {
		name: "refs of a template kind, outside the template",
		file: "- {group: a.io, version: v1, kind: Widget, template: spec.template, refs: [{path: spec.configName, kind: ConfigMap}]}\n",
		want: []Kind{{Group: "a.io", Version: "v1", Kind: "Widget", Resource: "widgets", Template: "spec.template",
			Refs: []Ref{{Path: "spec.configName", Kind: "ConfigMap"}}}},
	}, {
		name: "refs: each bad item named by its index and field",
		file: "- {group: a.io, version: v1, kind: Widget, template: spec.template, refs: [{path: 'spec.a[0].name', kind: ConfigMap}, {path: spec.b, kind: Pod}, " +
			"{path: spec.template.spec.volumes, kind: Secret}, {path: metadata.name, kind: Secret}, {kind: Secret}, {path: spec.c, kind: ConfigMap, typo: 1}, 'spec.d', {path: spec.b, kind: configMap}, {path: spec.b, kind: ConfigMap}]}\n",
		errs: []string{"entry 1 (Widget)", `unknown field "refs[5].typo"; the fields are path, kind`, `want a mapping of fields (path, kind), not a string`,
			`refs[0].path: "spec.a[0].name": field 2, "a[0]", is not a field name`,
			`refs[1].kind: "Pod" is not a config kind; use ConfigMap or Secret`,
			`refs[2].path: "spec.template.spec.volumes" is in the pod template (spec.template)`,
			`refs[3].path: "metadata.name" is under metadata`,
			`refs[4].path: missing`,
			`refs[8]: the same path and kind as refs[7]`},
	}, {
		name: "refs not a list",
		file: "- {group: a.io, version: v1, kind: Widget, restart: {annotation: x}, refs: spec.a}\n",
		errs: []string{"entry 1 (Widget): refs: want a list, not a string"},
	}, {
		name: "ready replicas missing a field",
		file: "- {group: a.io, version: v1, kind: Widget, template: spec.template, ready: {replicas: {desired: spec.replicas, updated: status.updated}}}\n",
		errs: []string{`ready.replicas.available: "" is not a field path`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("kinds.yaml", []byte(tc.file))
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Parse =\n%+v\nwant\n%+v", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse = %+v, want an error with %q", got, tc.errs)
			}
			msg := err.Error()
			for _, s := range tc.errs {
				i := strings.Index(msg, s)
				if i < 0 {
					t.Fatalf("error %q does not hold %q (in order)", err, s)
				}
				msg = msg[i+len(s):]
			}
		})
	}
}

func TestPresets(t *testing.T) {
	for _, name := range PresetNames() {
		srcs, err := Presets([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range srcs[0].Kinds {
			if err := k.validate(); err != nil {
				t.Errorf("preset %s: %s: %v", name, k, err)
			}
			if k.withDefaults().Resource != k.Resource {
				t.Errorf("preset %s: %s: resource %q, want it spelled out as %q", name, k, k.Resource, k.withDefaults().Resource)
			}
		}
	}
	if _, err := Presets([]string{"kruise", "nope"}); err == nil || !strings.Contains(err.Error(), `"nope" is not a preset; use one of external-secrets, keda, knative, kruise`) {
		t.Fatalf("unknown preset: error %v", err)
	}
}

func TestRefsBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("- group: a.io\n  version: v1\n  kind: Widget\n  restart: {annotation: x}\n  refs:\n")
	for i := range MaxRefs + 1 {
		fmt.Fprintf(&b, "  - {path: spec.c%d, kind: ConfigMap}\n", i)
	}
	_, err := Parse("kinds.yaml", []byte(b.String()))
	if want := fmt.Sprintf("entry 1 (Widget): refs: %d paths; a kind has at most %d", MaxRefs+1, MaxRefs); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Parse of %d refs: %v, want %q", MaxRefs+1, err, want)
	}
}

func TestFields(t *testing.T) {
	k := Kind{Refs: []Ref{{Path: "spec.a[].name", Kind: "configmap"}, {Path: "spec.s", Kind: "SECRET"}}}
	got := k.Fields()
	if len(got) != 2 || got[0].Kind != refs.ConfigMap || got[1].Kind != refs.Secret || got[0].Path != "spec.a[].name" {
		t.Fatalf("Fields = %+v", got)
	}
}

func TestMergeRejectsAKindDeclaredTwice(t *testing.T) {
	srcs, err := Presets([]string{"kruise"})
	if err != nil {
		t.Fatal(err)
	}
	file, err := Parse("kinds.yaml", []byte("- {group: apps.kruise.io, version: v1, kind: CloneSet, template: spec.template}\n- {group: a.io, version: v1, kind: Widget, template: spec.template}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Merge(append(srcs, Source{Name: "kinds.yaml", Kinds: file})...)
	if err == nil || !strings.Contains(err.Error(), "kinds.yaml: CloneSet.apps.kruise.io is declared twice (first in preset kruise)") {
		t.Fatalf("Merge: error %v", err)
	}
	all, err := Merge(append(srcs, Source{Name: "kinds.yaml", Kinds: file[1:]})...)
	if err != nil || len(all) != 4 || all[0].Kind != "CloneSet" || all[3].Kind != "Widget" {
		t.Fatalf("Merge = %v, %v; want the kruise kinds then Widget", all, err)
	}
}

// A declared kind is named by its kind, or by its kind and group when the
// kind alone names a built-in kind or another declared kind; the flag
// that declared it is kept for the log.
func TestMergeNamesClashingKindsByGroup(t *testing.T) {
	srcs, err := Presets([]string{"kruise"})
	if err != nil {
		t.Fatal(err)
	}
	file, err := Parse("kinds.yaml", []byte("- {group: example.com, version: v1, kind: CloneSet, template: spec.template}\n- {group: a.io, version: v1, kind: Widget, template: spec.template}\n"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := Merge(append(srcs, Source{Name: "kinds.yaml", Flag: "--workload-kinds=kinds.yaml", Kinds: file})...)
	if err != nil {
		t.Fatal(err)
	}
	var names, flags []string
	for _, k := range all {
		names = append(names, k.Name())
		flags = append(flags, k.Flag())
	}
	want := []string{"CloneSet.apps.kruise.io", "StatefulSet.apps.kruise.io", "DaemonSet.apps.kruise.io", "CloneSet.example.com", "Widget"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	wantFlags := []string{"--workload-kinds-preset=kruise", "--workload-kinds-preset=kruise", "--workload-kinds-preset=kruise", "--workload-kinds=kinds.yaml", "--workload-kinds=kinds.yaml"}
	if !slices.Equal(flags, wantFlags) {
		t.Fatalf("flags %q, want %q", flags, wantFlags)
	}
}

// Every error of a kinds file is a line naming the file and the entry, and
// an entry's errors are all reported: an unknown or mistyped field hides
// none of the others, and validation does not repeat a field that could
// not be read as missing.
func TestParseReportsEveryErrorOnItsOwnLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		lines []string
	}{{
		name: "an unknown field and the entry's other errors",
		file: "- {group: a.io, version: v1, kind: Widget, template: spec.template}\n" +
			"- {group: A_B, version: v1, kind: Gadget, templat: spec.template, paused: 'spec paused', ready: {condition: Ready, replica: {}}}\n",
		lines: []string{
			`kinds.yaml: entry 2 (Gadget): unknown field "ready.replica"; the fields are observedGeneration, condition, replicas`,
			`kinds.yaml: entry 2 (Gadget): unknown field "templat"; the fields are group, version, kind, resource, template, restart, ready, paused, refs`,
			`kinds.yaml: entry 2 (Gadget): group: "A_B" is not an API group (a DNS subdomain such as apps.kruise.io)`,
			`kinds.yaml: entry 2 (Gadget): template: missing: set template (the field path of a pod template) or restart`,
			`kinds.yaml: entry 2 (Gadget): paused: only a kind with a template can be paused`,
		},
	}, {
		name: "mistyped fields are named once, the others validated",
		file: "- {group: a.io, version: 1, kind: Widget, template: 5, ready: yes}\n",
		lines: []string{
			`kinds.yaml: entry 1 (Widget): ready: want a mapping of fields (observedGeneration, condition, replicas), not a boolean`,
			`kinds.yaml: entry 1 (Widget): template: want a string, not a number`,
			`kinds.yaml: entry 1 (Widget): version: want a string, not a number`,
		},
	}, {
		name: "a restart that is no mapping leaves template unreported",
		file: "- {group: a.io, version: v1, kind: Widget, restart: force-sync}\n",
		lines: []string{
			`kinds.yaml: entry 1 (Widget): restart: want a mapping of fields (annotation), not a string`,
		},
	}, {
		name: "an entry that is no mapping, then a valid one and a bad one",
		file: "- Widget\n- {group: a.io, version: v1, kind: Gadget, template: spec.template}\n- {group: a.io, version: V1, kind: gizmo, restart: {annotation: x, anotation: y}}\n",
		lines: []string{
			`kinds.yaml: entry 1: want a mapping of fields (group, version, kind, resource, template, restart, ready, paused, refs), not a string`,
			`kinds.yaml: entry 3 (gizmo): unknown field "restart.anotation"; the fields are annotation`,
			`kinds.yaml: entry 3 (gizmo): version: "V1" is not an API version such as v1alpha1`,
			`kinds.yaml: entry 3 (gizmo): kind: "gizmo" is not a kind (upper camel case, such as CloneSet)`,
		},
	}, {
		name: "replica paths in their order",
		file: "- {group: a.io, version: v1, kind: Widget, template: spec.template, ready: {replicas: {}}}\n",
		lines: []string{
			`kinds.yaml: entry 1 (Widget): ready.replicas.desired: "" is not a field path such as status.replicas`,
			`kinds.yaml: entry 1 (Widget): ready.replicas.updated: "" is not a field path such as status.replicas`,
			`kinds.yaml: entry 1 (Widget): ready.replicas.available: "" is not a field path such as status.replicas`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("kinds.yaml", []byte(tc.file))
			if err == nil {
				t.Fatal("Parse accepted the file")
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tc.lines) {
				t.Fatalf("Parse's error lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.lines, "\n"))
			}
		})
	}
}

// Field names are read in any case, as encoding/json reads them, so a
// kinds file that loaded before still loads.
func TestParseFieldNamesInAnyCase(t *testing.T) {
	got, err := Parse("kinds.yaml", []byte("- {Group: a.io, version: v1, Kind: Widget, Template: spec.template, Ready: {Condition: Ready}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Kind{{Group: "a.io", Version: "v1", Kind: "Widget", Resource: "widgets", Template: "spec.template", Ready: &Ready{ObservedGeneration: DefaultObservedGeneration, Condition: "Ready"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse =\n%+v\nwant\n%+v", got, want)
	}
}
