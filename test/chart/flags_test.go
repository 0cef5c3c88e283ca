package chart

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/test/inproc"
)

// boolValues are the boolean values of reloader.* whose every combination
// TestEveryBooleanCombination renders.
var boolValues = []string{
	"reloadOnCreate", "reloadOnDelete", "syncAfterRestart", "autoReloadAll", "isArgoRollouts",
	"isOpenshift", "enableHA", "enablePProf", "enableCSIIntegration", "ignoreJobs", "ignoreCronJobs",
}

// ignoreModes are the allowed combinations of ignoreSecrets/ignoreConfigMaps.
var ignoreModes = []struct {
	secrets, configMaps bool
	kinds               []refs.Kind
}{
	{false, false, []refs.Kind{refs.ConfigMap, refs.Secret}},
	{true, false, []refs.Kind{refs.ConfigMap}},
	{false, true, []refs.Kind{refs.Secret}},
}

// leanChart is what TestEveryBooleanCombination leaves out of most of its
// renders, most of their cost: the values schema, whose properties are
// each checked alone (no if, allOf or dependency between them), so a
// boolean it admits in one configuration it admits in all; and the CRD's
// template, which reads none of the booleans and renders the same for
// each. The configurations with every boolean on and every boolean off
// render the whole chart.
var leanChart = []string{"values.schema.json", "templates/crds.yaml"}

// TestEveryBooleanCombination renders the chart for every combination of
// its boolean values (2^11 times the three ignore modes) and checks that Ripple's real flag
// parsing accepts each rendered container and that each value reaches the
// configuration. One helm run renders hundreds of configurations: a
// throwaway umbrella chart holds the chart once per configuration as an
// aliased dependency.
func TestEveryBooleanCombination(t *testing.T) {
	type combo struct {
		bits   int
		ignore int
	}
	var combos, extremes []combo
	for bits := 0; bits < 1<<len(boolValues); bits++ {
		for ig := range ignoreModes {
			combos = append(combos, combo{bits, ig})
			if bits == 0 || bits == 1<<len(boolValues)-1 {
				extremes = append(extremes, combo{bits, ig})
			}
		}
	}
	type run struct {
		name  string
		part  []combo
		leave []string
	}
	runs := []run{{"the whole chart, every boolean on or off", extremes, nil}}
	const chunks = 8
	for c := range chunks {
		runs = append(runs, run{fmt.Sprintf("part %d of %d", c+1, chunks), combos[c*len(combos)/chunks : (c+1)*len(combos)/chunks], leanChart})
	}
	for _, r := range runs {
		part := r.part
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			values := map[string]map[string]any{}
			aliases := make([]string, len(part))
			for i, cb := range part {
				alias := fmt.Sprintf("c%05d", cb.bits*len(ignoreModes)+cb.ignore)
				aliases[i] = alias
				rv := map[string]any{
					"ignoreSecrets":    ignoreModes[cb.ignore].secrets,
					"ignoreConfigMaps": ignoreModes[cb.ignore].configMaps,
				}
				for b, name := range boolValues {
					rv[name] = cb.bits&(1<<b) != 0
				}
				values[alias] = map[string]any{"reloader": rv}
			}
			umbrella := umbrellaChart(t, aliases, values, r.leave)
			out, err := helmchart.Template(helmchart.Release{Name: "x", Namespace: relNS, Chart: umbrella})
			if err != nil {
				t.Fatal(err)
			}
			// Decode only the Deployments: the rest is most of the output.
			var docs []string
			for _, doc := range helmchart.Documents(out) {
				if strings.HasPrefix(doc, "# Source: umbrella/charts/") && strings.Contains(strings.SplitN(doc, "\n", 2)[0], "/templates/deployment.yaml") {
					docs = append(docs, doc)
				}
			}
			objs, err := helmchart.Objects([]byte(strings.Join(docs, "\n---\n")))
			if err != nil {
				t.Fatal(err)
			}
			deployments := map[string]*appsv1.Deployment{}
			for _, o := range objs {
				d := &appsv1.Deployment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
					t.Fatal(err)
				}
				deployments[strings.TrimPrefix(d.Name, "x-")] = d
			}
			if len(deployments) != len(part) {
				t.Fatalf("rendered %d Deployments for %d configurations", len(deployments), len(part))
			}
			for i, cb := range part {
				d := deployments[aliases[i]]
				if d == nil {
					t.Fatalf("no Deployment for %s", aliases[i])
				}
				c := d.Spec.Template.Spec.Containers[0]
				on := func(name string) bool { return cb.bits&(1<<slices.Index(boolValues, name)) != 0 }
				desc := fmt.Sprintf("%s (%s, ignore secrets %v, configmaps %v): args %q", aliases[i], describeBits(cb.bits),
					ignoreModes[cb.ignore].secrets, ignoreModes[cb.ignore].configMaps, c.Args)
				opts, cfg, err := inproc.ParseFlags(c.Args, envLookup(nil, d, c))
				if err != nil {
					t.Errorf("%s: ripple rejects them: %v", desc, err)
					continue
				}
				for _, x := range []struct {
					name string
					got  bool
				}{
					{"reloadOnCreate", cfg.ReloadOnCreate},
					{"reloadOnDelete", cfg.ReloadOnDelete},
					{"syncAfterRestart", cfg.SyncAfterRestart},
					{"autoReloadAll", cfg.AutoReloadAll},
					{"isArgoRollouts", opts.ArgoRollouts && cfg.ArgoRollouts},
					{"isOpenshift", opts.OpenShift && cfg.OpenShift},
					{"enableHA", cfg.LeaderElection && cfg.LeaderElectionNamespace == relNS},
					{"enablePProf", cfg.PprofAddr == "127.0.0.1:6060"},
					{"enableCSIIntegration", opts.CSIIntegration && cfg.CSI},
					{"ignoreJobs", cfg.IgnoreJobs},
					{"ignoreCronJobs", cfg.IgnoreCronJobs},
				} {
					if x.got != on(x.name) {
						t.Errorf("%s: %s is %v in Ripple's configuration", desc, x.name, x.got)
					}
				}
				kinds := ignoreModes[cb.ignore].kinds
				if on("enableCSIIntegration") {
					kinds = append(slices.Clone(kinds), refs.SecretProviderClass)
				}
				if !slices.Equal(cfg.Kinds, kinds) {
					t.Errorf("%s: Ripple watches %v", desc, cfg.Kinds)
				}
				if cfg.CronJobReload != "run" {
					t.Errorf("%s: --cronjob-reload %q, want the default run", desc, cfg.CronJobReload)
				}
				if len(cfg.Namespaces) != 0 {
					t.Errorf("%s: namespaces %v, want global mode", desc, cfg.Namespaces)
				}
			}
		})
	}
}

