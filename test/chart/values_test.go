package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/test/inproc"
)

// rippleFlagTakes reports whether Ripple's own flag parsing accepts args,
// and its error.
func rippleFlagTakes(args ...string) error {
	_, _, err := inproc.ParseFlags(args, nil)
	return err
}

// A value case: the chart values (or helm arguments), the flag Ripple
// would get for it, and whether Ripple takes that flag.
type valueCase struct {
	name   string
	values map[string]any
	args   []string
	flag   string
}

// checkAsRippleTakes renders tc and holds the chart to the binary: a value
// the chart renders, Ripple starts with (its rendered arguments parse, and
// hold want when given); a value Ripple refuses (tc.flag, parsed alone),
// helm refuses, naming the value (valueName, in the schema's path or the
// chart's own words).
func checkAsRippleTakes(t *testing.T, tc valueCase, valueNames []string, want string) {
	t.Helper()
	flagErr := rippleFlagTakes(tc.flag)
	rel := helmchart.Release{Name: relName, Namespace: relNS, Args: tc.args}
	if tc.values != nil {
		rel.Values = []map[string]any{tc.values}
	}
	out, err := helmchart.Template(rel)
	if flagErr != nil {
		if err == nil {
			t.Fatalf("Ripple refuses %s (%v); the chart renders it", tc.flag, flagErr)
		}
		if !slices.ContainsFunc(valueNames, func(n string) bool { return strings.Contains(err.Error(), n) }) {
			t.Fatalf("helm template: %v; want an error naming %q", err, valueNames)
		}
		return
	}
	if err != nil {
		t.Fatalf("Ripple takes %s; helm template refuses it: %v", tc.flag, err)
	}
	objs, err := helmchart.Objects(out)
	if err != nil {
		t.Fatal(err)
	}
	_, c := rippleDeployment(t, objs)
	parseRendered(t, objs)
	if want != "" && !slices.Contains(c.Args, want) {
		t.Errorf("arguments %q lack %s", c.Args, want)
	}
}

// ripple.canary takes what --canary takes: a number of workloads or a
// percentage, spaces around, and a number without quotes, as
// `--set ripple.canary=1` gives it; what --canary refuses fails the
// render naming ripple.canary.
func TestCanaryValueAsRippleReadsIt(t *testing.T) {
	names := []string{"/ripple/canary", "ripple.canary"}
	var cases []valueCase
	for _, v := range []string{"1", "10%", " 10 %", "+2", "01", "100%", "0", "3 ", "0%", "101%", "1.5", "one", "-1", "10%%", "%", "1 0"} {
		cases = append(cases, valueCase{name: fmt.Sprintf("%q", v), values: map[string]any{"ripple": map[string]any{"canary": v}}, flag: "--canary=" + v})
	}
	for _, v := range []string{"1", "3", "-1", "1.5"} {
		cases = append(cases,
			valueCase{name: "--set " + v, args: []string{"--set", "ripple.canary=" + v}, flag: "--canary=" + v},
			valueCase{name: "number " + v, values: map[string]any{"ripple": map[string]any{"canary": jsonNumber(v)}}, flag: "--canary=" + v})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := ""
			if tc.flag != "--canary=0" {
				want = tc.flag
			}
			checkAsRippleTakes(t, tc, names, want)
		})
	}
}

// jsonNumber is v as the number a values file holds.
func jsonNumber(v string) any {
	var n any
	if err := yaml.Unmarshal([]byte(v), &n); err != nil {
		panic(err)
	}
	return n
}

// ripple.canaryBake takes the durations --canary-bake takes, from 0s to
// 24h; a longer one fails the render naming ripple.canaryBake.
func TestCanaryBakeValueAsRippleReadsIt(t *testing.T) {
	names := []string{"/ripple/canaryBake", "ripple.canaryBake"}
	for _, v := range []string{
		"30s", "0s", "0", "24h", "1440m", "86400s", "86400000ms", "23h59m59.999s", "1.5h", ".5h", "+1h", "500ms", "1µs", "2h30m",
		"25h", "24h0m0.001s", "24h1ns", "1440m1s", "100000h", "-1s", "1d", "soon", "1h 30m", " 30s", "1.h1",
	} {
		t.Run(fmt.Sprintf("%q", v), func(t *testing.T) {
			t.Parallel()
			checkAsRippleTakes(t, valueCase{values: map[string]any{"ripple": map[string]any{"canaryBake": v}}, flag: "--canary-bake=" + v}, names, "--canary-bake="+v)
		})
	}
}

