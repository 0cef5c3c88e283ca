package chart

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/workload"
)

// ownRBACDoc is the page whose table lists the rules for users who keep
// their own RBAC instead of the chart's.
var ownRBACDoc = filepath.Join("..", "..", "docs", "migration.md")

// docRule is one row of that table, as a rule.
type docRule struct {
	group     string
	resources []string
	verbs     []string
	// own: the row is for Ripple's own namespace only (a Role there).
	own bool
	// row is the row as written, for messages.
	row string
}

// ownRBACRules parses the table of docs/migration.md's "With plain
// manifests or Kustomize" section and returns the rows that apply to
// Ripple with its default settings: rows without a condition, and those
// that apply "unless" a flag turns them off. A row with another condition
// ("with --is-openshift", "HA", "restart methods") is for a setting the
// defaults leave off.
func ownRBACRules(t *testing.T) []docRule {
	t.Helper()
	b, err := os.ReadFile(ownRBACDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## With plain manifests or Kustomize\n")
	if !ok {
		t.Fatal(`docs/migration.md has no section "## With plain manifests or Kustomize"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var table []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| API group |") || (len(table) > 0 && strings.HasPrefix(line, "|")) {
			table = append(table, line)
		} else if len(table) > 0 {
			break
		}
	}
	if len(table) < 3 {
		t.Fatal("docs/migration.md's section on plain manifests has no table headed | API group |")
	}
	word := regexp.MustCompile(`^[a-z]+$`)
	var out []docRule
	for _, row := range table[2:] {
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		if len(cells) < 3 {
			t.Fatalf("docs/migration.md: a row of fewer than 3 cells: %s", row)
		}
		plain := func(s string) string { return strings.TrimSpace(strings.NewReplacer("**", "", "`", "").Replace(s)) }
		resources, condition, _ := strings.Cut(plain(cells[1]), " (")
		if condition != "" && !strings.HasPrefix(condition, "unless ") {
			continue
		}
		r := docRule{group: plain(cells[0]), row: row}
		if r.group == `""` {
			r.group = ""
		}
		if names, ok := strings.CutSuffix(resources, " in Ripple's own namespace"); ok {
			r.own, resources = true, names
		}
		for _, res := range strings.Split(resources, ",") {
			r.resources = append(r.resources, strings.TrimSpace(res))
		}
		verbs, _, _ := strings.Cut(plain(cells[2]), " (")
		for _, v := range strings.Split(verbs, ",") {
			v = strings.TrimSpace(v)
			if !word.MatchString(v) {
				t.Fatalf("docs/migration.md: verb %q is not one word, in the row %s", v, row)
			}
			r.verbs = append(r.verbs, v)
		}
		out = append(out, r)
	}
	return out
}

// ownRBACRoles builds what the table lists for a release in relNS: one
// ClusterRole of the rows for every namespace, one Role in relNS of the
// rows for Ripple's own namespace, each bound to the ServiceAccount sa.
// skip leaves out the rows it matches.
func ownRBACRoles(name, relNS, sa string, rules []docRule, skip func(docRule) bool) (roles, bindings []*unstructured.Unstructured) {
	var cluster, own []any
	for _, r := range rules {
		if skip != nil && skip(r) {
			continue
		}
		rule := map[string]any{"apiGroups": []any{r.group}, "resources": toAny(r.resources), "verbs": toAny(r.verbs)}
		if r.own {
			own = append(own, rule)
		} else {
			cluster = append(cluster, rule)
		}
	}
	subject := []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": relNS}}
	for _, x := range []struct {
		kind, ns string
		rules    []any
	}{{"ClusterRole", "", cluster}, {"Role", relNS, own}} {
		if len(x.rules) == 0 {
			continue
		}
		meta := map[string]any{"name": name}
		if x.ns != "" {
			meta["namespace"] = x.ns
		}
		roles = append(roles, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": x.kind, "metadata": meta, "rules": x.rules,
		}})
		bindings = append(bindings, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": x.kind + "Binding", "metadata": meta,
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": x.kind, "name": name},
			"subjects": subject,
		}})
	}
	return roles, bindings
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestOwnRBACTable: a user who keeps their own RBAC gives Ripple what
// docs/migration.md's table lists. Applied as written (the rows that
// apply to the default settings, the chart's default arguments), Ripple
// runs as that ServiceAccount and a ConfigMap change reloads a Deployment,
// starts a Job from a CronJob and re-creates a Job (its record in Ripple's
// namespace gone), with no forbidden error. Without the table's Secret row
// for Ripple's namespace (the Job record key and the digest key), every
// workload but the Job is reloaded, and the Job is not, for want of its
// record key: the row is needed.
func TestOwnRBACTable(t *testing.T) {
	t.Parallel()
	rules := ownRBACRules(t)
	secretsHere := func(r docRule) bool { return r.own && r.group == "" && slices.Contains(r.resources, "secrets") }
	if !slices.ContainsFunc(rules, secretsHere) {
		t.Errorf("docs/migration.md's table has no row for secrets in Ripple's own namespace (the Job record key, the digest key)")
	}
	t.Run("as written", func(t *testing.T) {
		t.Parallel()
		o := runOwnRBACCase(t, rules, nil, nil)
		if len(o.forbidden) > 0 {
			t.Errorf("ripple hit forbidden errors with the table's rules:\n%s", strings.Join(o.forbidden, "\n"))
		}
		if !o.acted {
			t.Errorf("ripple did not reload within %v with the table's rules: %s", caseTimeout, strings.Join(o.pending, "; "))
		}
	})
	t.Run("without secrets in Ripple's namespace", func(t *testing.T) {
		t.Parallel()
		jobOnly := func(o outcome) bool {
			// The Job's leftover record (newRBACWorkloads) stays with it.
			pending := slices.DeleteFunc(slices.Clone(o.pending), func(p string) bool { return strings.HasPrefix(p, "the re-create record ") })
			return len(pending) == 1 && strings.HasPrefix(pending[0], "Job ") &&
				slices.ContainsFunc(o.forbiddenRemoved, func(l string) bool { return strings.Contains(l, workload.RecordKeySecret) })
		}
		o := runOwnRBACCase(t, rules, secretsHere, jobOnly)
		if o.acted {
			t.Fatal("ripple re-created the Job without the secrets row: the row is not needed")
		}
		if !jobOnly(o) {
			t.Errorf("want only the Job not re-created, for want of its record key Secret %s; pending: %q; forbidden errors on secrets: %q",
				workload.RecordKeySecret, o.pending, o.forbiddenRemoved)
		}
	})
}