func describeBits(bits int) string {
	var on []string
	for b, name := range boolValues {
		if bits&(1<<b) != 0 {
			on = append(on, name)
		}
	}
	if len(on) == 0 {
		return "no booleans"
	}
	return strings.Join(on, ",")
}

// umbrellaChart writes a chart whose dependencies are deploy/helm/ripple,
// without the files leave names, once per alias, each with its values,
// and returns its directory.
func umbrellaChart(t *testing.T, aliases []string, values map[string]map[string]any, leave []string) string {
	t.Helper()
	src, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "charts", "ripple")
	if err := copyDir(src, sub); err != nil {
		t.Fatal(err)
	}
	for _, f := range leave {
		if err := os.Remove(filepath.Join(sub, filepath.FromSlash(f))); err != nil {
			t.Fatal(err) // a file renamed: leanChart must follow
		}
	}
	var deps []map[string]any
	for _, a := range aliases {
		deps = append(deps, map[string]any{"name": "ripple", "version": chartVersion(t, src), "alias": a})
	}
	chartYAML, _ := json.Marshal(map[string]any{"apiVersion": "v2", "name": "umbrella", "version": "0.0.0", "dependencies": deps})
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), chartYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	all := map[string]any{}
	for _, a := range aliases {
		all[a] = values[a]
	}
	valuesYAML, _ := json.Marshal(all)
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), valuesYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func chartVersion(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "version:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("Chart.yaml has no version")
	return ""
}

func copyDir(src, dst string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	tree := root.FS()
	return fs.WalkDir(tree, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(tree, rel)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// deepMerge merges src into dst, maps recursively, and returns dst.
func deepMerge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = deepMerge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}
