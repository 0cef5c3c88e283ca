// Package impact says, before a ConfigMap or Secret is written, what the
// write will do: which workloads roll, which is the canary, which wait
// and why, and which keys changed and how many workloads read each. It is
// the verdict `ripple plan` prints for a pull request and that an
// admission webhook can warn with: both make it with Assess, over what
// they read (manifest files, the controller's caches), and render it with
// this package's functions, so they cannot disagree.
//
// The verdict is the planner's: each workload's plan.Input, gathered with
// the config's new data and its old data as what the workload applied, is
// planned by plan.For, after its settle window, with the canaries chosen
// as the change controller chooses them (plan.StartCanary). Nothing here
// decides a reload. The verdict holds key names only, never a value nor a
// digest.
package impact

import (
	"cmp"
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Change is one write of a config: its data before (nil for a create) and
// after (nil for a delete), as digests and key tables (never the data).
type Change struct {
	Namespace string
	Config    refs.Ref
	// Before is the data before the write; nil when the write creates the
	// config.
	Before *digest.Form
	// After is the data the write leaves; nil when it deletes the config.
	After *digest.Form
}

// Op is what the write does to the config.
func (c Change) Op() Op {
	switch {
	case c.Before == nil:
		return Created
	case c.After == nil:
		return Deleted
	}
	return Updated
}

// Op is a kind of write.
type Op string

// The writes a verdict is made for.
const (
	Created = Op("created")
	Updated = Op("updated")
	Deleted = Op("deleted")
)

// Consumer is a workload that may read the config, as gathered for its
// plan with the config's new data.
type Consumer struct {
	Ref   workload.Ref
	Input plan.Input
	// First is set when it asks to be chosen as a canary first; Idle when
	// it runs no pods (rollout.Idle), as the change controller chooses.
	First, Idle bool
}

// Outcome is what the change does to one workload.
type Outcome string

// The outcomes, in the order a verdict lists them.
const (
	// Canary: it rolls first; the others of the change wait for it.
	Canary = Outcome("canary")
	// Rolls: it rolls (after the canaries, if any).
	Rolls = Outcome("rolls")
	// Waits: it rolls once its wait ends (Wait says which).
	Waits = Outcome("waits")
	// NotifyOnly: --dry-run or the notify policy: told, not rolled.
	NotifyOnly = Outcome("notify-only")
	// Unaffected: it reloads on the config, but on none of the keys that
	// changed, or it runs the new data already.
	Unaffected = Outcome("unaffected")
	// NotReloading: it references the config but does not reload on it
	// (no annotation, ignored, excluded); Reason says why.
	NotReloading = Outcome("not-reloading")
)

var outcomeOrder = []Outcome{Canary, Rolls, Waits, NotifyOnly, Unaffected, NotReloading}

// rolled reports whether the change rolls a workload of outcome o, now or
// once its wait ends: the count a limit is checked against.
func (o Outcome) rolled() bool { return o == Canary || o == Rolls || o == Waits }

// WaitKind is why a workload the change rolls waits.
type WaitKind string

// The waits.
const (
	// Window: its reload window is closed (Detail: the window).
	Window = WaitKind("window")
	// Approval: its reload policy is manual.
	Approval = WaitKind("approval")
	// Breaker: the storm breaker holds it (flap hold, minimum interval).
	Breaker = WaitKind("breaker")
	// Settle: a Helm release in progress, or another wait the planner
	// gives before the write.
	Settle = WaitKind("settle")
)

// Workload is one workload in the verdict.
type Workload struct {
	workload.Ref
	Outcome Outcome `json:"outcome"`
	// Wait is why a workload that Waits waits; Detail says more (the
	// window as written, its next opening).
	Wait   WaitKind `json:"wait,omitempty"`
	Detail string   `json:"detail,omitempty"`
	// Until is when the wait ends: the window's next opening, the end of
	// a storm hold; zero when unknown (an approval).
	Until time.Time `json:"until,omitzero"`
	// Reason is the planner's reason for a workload that does not roll
	// now, or the decision's for one that does not reload.
	Reason string `json:"reason,omitempty"`
}

// KeyChange is a key whose value the write changes, and how many of the
// workloads the change rolls read it.
type KeyChange struct {
	Name   string `json:"name"`
	Change string `json:"change"` // added, removed, changed
	ReadBy int    `json:"readBy"`
}

// CanaryPlan is the canary of a canaried change: who rolls first and how
// long they bake.
type CanaryPlan struct {
	Workloads []workload.Ref `json:"workloads"`
	// Bake is how long they must stay healthy, e.g. "30s".
	Bake string `json:"bake"`
}

// Verdict is what one write of a config does.
type Verdict struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Op        Op     `json:"op"`
	// Rolls is how many workloads the change rolls, now or once their
	// wait ends: the count --max-rollouts and a guard check.
	Rolls int `json:"rolls"`
	// Canary is set when the change is canaried.
	Canary *CanaryPlan `json:"canary,omitempty"`
	// Keys are the keys the write changes (names only).
	Keys      []KeyChange `json:"keys"`
	Workloads []Workload  `json:"workloads"`
	// Summary is the verdict in one sentence, as a warning says it.
	Summary string `json:"summary"`
}