// ripple.canaryUnkept takes what --canary-unkept takes, hold or roll, and
// passes it; anything else fails the render naming ripple.canaryUnkept.
func TestCanaryUnkeptValueAsRippleReadsIt(t *testing.T) {
	names := []string{"/ripple/canaryUnkept", "ripple.canaryUnkept"}
	for _, v := range []string{"hold", "roll", "Roll", "pass", " roll"} {
		t.Run(fmt.Sprintf("%q", v), func(t *testing.T) {
			t.Parallel()
			checkAsRippleTakes(t, valueCase{values: map[string]any{"ripple": map[string]any{"canaryUnkept": v}}, flag: "--canary-unkept=" + v}, names, "--canary-unkept="+v)
		})
	}
}

// A canary with ConfigRollouts off renders only where Ripple starts with
// it: with ripple.canaryUnkept roll, or a canary that is none; otherwise
// every canaried change would be held, and both refuse it.
func TestCanaryWithoutConfigRollouts(t *testing.T) {
	for _, tc := range []struct {
		canary, unkept string
	}{{"1", ""}, {"10%", "hold"}, {"1", "roll"}, {"0", ""}, {" +00 ", ""}, {"", ""}} {
		t.Run(fmt.Sprintf("%q %q", tc.canary, tc.unkept), func(t *testing.T) {
			t.Parallel()
			flags := []string{"--canary=" + tc.canary, "--config-rollouts=false"}
			if tc.unkept != "" {
				flags = append(flags, "--canary-unkept="+tc.unkept)
			}
			rp := map[string]any{"canary": tc.canary, "canaryUnkept": tc.unkept, "configRollouts": map[string]any{"enabled": false}}
			_, err := helmchart.Template(helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{{"ripple": rp}}})
			flagErr := rippleFlagTakes(flags...)
			switch {
			case flagErr == nil && err != nil:
				t.Errorf("Ripple takes %q; helm template refuses it: %v", flags, err)
			case flagErr != nil && (err == nil || !strings.Contains(err.Error(), "ripple.canary needs ripple.configRollouts.enabled")):
				t.Errorf("Ripple refuses %q (%v); helm template: %v, want it refused naming ripple.canary", flags, flagErr, err)
			}
		})
	}
}

// ripple.restartMethod and ripple.cronJobReload take what --restart-method
// and --cronjob-reload take, in any case and with spaces around, and pass
// them in lower case: the pod permissions of evict and delete follow the
// value whatever its case.
func TestRestartMethodAndCronJobReloadInAnyCase(t *testing.T) {
	for _, tc := range []struct {
		key, flag, value, want string
	}{
		{"restartMethod", "restart-method", "Evict", "evict"},
		{"restartMethod", "restart-method", " DELETE ", "delete"},
		{"restartMethod", "restart-method", "Template", ""},
		{"restartMethod", "restart-method", "evicts", ""},
		{"restartMethod", "restart-method", "rolling", ""},
		{"cronJobReload", "cronjob-reload", "Template", "template"},
		{"cronJobReload", "cronjob-reload", " RUN ", ""},
		{"cronJobReload", "cronjob-reload", "now", ""},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			want := ""
			if tc.want != "" {
				want = "--" + tc.flag + "=" + tc.want
			}
			vc := valueCase{values: map[string]any{"ripple": map[string]any{tc.key: tc.value}}, flag: "--" + tc.flag + "=" + tc.value}
			checkAsRippleTakes(t, vc, []string{"/ripple/" + tc.key}, want)
			if rippleFlagTakes(vc.flag) != nil {
				return
			}
			_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{vc.values}})
			role := ripplesRoles(objs)[0]
			evict := slices.Contains(grantedVerbs(role, "", "pods/eviction"), "create")
			del := slices.Contains(grantedVerbs(role, "", "pods"), "delete")
			if evict != (tc.want == "evict") || del != (tc.want == "delete") {
				t.Errorf("%s %q: pods/eviction create %t, pods delete %t", tc.key, tc.value, evict, del)
			}
		})
	}
}

