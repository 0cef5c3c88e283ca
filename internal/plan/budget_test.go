package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/refs"
)

// An exclude list over its bound fails closed: the ConfigMap's change
// does not roll (it could be listed), a Warning names the annotation, and
// the Secret's change, of the other kind, still rolls. Before, the list
// was ignored whole and the ConfigMap's change rolled.
func TestExcludeOverBoundRollsNothingOfItsKind(t *testing.T) {
	over := annotate(keys.ConfigMapExclude, strings.Repeat("other,", annotation.MaxItems+1))
	p := For(in(both, over, digestOf(cmApp, "cm2")))
	if p.Reloads() {
		t.Errorf("the ConfigMap's change rolls past an exclude list over its bound")
	}
	if d := p.Sources[0].Decision; d.Reason != decide.Excluded || !strings.Contains(d.Message, keys.ConfigMapExclude) {
		t.Errorf("ConfigMap decision %+v, want excluded naming %s", d, keys.ConfigMapExclude)
	}
	want := `annotation "` + keys.ConfigMapExclude + `": 101 items, more than 100; excluding every ConfigMap instead`
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], want) {
		t.Errorf("warnings %q, want one starting %q", p.Warnings, want)
	}
	if p := For(in(both, over, digestOf(secDB, "s2"))); !p.Reloads() {
		t.Error("the Secret's change does not roll")
	}
}

// A named-reload annotation the gather found over the match budget is
// ignored whole: a config it names, literally or by a pattern, does not
// reload by it.
func TestNamedOverBudgetIgnored(t *testing.T) {
	named := func(i *Input) {
		delete(i.Workload.Annotations, keys.Auto)
		i.Workload.Annotations[keys.ReloadKey(refs.ConfigMap)] = "app,a.*"
	}
	if p := For(in(both, named, digestOf(cmApp, "cm2"))); !p.Reloads() {
		t.Fatal("the named ConfigMap's change does not roll")
	}
	over := func(i *Input) { i.Workload.OverBudget = []refs.Kind{refs.ConfigMap} }
	if p := For(in(both, named, over, digestOf(cmApp, "cm2"))); p.Reloads() || p.Sources[0].Decision.Reason != decide.NotOptedIn {
		t.Errorf("over the budget: rolls %v, decision %+v", p.Reloads(), p.Sources[0].Decision)
	}
	if !Reloads(in().Settings, in(named).Workload, in().Sources[0]) || Reloads(in().Settings, in(named, over).Workload, in().Sources[0]) {
		t.Error("Reloads (webhook mode) does not ignore the annotation over the budget")
	}
}

// A reload-on-keys annotation whose key patterns cost more than the match
// budget over the keys of its ConfigMap is invalid: a Warning names it,
// and the workload reloads on any data change, as with any invalid value.
// Before, every reconcile matched the 10,000 keys against each pattern
// (seconds), and a change of a key no pattern matched rolled nothing.
func TestReloadOnKeysOverBudget(t *testing.T) {
	data := map[string]string{}
	for i := range 1000 {
		k := fmt.Sprintf("k%d-", i)
		data[k+strings.Repeat("a", annotation.MaxItemLen-len(k))] = "v"
	}
	patterns := make([]string, 10)
	for i := range patterns {
		patterns[i] = fmt.Sprintf(".*a.*a.*a.*a%d", i)
	}
	w := newWorld(t, wholeEnv, data, keys.ReloadOnKeys, "app["+strings.Join(patterns, ",")+"]")
	data["unlisted"] = "1"
	w.set(data)
	p := w.reconcile()
	want := `annotation "` + keys.ReloadOnKeys + `": matching its patterns against the keys of the configs it lists costs more than`
	if !p.Reloads() || len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], want) {
		t.Errorf("rolls %v, warnings %.300q; want a roll and one warning %q...", p.Reloads(), p.Warnings, want)
	}
}