// Of is the verdict of change ch on its consumers cs at now: each
// consumer's plan after its settle window; when the change is canaried,
// the canaries chosen among the workloads it rolls, and each workload's
// plan once they passed, which tells the waits of its own (a reload
// window, an approval) that the wait for the canary hides until then.
func Of(ch Change, cs []Consumer, now time.Time) Verdict {
	ins := make([]plan.Input, len(cs))
	for i, c := range cs {
		ins[i] = inputOf(ch, c.Input, now)
	}
	plans := settledAll(ins)
	var canary *plan.Canary
	if ask, cands := asked(ch.Config, cs, plans); ask != nil {
		c := plan.StartCanary(ch.Namespace, *ask, cands, now)
		canary = &c
		passed := c
		passed.Phase = plan.CanaryPassed
		for i := range ins {
			ins[i].Canaries = map[refs.Ref]plan.Canary{ch.Config: passed}
		}
		plans = settledAll(ins)
	}
	v := Verdict{Namespace: ch.Namespace, Kind: string(ch.Config.Kind), Name: ch.Config.Name, Op: ch.Op(), Keys: []KeyChange{}, Workloads: []Workload{}}
	var readers []plan.Input
	for i, c := range cs {
		w, ok := outcome(ch.Config, c.Ref, plans[i], canary)
		if !ok {
			continue
		}
		v.Workloads = append(v.Workloads, w)
		readers = append(readers, ins[i])
		if w.Outcome.rolled() {
			v.Rolls++
		}
	}
	slices.SortFunc(v.Workloads, func(a, b Workload) int {
		return cmp.Or(cmp.Compare(slices.Index(outcomeOrder, a.Outcome), slices.Index(outcomeOrder, b.Outcome)),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	if canary != nil && len(canary.Members) > 0 {
		v.Canary = &CanaryPlan{Bake: canary.Bake.String()}
		for _, m := range canary.Members {
			v.Canary.Workloads = append(v.Canary.Workloads, m.Ref)
		}
	}
	v.Keys = keyChanges(ch, readers)
	v.Summary = summary(v)
	return v
}

// inputOf is in planned at now with ch's old data as what the workload
// applied when it shows nothing applied yet: the planner's own rule for a
// workload that existed before a change (plan.Before). A created config
// is created now; a deleted one was applied as the record would say.
func inputOf(ch Change, in plan.Input, now time.Time) plan.Input {
	in.Now = now
	in.Workload.TemplateHash = plan.TemplateHash(in.Workload.Template) // planned two to four times
	in.Sources = slices.Clone(in.Sources)
	for i := range in.Sources {
		src := &in.Sources[i]
		switch {
		case src.Ref != ch.Config:
		case !src.Found && ch.Before != nil:
			in.Workload.Annotations = recorded(in, ch.Config, ch.Before.Digest)
		case ch.Before == nil:
			src.Created = now
		case src.Before == nil:
			src.Before = &plan.Before{Digest: ch.Before.Digest, Keys: ch.Before.Keys, Seen: now}
		}
	}
	return in
}

// recorded are the workload's annotations with its applied record
// holding sum for config when neither its template nor its record shows
// what it applied: plan.Before stands for a config that exists only, and a
// delete rolls only a workload that applied the config (plan's gone).
func recorded(in plan.Input, config refs.Ref, sum string) map[string]string {
	record := plan.AppliedRecord(in.Workload.Annotations, in.Keys)
	if _, ok := in.Strategy.Applied(in.Workload.Template, config); ok || record[config.String()] != "" {
		return in.Workload.Annotations
	}
	record[config.String()] = sum
	b, err := json.Marshal(record)
	if err != nil {
		return in.Workload.Annotations
	}
	out := maps.Clone(in.Workload.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[in.Keys.Applied] = string(b)
	return out
}

// settled is the plan of in once its settle window has passed: what the
// controller does when that window closes. A wait of the storm breaker is
// kept: it is a wait of its own.
func settled(in plan.Input) plan.Plan {
	p := plan.For(in)
	if p.Wait > 0 && p.Hold == nil && !p.Spaced {
		in.Pending, in.Now = p.Pending, in.Now.Add(p.Wait)
		p = plan.For(in)
	}
	return p
}

// settledAll is the settled plan of each input: a plan costs about a
// tenth of a millisecond, and an admission review waits for all of a
// shared config's readers.
func settledAll(ins []plan.Input) []plan.Plan {
	plans := make([]plan.Plan, len(ins))
	eachAtOnce(len(ins), func(i int) { plans[i] = settled(ins[i]) })
	return plans
}

// eachAtOnce calls f for every index below n, on every CPU at once; f
// must only read what the calls share (plan.For is pure, the readers
// are caches).
func eachAtOnce(n int, f func(i int)) {
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// asked is the canary ask of config's change, if a plan asks for one, and
// the workloads the change rolls, among which the canaries are chosen (as
// change.candidates chooses them).
func asked(config refs.Ref, cs []Consumer, plans []plan.Plan) (*plan.CanaryAsk, []plan.CanaryCandidate) {
	var ask *plan.CanaryAsk
	var cands []plan.CanaryCandidate
	for i, p := range plans {
		if j := slices.IndexFunc(p.CanaryAsks, func(a plan.CanaryAsk) bool { return a.Config == config }); j >= 0 && ask == nil {
			ask = &p.CanaryAsks[j]
		}
		if p.Policy != plan.Notify && changes(p, config) {
			cands = append(cands, plan.CanaryCandidate{Ref: cs[i].Ref, First: cs[i].First, Idle: cs[i].Idle})
		}
	}
	return ask, cands
}

func changes(p plan.Plan, config refs.Ref) bool {
	return slices.ContainsFunc(p.Changes, func(c strategy.Change) bool { return c.Ref == config })
}

// outcome is what plan p of workload ref says the change of config does
// to it; false when the workload neither reads nor reloads on the config.
func outcome(config refs.Ref, ref workload.Ref, p plan.Plan, canary *plan.Canary) (Workload, bool) {
	i := slices.IndexFunc(p.Sources, func(s plan.SourcePlan) bool { return s.Ref == config })
	if i < 0 {
		return Workload{}, false
	}
	sp := p.Sources[i]
	w := Workload{Ref: ref}
	switch {
	case !sp.Decision.Reload && sp.Decision.Reason == decide.NotReferenced:
		return Workload{}, false
	case !sp.Decision.Reload:
		w.Outcome, w.Reason = NotReloading, string(sp.Decision.Reason)
	case sp.State == plan.NotReloading:
		w.Outcome, w.Reason = NotReloading, "no container to write the reload on"
	case sp.State != plan.Changed && sp.State != plan.Created && sp.State != plan.Deleted:
		w.Outcome, w.Reason = Unaffected, unaffected(sp)
	case p.WouldReload:
		w.Outcome, w.Reason = NotifyOnly, string(reason.WouldReload)
	case canary != nil && canary.IsCanary(ref):
		w.Outcome = Canary
		waiting(&w, p, config) // a canary may wait too, for its window say
	default:
		w.Outcome = Rolls
		waiting(&w, p, config)
	}
	return w, true
}

// unaffected says why a workload that reloads on the config does not
// roll for this write.
func unaffected(sp plan.SourcePlan) string {
	switch {
	case sp.State == plan.Baseline:
		return "a new config is a baseline (--reload-on-create is off)"
	case sp.State == plan.Unchanged && sp.Keys != nil:
		return "none of the keys it reloads on changed"
	case sp.State == plan.Unchanged:
		return "it runs this data already"
	case sp.State == plan.Missing:
		return "a deleted config rolls nothing (--reload-on-delete is off)"
	}
	return string(sp.State)
}

// waiting sets why the plan of w, which rolls the change of config,
// waits.
func waiting(w *Workload, p plan.Plan, config refs.Ref) {
	if n, ok := p.Verdict(); ok {
		w.Reason = string(n.Reason)
	}
	switch {
	case p.Hold != nil:
		w.Wait, w.Detail, w.Until = Breaker, "flap hold", p.Hold.Until
	case p.Spaced:
		w.Wait, w.Detail = Breaker, "the minimum rollout interval "+p.Interval.String()
	case p.Wait > 0:
		w.Wait = Settle
	case p.Awaiting != nil && slices.ContainsFunc(p.Awaiting.Changes, func(c strategy.Change) bool { return c.Ref == config }):
		w.Wait, w.Detail = Approval, "reload policy manual, from the "+p.PolicyFrom
	case p.Deferred != nil:
		w.Wait, w.Detail, w.Until = Window, p.Deferred.Window, p.Deferred.Next
		if p.Deferred.Invalid != "" {
			w.Detail = "an invalid window: " + p.Deferred.Invalid
		}
	default:
		w.Reason = ""
		return
	}
	if w.Outcome == Rolls {
		w.Outcome = Waits
	}
}

// keyChanges are the keys whose value differs between ch's old and new
// data, by name, each with how many of the workloads read it (one that
// reads the whole config, or names no key, reads every key).
func keyChanges(ch Change, readers []plan.Input) []KeyChange {
	before := map[string]string{}
	if ch.Before != nil {
		for k, d := range ch.Before.Keys.All() {
			before[k] = d
		}
	}
	out := []KeyChange{}
	after := map[string]bool{}
	var table digest.KeyTable
	if ch.After != nil {
		table = ch.After.Keys
	}
	for k, d := range table.All() {
		after[k] = true
		old, ok := before[k]
		switch {
		case !ok:
			out = append(out, KeyChange{Name: k, Change: "added"})
		case old != d:
			out = append(out, KeyChange{Name: k, Change: "changed"})
		}
	}
	for k := range before {
		if !after[k] {
			out = append(out, KeyChange{Name: k, Change: "removed"})
		}
	}
	slices.SortFunc(out, func(a, b KeyChange) int { return strings.Compare(a.Name, b.Name) })
	for i := range out {
		for _, in := range readers {
			keys, all := refs.Keys(refs.Uses(&in.Workload.Template.Spec), ch.Config)
			if all || len(keys) == 0 || slices.Contains(keys, out[i].Name) {
				out[i].ReadBy++
			}
		}
	}
	return out
}
