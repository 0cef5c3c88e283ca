package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Annotation keys as users write them.
const (
	autoKey        = "reloader.stakater.com/auto"
	cmAutoKey      = "configmap.reloader.stakater.com/auto"
	secretAutoKey  = "secret.reloader.stakater.com/auto"
	cmReloadKey    = "configmap.reloader.stakater.com/reload"
	secretReload   = "secret.reloader.stakater.com/reload"
	searchKey      = "reloader.stakater.com/search"
	matchKey       = "reloader.stakater.com/match"
	ignoreKey      = "reloader.stakater.com/ignore"
	cmExcludeKey   = "configmaps.exclude.reloader.stakater.com/reload"
	secretExclude  = "secrets.exclude.reloader.stakater.com/reload"
	appliedKey     = "ripple.dev/applied"
	negativeWindow = 2 * time.Second
)

var (
	cm1 = refs.Ref{Kind: refs.ConfigMap, Name: "cm1"}
	cm2 = refs.Ref{Kind: refs.ConfigMap, Name: "cm2"}
	s1  = refs.Ref{Kind: refs.Secret, Name: "s1"}
	s2  = refs.Ref{Kind: refs.Secret, Name: "s2"}
)

// scenario is one row of the reload rules: what exists, what changes, and
// whether the workload must roll. Names in annotations are written "{cm1}"
// and made unique per subtest.
type scenario struct {
	name    string
	meta    map[string]string // workload metadata annotations
	tpl     map[string]string // pod template annotations
	uses    []use
	configs map[refs.Ref]map[string]string // configs to create, with their annotations
	change  refs.Ref
	// labelsOnly changes the config's labels instead of its data.
	labelsOnly bool
	// baseline: Ripple tracks the changed config, so it records a baseline
	// on the workload before the change.
	baseline bool
	reload   bool
}

// cfgs lists configs without annotations.
func cfgs(rs ...refs.Ref) map[refs.Ref]map[string]string {
	m := map[refs.Ref]map[string]string{}
	for _, r := range rs {
		m[r] = nil
	}
	return m
}