// ripple.workloadKinds: what Ripple would refuse at start in the kinds
// file the chart renders (internal/declared: each entry's fields and
// values, and a kind declared twice, by a preset or an entry) fails the
// render instead, naming the value, the entry and the field; what Ripple
// takes, the chart renders and Ripple starts with.
func TestDeclaredKindsAsRippleReadsThem(t *testing.T) {
	widget := func(kv ...any) map[string]any {
		m := map[string]any{"group": "example.com", "version": "v1", "kind": "Widget", "template": "spec.template"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	restart := map[string]any{"annotation": "example.com/sync"}
	for _, tc := range []struct {
		name    string
		presets []any
		kinds   []map[string]any
		want    string // in helm's error; empty: the chart renders
	}{
		{"template", nil, []map[string]any{widget()}, ""},
		{"restart and resource", nil, []map[string]any{widget("template", nil, "restart", map[string]any{"annotation": "force-sync"}, "resource", "widgetz")}, ""},
		{"ready condition and paused", nil, []map[string]any{widget("ready", map[string]any{"condition": "Available", "observedGeneration": "status.gen"}, "paused", "spec.paused")}, ""},
		{"ready replicas", nil, []map[string]any{widget("ready", map[string]any{"replicas": map[string]any{"desired": "spec.replicas", "updated": "status.updated", "available": "status.available"}})}, ""},
		{"same kind in another group", []any{"kruise"}, []map[string]any{widget("kind", "CloneSet")}, ""},
		{"misspelled field", nil, []map[string]any{widget("template", nil, "templat", "spec.template")}, "at '/ripple/workloadKinds/declared/0': additional properties 'templat' not allowed"},
		{"misspelled ready field", nil, []map[string]any{widget("ready", map[string]any{"condtion": "Ready"})}, "at '/ripple/workloadKinds/declared/0/ready': additional properties 'condtion' not allowed"},
		{"misspelled restart field", nil, []map[string]any{widget("template", nil, "restart", map[string]any{"anotation": "x"})}, "at '/ripple/workloadKinds/declared/0/restart'"},
		{"template as a number", nil, []map[string]any{widget("template", 5)}, "at '/ripple/workloadKinds/declared/0/template'"},
		{"kind in lower case", nil, []map[string]any{widget(), widget("kind", "gadget")}, "ripple.workloadKinds.declared entry 2 (gadget): kind: \"gadget\" is not a kind"},
		{"version", nil, []map[string]any{widget("version", "V1")}, "entry 1 (Widget): version: \"V1\" is not an API version"},
		{"group", nil, []map[string]any{widget("group", "Example_com")}, "entry 1 (Widget): group: \"Example_com\" is not an API group"},
		{"resource", nil, []map[string]any{widget("resource", "Widgets")}, "entry 1 (Widget): resource: \"Widgets\" is not a resource name"},
		{"both template and restart", nil, []map[string]any{widget("restart", restart)}, "entry 1 (Widget): template: set either template or restart, not both"},
		{"neither template nor restart", nil, []map[string]any{widget("template", nil)}, "entry 1 (Widget): template: missing"},
		{"template path", nil, []map[string]any{widget("template", "spec..template")}, "entry 1 (Widget): template: \"spec..template\" is not a field path"},
		{"annotation key", nil, []map[string]any{widget("template", nil, "restart", map[string]any{"annotation": "not a key"})}, "entry 1 (Widget): restart.annotation: \"not a key\" is not an annotation key"},
		{"annotation key with two slashes", nil, []map[string]any{widget("template", nil, "restart", map[string]any{"annotation": "a/b/c"})}, "restart.annotation: \"a/b/c\""},
		{"paused without template", nil, []map[string]any{widget("template", nil, "restart", restart, "paused", "spec.paused")}, "entry 1 (Widget): paused: only a kind with a template can be paused"},
		{"paused path", nil, []map[string]any{widget("paused", "spec paused")}, "entry 1 (Widget): paused: \"spec paused\" is not a field path"},
		{"empty ready", nil, []map[string]any{widget("ready", map[string]any{})}, "entry 1 (Widget): ready.condition: set either condition"},
		{"ready with both", nil, []map[string]any{widget("ready", map[string]any{"condition": "Ready", "replicas": map[string]any{"desired": "a", "updated": "b", "available": "c"}})}, "ready.condition: set either condition"},
		{"ready replicas path", nil, []map[string]any{widget("ready", map[string]any{"replicas": map[string]any{"desired": "a", "updated": "", "available": "c"}})}, "entry 1 (Widget): ready.replicas.updated: \"\" is not a field path"},
		{"ready observed generation path", nil, []map[string]any{widget("ready", map[string]any{"condition": "Ready", "observedGeneration": "status..gen"})}, "ready.observedGeneration: \"status..gen\""},
		{"declared twice", nil, []map[string]any{widget(), widget("kind", "WIDGET")}, "WIDGET.example.com is declared twice (first in ripple.workloadKinds.declared entry 1, again in ripple.workloadKinds.declared entry 2)"},
		{"declared by a preset too", []any{"kruise"}, []map[string]any{widget("kind", "CloneSet", "group", "apps.kruise.io")}, "CloneSet.apps.kruise.io is declared twice (first in preset kruise, again in ripple.workloadKinds.declared entry 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Ripple's verdict on the same kinds: the kinds file the chart
			// writes, parsed and merged with the presets as at start.
			data, err := yaml.Marshal(tc.kinds)
			if err != nil {
				t.Fatal(err)
			}
			var presets []string
			for _, p := range tc.presets {
				presets = append(presets, p.(string))
			}
			srcs, err := declared.Presets(presets)
			if err != nil {
				t.Fatal(err)
			}
			kinds, rippleErr := declared.Parse("workload-kinds.yaml", data)
			if rippleErr == nil {
				_, rippleErr = declared.Merge(append(srcs, declared.Source{Name: "workload-kinds.yaml", Kinds: kinds})...)
			}
			if (rippleErr == nil) != (tc.want == "") {
				t.Fatalf("Ripple's verdict: %v; the table says the chart renders: %t", rippleErr, tc.want == "")
			}
			rel := helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{kindsValues(tc.presets, tc.kinds...)}}
			if tc.want != "" {
				_, err := helmchart.Template(rel)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("helm template: %v; want an error saying %q", err, tc.want)
				}
				return
			}
			_, objs := render(t, rel)
			if _, err := parseWithKindsFile(t, objs); err != nil {
				t.Fatalf("Ripple refuses what the chart renders: %v", err)
			}
		})
	}
}

