package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/test/inproc"
)

// kindsValues are chart values declaring workload kinds.
func kindsValues(presets []any, kinds ...map[string]any) map[string]any {
	decl := make([]any, len(kinds))
	for i, k := range kinds {
		decl[i] = k
	}
	return map[string]any{"ripple": map[string]any{"workloadKinds": map[string]any{"presets": presets, "declared": decl}}}
}

// parseWithKindsFile parses the rendered Deployment's arguments as Ripple
// would in its pod: the kinds file is the rendered ConfigMap's, written
// where the argument points once the mount path is replaced by a
// temporary directory.
func parseWithKindsFile(t *testing.T, objs []*unstructured.Unstructured) (config.Config, error) {
	t.Helper()
	d, c := rippleDeployment(t, objs)
	dir := t.TempDir()
	var mount string
	for _, m := range c.VolumeMounts {
		if m.Name == "workload-kinds" {
			mount = m.MountPath
		}
	}
	for _, o := range find(objs, "ConfigMap") {
		if !strings.HasSuffix(o.GetName(), "-workload-kinds") {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == "workload-kinds" && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name
		}) || mount == "" {
			t.Fatalf("ConfigMap %s is not mounted into Ripple's container", cm.Name)
		}
		for name, data := range cm.Data {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	args := slices.Clone(c.Args)
	for i, a := range args {
		if file, ok := strings.CutPrefix(a, "--workload-kinds="); ok {
			if mount == "" || !strings.HasPrefix(file, mount+"/") {
				t.Fatalf("argument %q points outside the mounted kinds file (%q)", a, mount)
			}
			args[i] = "--workload-kinds=" + filepath.Join(dir, strings.TrimPrefix(file, mount+"/"))
		}
	}
	_, cfg, err := inproc.ParseFlags(args, envLookup(objs, d, c))
	return cfg, err
}

// TestWorkloadKindsChart renders the chart with declared kinds (presets,
// entries of the kinds file, both, none) in global, single-namespace and
// scoped mode, parses what Ripple's pod would get (its arguments and the
// mounted kinds file), and checks that every Ripple (Cluster)Role grants
// get/list/watch/patch on exactly the resources of the kinds Ripple then
// declares, and nothing on the others' (nor any in webhook mode, which
// watches no declared kind).
func TestWorkloadKindsChart(t *testing.T) {
	widget := map[string]any{"group": "example.com", "version": "v1", "kind": "Widget", "template": "spec.pod.template",
		"ready": map[string]any{"condition": "Available"}}
	proxy := map[string]any{"group": "net.example.com", "version": "v1beta1", "kind": "Proxy", "restart": map[string]any{"annotation": "example.com/sync"}}
	box := map[string]any{"group": "example.com", "version": "v1", "kind": "Box", "resource": "boxen", "template": "spec.template"}
	// Every resource some case declares: each case must grant nothing on
	// those it does not declare.
	all := []grant{
		{"apps.kruise.io", "clonesets", nil}, {"apps.kruise.io", "statefulsets", nil}, {"apps.kruise.io", "daemonsets", nil},
		{"serving.knative.dev", "services", nil}, {"keda.sh", "scaledjobs", nil}, {"external-secrets.io", "externalsecrets", nil},
		{"example.com", "widgets", nil}, {"net.example.com", "proxies", nil}, {"example.com", "boxen", nil},
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		kinds  []string
	}{
		{"none", nil, nil},
		{"presets", kindsValues([]any{"kruise", "knative", "keda", "external-secrets"}),
			[]string{"CloneSet", "StatefulSet.apps.kruise.io", "DaemonSet.apps.kruise.io", "Service", "ScaledJob", "ExternalSecret"}},
		{"declared", kindsValues(nil, widget, proxy, box), []string{"Widget", "Proxy", "Box"}},
		{"both", kindsValues([]any{"external-secrets"}, widget), []string{"ExternalSecret", "Widget"}},
	} {
		for _, mode := range []struct {
			name   string
			values map[string]any
		}{
			{"global", nil},
			{"single namespace", r(map[string]any{"watchGlobally": false})},
			{"scoped", r(map[string]any{"watchGlobally": false, "namespaces": []any{"team-a", "team-b"}})},
			// Webhook mode posts changes and watches no declared kind.
			{"webhook", r(map[string]any{"webhookUrl": "https://hooks.example.com/ripple"})},
		} {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				values := deepMerge(deepMerge(map[string]any{}, tc.values), mode.values)
				_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{values}})
				cfg, err := parseWithKindsFile(t, objs)
				if err != nil {
					t.Fatalf("ripple rejects the rendered arguments and kinds file: %v", err)
				}
				var names []string
				want := slices.Clone(all)
				for _, k := range cfg.DeclaredKinds {
					names = append(names, k.Name())
					i := slices.IndexFunc(want, func(g grant) bool { return g.group == k.Group && g.resource == k.Resource })
					if i < 0 {
						t.Fatalf("Ripple declares %s (%s), which no grant of this test covers", k, k.GVR())
					}
					if mode.name != "webhook" {
						want[i].verbs = patchVerbs
					}
				}
				if !slices.Equal(names, tc.kinds) {
					t.Fatalf("Ripple declares %v, want %v", names, tc.kinds)
				}
				rs := ripplesRoles(objs)
				if len(rs) == 0 {
					t.Fatal("no Ripple Role or ClusterRole rendered")
				}
				for _, role := range rs {
					for _, g := range want {
						if got := grantedVerbs(role, g.group, g.resource); !slices.Equal(got, g.verbs) {
							t.Errorf("%s %s in %q: %s/%s verbs %q, want %q", role.GetKind(), role.GetName(), role.GetNamespace(), g.group, g.resource, got, g.verbs)
						}
					}
				}
			})
		}
	}
}