// runOwnRBACCase runs Ripple as a ServiceAccount holding the table's rules
// (less those skip matches) and changes the config until every workload
// was reloaded, done says the outcome is known, or caseTimeout passes.
func runOwnRBACCase(t *testing.T, rules []docRule, skip func(docRule) bool, done func(outcome) bool) outcome {
	cases <- struct{}{}
	defer func() { <-cases }()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(api.Config)
	relNS := kit.NewNamespace(t, cs, "own-rbac-", nil)
	apps := []string{kit.NewNamespace(t, cs, "own-rbac-app-", nil)}

	// Apart from the Ripples of other tests, as in TestRBAC.
	autoKey := relNS + ".rbac.test/auto"
	_, objs := render(t, helmchart.Release{Name: relNS, Namespace: relNS, Values: []map[string]any{{
		"reloader": map[string]any{"custom_annotations": map[string]any{"auto": autoKey}},
		"ripple":   map[string]any{"annotationPrefix": relNS + ".rbac.test"},
	}}})
	sas := find(objs, "ServiceAccount")
	if len(sas) != 1 {
		t.Fatalf("the chart rendered %d ServiceAccounts, want 1", len(sas))
	}
	sa := sas[0].GetName()
	docRoles, docBindings := ownRBACRoles(relNS+"-own", relNS, sa, rules, skip)
	a := newApplier(t, api.Config)
	for _, o := range append(append([]*unstructured.Unstructured{sas[0]}, docRoles...), docBindings...) {
		if err := a.apply(ctx, o, false); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(o.GetKind(), "Cluster") {
			t.Cleanup(func() { _ = a.delete(context.WithoutCancel(t.Context()), o) })
		}
	}
	user := "system:serviceaccount:" + relNS + ":" + sa
	waitAuthorized(t, cs, relNS, sa, docRoles, apps)

	w := newRBACWorkloads(t, cs, rbacMode{name: "own RBAC"}, relNS, apps, autoKey)
	d, c := rippleDeployment(t, objs)
	rip := startRipple(t, user, relNS, sa, c.Args, envLookup(objs, d, c))
	o := outcome{}
	defer func() {
		ctx := context.WithoutCancel(t.Context())
		if !o.acted {
			// A Ripple stopped before its caches synced never returns
			// (see TestRBAC): give it the chart's rules to sync first.
			for _, x := range objs {
				switch x.GetKind() {
				case "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
					if err := a.apply(ctx, x, false); err != nil {
						t.Error(err)
					}
					if strings.HasPrefix(x.GetKind(), "Cluster") {
						defer func() { _ = a.delete(ctx, x) }()
					}
				}
			}
			syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
			rip.Manager.GetCache().WaitForCacheSync(syncCtx)
			cancel()
		}
		if err := rip.Stop(); err != nil && strings.Contains(err.Error(), "did not stop") {
			t.Error(err)
		}
	}()

	var skipped []map[string]any
	for _, r := range rules {
		if skip != nil && skip(r) {
			skipped = append(skipped, map[string]any{"apiGroups": []any{r.group}, "resources": toAny(r.resources)})
		}
	}
	forbidden := func() {
		o.forbidden = append(rip.Log.Lines("forbidden"), klogs.Lines("forbidden", `"`+user+`"`)...)
		o.forbiddenRemoved = nil
		for _, line := range o.forbidden {
			if slices.ContainsFunc(skipped, func(rule map[string]any) bool { return mentionsRule(line, rule) }) {
				o.forbiddenRemoved = append(o.forbiddenRemoved, line)
			}
		}
	}
	// Change the config until Ripple acts: a change seen before its caches
	// synced is its baseline.
	deadline := time.Now().Add(caseTimeout)
	for i := 1; time.Now().Before(deadline) && !o.acted; i++ {
		w.change(ctx, i)
		step := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(step) && !o.acted {
			o.pending = w.pending(ctx)
			o.acted = len(o.pending) == 0
			time.Sleep(100 * time.Millisecond)
		}
		forbidden()
		if done != nil && done(o) {
			break
		}
	}
	if o.acted {
		// An Event or a late write may fail just after the reload.
		time.Sleep(2 * time.Second)
		forbidden()
	}
	return o
}