func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// ruleScenarios are Reloader's reload rules for every workload kind (the
// rows TestReloadRules names), shared by the kind-specific tables.
var ruleScenarios = []scenario{
	{name: "C1 named ConfigMap, data change", meta: ann(cmReloadKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "C2 named Secret, data change", meta: ann(secretReload, "{s1}"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "C4 auto, ConfigMap change", meta: ann(autoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "C5 ConfigMap labels only", meta: ann(cmReloadKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, labelsOnly: true, baseline: true},
	{name: "C6 Secret labels only", meta: ann(secretReload, "{s1}"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, labelsOnly: true, baseline: true},
	{name: "C11 ConfigMap volume", meta: ann(cmReloadKey, "{cm1}"), uses: []use{volume(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "C12 Secret volume", meta: ann(secretReload, "{s1}"), uses: []use{volume(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "C13 no annotation", uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
	{name: "C14 named list, unreferenced ConfigMap", meta: ann(cmReloadKey, "{cm1},{cm2}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1, cm2), change: cm2, baseline: true, reload: true},
	{name: "C15 named list, unreferenced Secret", meta: ann(secretReload, "{s1}, {s2}"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1, s2), change: s2, baseline: true, reload: true},
	{name: "C17 ConfigMap and Secret named, Secret changes", meta: ann(cmReloadKey, "{cm1}", secretReload, "{s1}"), uses: []use{envFrom(refs.ConfigMap, "cm1"), envFrom(refs.Secret, "s1")}, configs: cfgs(cm1, s1), change: s1, baseline: true, reload: true},
	{name: "C18 auto false", meta: ann(autoKey, "false"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
	{name: "C19 named ConfigMap on the pod template", tpl: ann(cmReloadKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "C20 named Secret on the pod template", tpl: ann(secretReload, "{s1}"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "C21 auto on the pod template", tpl: ann(autoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "C24 named on workload and pod template", meta: ann(cmReloadKey, "{cm1}"), tpl: ann(cmReloadKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "C25 template names ConfigMap, Secret changes", tpl: ann(cmReloadKey, "{cm1}"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(cm1, s1), change: s1},

	{name: "R1 valueFrom ConfigMap", meta: ann(cmReloadKey, "{cm1}"), uses: []use{valueFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "R2 valueFrom Secret", meta: ann(secretReload, "{s1}"), uses: []use{valueFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "R3 projected ConfigMap", meta: ann(cmReloadKey, "{cm1}"), uses: []use{projected(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "R4 projected Secret", meta: ann(secretReload, "{s1}"), uses: []use{projected(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "R7 init container envFrom ConfigMap", meta: ann(cmReloadKey, "{cm1}"), uses: []use{initEnvFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "R8 init container envFrom Secret", meta: ann(secretReload, "{s1}"), uses: []use{initEnvFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "R9 init container ConfigMap volume", meta: ann(cmReloadKey, "{cm1}"), uses: []use{initVolume(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "R10 init container Secret volume, auto", meta: ann(autoKey, "true"), uses: []use{initVolume(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "R11 auto with valueFrom", meta: ann(autoKey, "true"), uses: []use{valueFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},

	{name: "N13 auto, excluded ConfigMap", meta: ann(autoKey, "true", cmExcludeKey, "{cm2}"), uses: []use{envFrom(refs.ConfigMap, "cm1"), envFrom(refs.ConfigMap, "cm2")}, configs: cfgs(cm1, cm2), change: cm2},
	{name: "N14 auto, other ConfigMap than excluded", meta: ann(autoKey, "true", cmExcludeKey, "{cm2}"), uses: []use{envFrom(refs.ConfigMap, "cm1"), envFrom(refs.ConfigMap, "cm2")}, configs: cfgs(cm1, cm2), change: cm1, baseline: true, reload: true},
	{name: "N15 auto, excluded Secret", meta: ann(autoKey, "true", secretExclude, "{s1}"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1},
	{name: "exclude beats named", meta: ann(cmReloadKey, "{cm1}", cmExcludeKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
	{name: "exclude on the pod template is not honoured", tpl: ann(autoKey, "true", cmExcludeKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "N29 ignore on ConfigMap beats named", meta: ann(cmReloadKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann(ignoreKey, "true")}, change: cm1},
	{name: "N30 ignore on Secret beats auto", meta: ann(autoKey, "true"), uses: []use{envFrom(refs.Secret, "s1")}, configs: map[refs.Ref]map[string]string{s1: ann(ignoreKey, "true")}, change: s1},
	{name: "auto false does not block named", meta: ann(autoKey, "false", cmReloadKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "typed auto of the other type does not trigger", meta: ann(secretAutoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
	{name: "N5 typed Secret auto", meta: ann(secretAutoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1"), envFrom(refs.Secret, "s1")}, configs: cfgs(cm1, s1), change: s1, baseline: true, reload: true},
	{name: "N4 typed ConfigMap auto", meta: ann(cmAutoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1"), envFrom(refs.Secret, "s1")}, configs: cfgs(cm1, s1), change: cm1, baseline: true, reload: true},
	{name: "auto needs a reference", meta: ann(autoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1, cm2), change: cm2},
	{name: "N31 search and match", meta: ann(searchKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann(matchKey, "true")}, change: cm1, baseline: true, reload: true},
	{name: "N32 search without match", meta: ann(searchKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
	{name: "N33 match without search", uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann(matchKey, "true")}, change: cm1},
	{name: "search on the pod template", tpl: ann(searchKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann(matchKey, "true")}, change: cm1, baseline: true, reload: true},
	{name: "V11 regex pattern matches", meta: ann(cmReloadKey, "{cm}.*"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "V12 regex pattern does not match", meta: ann(cmReloadKey, "{cm}1.+"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
	{name: "V13 Secret regex pattern", meta: ann(secretReload, "{s}[0-9]"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "dot in a name is literal", meta: ann(cmReloadKey, "{cm}.1"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
}

// pick returns the rule scenarios with these names, in this order.
func pick(names ...string) []scenario {
	var out []scenario
	for _, n := range names {
		i := slices.IndexFunc(ruleScenarios, func(sc scenario) bool { return sc.name == n })
		if i < 0 {
			panic("no rule scenario " + n)
		}
		out = append(out, ruleScenarios[i])
	}
	return out
}

// TestReloadRules runs Reloader's reference checklist (rows C1, C2, C4-C6,
// C11-C21, C24-C27, C29, C30, R1-R11, N13-N22, N29-N34, V11-V13) and the
// precedence rules of its decision algorithm against each workload kind.
func TestReloadRules(t *testing.T) {
	autoAll := []scenario{
		{name: "auto-reload-all reloads referenced", uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
		{name: "auto-reload-all needs a reference", uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1, cm2), change: cm2},
		{name: "garbage auto blocks auto-reload-all", meta: ann(autoKey, "yes-please"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
		{name: "auto false blocks auto-reload-all", meta: ann(autoKey, "false"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
		{name: "typed auto of the other type does not block auto-reload-all", meta: ann(secretAutoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	}
	renamed := []scenario{
		{name: "renamed auto key", meta: ann("example.com/auto", "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
		{name: "default auto key no longer read", meta: ann(autoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
		{name: "renamed ConfigMap reload key", meta: ann("example.com/cm", "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
		{name: "renamed ignore key", meta: ann("example.com/auto", "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann("example.com/ignore", "true")}, change: cm1},
	}
	// The other rename flags (Reloader's --secret-annotation,
	// --configmap-auto-annotation, --secret-auto-annotation,
	// --auto-search-annotation, --search-match-annotation).
	renamedMore := []scenario{
		{name: "renamed Secret reload key", meta: ann("example.com/secret", "{s1}"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
		{name: "default Secret reload key no longer read", meta: ann(secretReload, "{s1}"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1},
		{name: "renamed ConfigMap auto key", meta: ann("example.com/cm-auto", "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
		{name: "default ConfigMap auto key no longer read", meta: ann(cmAutoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
		{name: "renamed Secret auto key", meta: ann("example.com/secret-auto", "true"), uses: []use{envFrom(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
		{name: "renamed search and match keys", meta: ann("example.com/search", "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann("example.com/match", "true")}, change: cm1, baseline: true, reload: true},
		{name: "default match key no longer read", meta: ann("example.com/search", "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann(matchKey, "true")}, change: cm1},
		{name: "default search key no longer read", meta: ann(searchKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann("example.com/match", "true")}, change: cm1},
	}
	groups := []struct {
		name      string
		args      []string
		scenarios []scenario
	}{
		{"annotations", []string{"--reload-strategy=annotations"}, ruleScenarios},
		{"env-vars", []string{"--reload-strategy=env-vars"}, ruleScenarios},
		{"auto-reload-all", []string{"--auto-reload-all"}, autoAll},
		{"renamed-keys", []string{"--auto-annotation=example.com/auto", "--configmap-annotation=example.com/cm", "--ignore-annotation=example.com/ignore"}, renamed},
		{"renamed-keys-more", []string{"--secret-annotation=example.com/secret", "--configmap-auto-annotation=example.com/cm-auto",
			"--secret-auto-annotation=example.com/secret-auto", "--auto-search-annotation=example.com/search", "--search-match-annotation=example.com/match"}, renamedMore},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, g.args...)
			st := strategy.EnvVars{}.Name()
			if g.name == "annotations" {
				st = "annotations"
			}
			for i, sc := range g.scenarios {
				for _, k := range kit.TemplateKinds {
					t.Run(sc.name+"/"+k.Name, func(t *testing.T) {
						t.Parallel()
						e.runScenario(t, fmt.Sprintf("s%d-%s-", i, strings.ToLower(k.Name[:3])), k, sc, st)
					})
				}
			}
		})
	}
}

// runScenario creates the scenario's objects with names prefixed by p,
// changes one config and checks whether the workload rolled.
func (e *env) runScenario(t *testing.T, p string, k *kit.WorkloadKind, sc scenario, strategyName string) {
	s, w, before, want := e.stageAndChange(t, p, k, sc)
	if !sc.reload {
		e.expectNoRollout(t, w, k, before)
		return
	}
	st, _ := strategy.New(strategyName)
	e.waitFor(t, w, fmt.Sprintf("the %s strategy to record %s = %s", strategyName, s.changed, want), func(o client.Object) bool {
		got, ok := st.Applied(k.Template(o), s.changed)
		return ok && got == want
	})
}

// stageAndChange stages the scenario, creates its workload of kind k,
// waits for Ripple's baseline when the scenario has one, and changes the
// config; it returns the workload, its pod template before the change and
// the changed config's new digest.
func (e *env) stageAndChange(t *testing.T, p string, k *kit.WorkloadKind, sc scenario) (s staged, w client.Object, before *corev1.PodTemplateSpec, want string) {
	t.Helper()
	s = e.stage(t, p, sc)
	w = k.New(metav1.ObjectMeta{Name: p + "w", Namespace: e.ns, Annotations: s.subst(sc.meta)},
		corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: s.subst(sc.tpl)}, Spec: podSpec(s.uses...)})
	if err := e.c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	if sc.baseline {
		e.waitFor(t, w, "the baseline record of the changed config", tracks(s.changed))
	}
	before = k.Template(w).DeepCopy()
	return s, w, before, e.change(t, s, sc)
}

// staged is a scenario made concrete for one subtest: its configs created
// with the subtest's prefix on their names.
type staged struct {
	names *strings.Replacer
	// uses are the scenario's references with the prefixed names; changed
	// is the config the scenario changes.
	uses    []use
	changed refs.Ref
}

// stage creates sc's configs with names prefixed by p. Names in
// annotations are written "{cm1}" (or "{cm}" for a pattern) and map to the
// same prefixed names.
func (e *env) stage(t *testing.T, p string, sc scenario) staged {
	t.Helper()
	named := func(r refs.Ref) refs.Ref { return refs.Ref{Kind: r.Kind, Name: p + r.Name} }
	for r, a := range sc.configs {
		if err := e.c.Create(t.Context(), configObject(e.ns, named(r), a, "v1")); err != nil {
			t.Fatal(err)
		}
	}
	s := staged{
		names:   strings.NewReplacer("{cm1}", p+"cm1", "{cm2}", p+"cm2", "{s1}", p+"s1", "{s2}", p+"s2", "{cm}", p+"cm", "{s}", p+"s"),
		changed: named(sc.change),
	}
	for _, u := range sc.uses {
		s.uses = append(s.uses, use{how: u.how, ref: named(u.ref)})
	}
	return s
}

// subst replaces the placeholders in annotation values.
func (s staged) subst(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = s.names.Replace(v)
	}
	return out
}

// change makes the scenario's change (its data, or only its labels) and
// returns the changed config's digest once its data is "v2".
func (e *env) change(t *testing.T, s staged, sc scenario) string {
	t.Helper()
	cfg := configObject(e.ns, s.changed, nil, "v2")
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(cfg), cfg); err != nil {
		t.Fatal(err)
	}
	if sc.labelsOnly {
		cfg.SetLabels(map[string]string{"v": "2"})
	} else {
		setData(cfg, "v2")
	}
	if err := e.c.Update(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	return configDigest(configObject(e.ns, s.changed, nil, "v2"))
}

// setData replaces a config's data with k=value.
func setData(o client.Object, value string) {
	switch c := o.(type) {
	case *corev1.ConfigMap:
		c.Data = map[string]string{"k": value}
	case *corev1.Secret:
		c.Data = map[string][]byte{"k": []byte(value)}
	}
}

func configDigest(o client.Object) string {
	if s, ok := o.(*corev1.Secret); ok {
		return digest.Secret(s)
	}
	return digest.ConfigMap(o.(*corev1.ConfigMap))
}

// waitFor polls obj (refreshing it in place) until cond holds.
func (e *env) waitFor(t *testing.T, obj client.Object, what string, cond func(client.Object) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		return cond(obj), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s on %s: %v", what, obj.GetName(), err)
	}
}

// expectNoRollout checks, for a while, that the pod template of obj stays
// as it was. (Generation would not do: a Deployment's also counts metadata
// annotation changes, such as Ripple's baseline record.)
func (e *env) expectNoRollout(t *testing.T, obj client.Object, k *kit.WorkloadKind, before *corev1.PodTemplateSpec) {
	t.Helper()
	time.Sleep(negativeWindow)
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	if after := k.Template(obj); !equality.Semantic.DeepEqual(before, after) {
		t.Fatalf("the pod template changed; want no rollout\nbefore: %+v\nafter:  %+v", before, after)
	}
}