// ripplesRoles are the Roles or ClusterRoles with Ripple's rules.
func ripplesRoles(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range roles(objs) {
		if strings.HasSuffix(o.GetName(), "-role") && !strings.HasSuffix(o.GetName(), "-metadata-role") {
			out = append(out, o)
		}
	}
	return out
}

// The chart's own list of the presets' resources (for RBAC) is the one
// Ripple ships.
func TestWorkloadKindPresetsChart(t *testing.T) {
	for _, name := range declared.PresetNames() {
		_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{kindsValues([]any{name})}})
		srcs, err := declared.Presets([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range srcs[0].Kinds {
			if got := grantedVerbs(ripplesRoles(objs)[0], k.Group, k.Resource); !slices.Equal(got, patchVerbs) {
				t.Errorf("preset %s: %s/%s verbs %q, want %q", name, k.Group, k.Resource, got, patchVerbs)
			}
		}
	}
	if _, err := helmchart.Template(helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{kindsValues([]any{"agones"})}}); err == nil {
		t.Fatal("the chart renders with an unknown preset")
	}
}

// A kinds file with an error stops Ripple at start, naming the file, the
// entry and the field; the chart refuses such values before (naming the
// value, the entry and the field), so the error is put in the rendered
// kinds file, as an edit of the ConfigMap would.
func TestWorkloadKindsChartError(t *testing.T) {
	bad := map[string]any{"group": "example.com", "version": "v1", "kind": "Widget", "template": "spec.template",
		"restart": map[string]any{"annotation": "example.com/sync"}}
	ok := map[string]any{"group": "example.com", "version": "v1", "kind": "Gadget", "template": "spec.template"}
	if _, err := helmchart.Template(helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{kindsValues(nil, ok, bad)}}); err == nil ||
		!strings.Contains(err.Error(), "ripple.workloadKinds.declared entry 2 (Widget): template: set either template or restart, not both") {
		t.Fatalf("helm template: %v; want an error naming entry 2 (Widget) and its template field", err)
	}
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{kindsValues(nil, ok)}})
	for _, o := range find(objs, "ConfigMap") {
		if strings.HasSuffix(o.GetName(), "-workload-kinds") {
			data, err := yaml.Marshal([]any{ok, bad})
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(o.Object, string(data), "data", "workload-kinds.yaml"); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := parseWithKindsFile(t, objs)
	if err == nil || !strings.Contains(err.Error(), "workload-kinds.yaml: entry 2 (Widget): template: set either template or restart, not both") {
		t.Fatalf("error %v, want one naming the kinds file, entry 2 (Widget) and its template field", err)
	}
}