// Namespaces' annotations are read only with ripple.namespaceDefaults,
// and only cluster-wide: values that suggest they are meant to be read
// (a change policy set without it), or namespaceDefaults where the chart
// drops it, get a note in NOTES.txt and on the rendered Deployment (what
// helm template and GitOps tools show); other values get none.
func TestNamespaceDefaultsNote(t *testing.T) {
	notes := notesChart(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string // empty: no note
	}{
		{"defaults", nil, ""},
		{"policy without namespaceDefaults", map[string]any{"ripple": map[string]any{"reloadPolicy": "manual"}}, "ripple.reloadPolicy is set, and Namespaces' ripple.dev/reload-window, reload-policy, restart-method, max-unavailable, canary and canary-bake annotations are not read: set ripple.namespaceDefaults: true"},
		{"window and canary", map[string]any{"ripple": map[string]any{"reloadWindow": "02:00-04:00", "canary": "1", "annotationPrefix": "example.com"}}, "ripple.reloadWindow, ripple.canary are set, and Namespaces' example.com/reload-window"},
		{"tighten-only", map[string]any{"ripple": map[string]any{"governance": map[string]any{"tightenOnly": true}}}, "ripple.governance.tightenOnly is set"},
		{"restart method", map[string]any{"ripple": map[string]any{"restartMethod": "Evict"}}, "ripple.restartMethod is set"},
		{"policy with namespaceDefaults", map[string]any{"ripple": map[string]any{"reloadPolicy": "manual", "namespaceDefaults": true}}, ""},
		{"namespaceDefaults in one namespace", deepMerge(r(map[string]any{"watchGlobally": false}), map[string]any{"ripple": map[string]any{"namespaceDefaults": true}}), "ripple.namespaceDefaults is not passed on: it needs a cluster-wide install"},
		{"namespaceDefaults scoped", deepMerge(r(map[string]any{"namespaces": []any{"team-a"}}), map[string]any{"ripple": map[string]any{"namespaceDefaults": true}}), "ripple.namespaceDefaults is not passed on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rel := helmchart.Release{Name: relName, Namespace: relNS, Chart: notes, Values: []map[string]any{tc.values}}
			out, err := helmchart.Template(rel)
			if err != nil {
				t.Fatal(err)
			}
			deployment, notesTxt, ok := strings.Cut(string(out), "# Source: ripple/templates/zz-notes.yaml")
			if !ok {
				t.Fatalf("no rendered NOTES.txt in\n%s", out)
			}
			// NOTES.txt wraps its lines: compare with spaces collapsed.
			notesTxt = strings.Join(strings.Fields(strings.ReplaceAll(notesTxt, "\n#", "\n")), " ")
			hasNote := strings.Contains(deployment, "# NOTE: ")
			if tc.want == "" {
				if hasNote || strings.Contains(notesTxt, "Namespace defaults:") {
					t.Fatalf("a note without cause:\n%s", out)
				}
				return
			}
			if !strings.Contains(deployment, "# NOTE: "+tc.want) {
				t.Errorf("the Deployment's comment does not say %q:\n%s", tc.want, deployment)
			}
			if !strings.Contains(notesTxt, "Namespace defaults: "+tc.want) {
				t.Errorf("NOTES.txt does not say %q:\n%s", tc.want, notesTxt)
			}
		})
	}
}

// notesChart is a copy of the chart that also renders NOTES.txt as a
// comment (helm template never renders it).
func notesChart(t *testing.T) string {
	t.Helper()
	src, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ripple")
	if err := copyDir(src, dir); err != nil {
		t.Fatal(err)
	}
	tpl := `# {{ include "ripple/templates/NOTES.txt" . | replace "\n" "\n# " }}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "zz-notes.yaml"), []byte(tpl), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
