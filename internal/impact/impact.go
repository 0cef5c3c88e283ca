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
// planned by plan.For, after its settle window (standing.Settled), with
// the canaries chosen as the change controller chooses them
// (canary.Start); where each workload stands is standing.Of's word,
// as `ripple explain` and a ConfigRollout say it. Nothing here decides a
// reload. The verdict holds key names only, never a value nor a digest.
package impact

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/standing"
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
	// Zero is set when it is scaled to zero (rollout.ScaledToZero).
	Zero bool
	// Rollout is how its rollout stands; nil when unknown (manifest files
	// hold no status), taken as complete.
	Rollout *rollout.Status
}

// order is the order a verdict lists its workloads in, after the
// canaries: those the change rolls first.
var order = []standing.State{
	standing.Pending, standing.Waiting, standing.Halted, standing.NotifyOnly, standing.Rolling,
	standing.Stalled, standing.Complete, standing.Stale, standing.Excluded,
}

// Workload is one workload in the verdict: where the write leaves it once
// its settle window passed (standing.Of), as `ripple explain` and the
// change's ConfigRollout say it.
type Workload struct {
	workload.Ref
	State  standing.State `json:"state"`
	Reason reason.Reason  `json:"reason"`
	// Canary is set on a canary of the change: it rolls first.
	Canary bool `json:"canary,omitempty"`
	// Detail says more of the reason (the window as written, the keys).
	Detail string `json:"detail,omitempty"`
	// Until is when a wait ends: the window's next opening, the end of a
	// storm hold; zero when unknown (an approval).
	Until time.Time `json:"until,omitzero"`
}

// rolls reports whether the change rolls the workload, now or once its
// wait ends: the count a limit is checked against.
func (w Workload) rolls() bool { return w.State == standing.Pending || w.State == standing.Waiting }

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
//
// It stops planning when ctx ends, with ctx's error: a verdict nobody
// waits for any more must not keep every CPU busy.
func Of(ctx context.Context, ch Change, cs []Consumer, now time.Time) (Verdict, error) {
	ins := make([]plan.Input, len(cs))
	for i, c := range cs {
		ins[i] = inputOf(ch, c.Input, now)
	}
	plans, err := settledAll(ctx, ins, now)
	if err != nil {
		return Verdict{}, err
	}
	held := plans
	var chosen *canary.State
	if ask, cands := asked(ch.Config, cs, plans); ask != nil {
		c := canary.Start(ch.Namespace, *ask, cands, now)
		chosen = &c
		passed := c
		passed.Phase = canary.Passed
		for i := range ins {
			ins[i].Canaries = map[refs.Ref]canary.State{ch.Config: passed}
		}
		if plans, err = settledAll(ctx, ins, now); err != nil {
			return Verdict{}, err
		}
	}
	var placed []Workload
	var readers []reads
	for i, c := range cs {
		w, ok := Place(ch.Config, c, ins[i].DryRun, plans[i])
		if !ok {
			continue
		}
		if chosen != nil {
			w = canaried(w, ch.Config, c, ins[i].DryRun, held[i], *chosen)
		}
		placed = append(placed, w)
		readers = append(readers, readsOf(ins[i], ch.Config))
	}
	return verdictOf(ch, placed, readers, chosen), nil
}

// verdictOf is the verdict of ch that places its workloads so, read as
// readers say, with the canaries chosen (nil when not canaried).
func verdictOf(ch Change, placed []Workload, readers []reads, chosen *canary.State) Verdict {
	v := Verdict{Namespace: ch.Namespace, Kind: string(ch.Config.Kind), Name: ch.Config.Name, Op: ch.Op(), Keys: []KeyChange{}, Workloads: []Workload{}}
	for _, w := range placed {
		v.Workloads = append(v.Workloads, w)
		if w.rolls() {
			v.Rolls++
		}
	}
	slices.SortFunc(v.Workloads, func(a, b Workload) int {
		return cmp.Or(-cmpBool(a.Canary, b.Canary), cmp.Compare(slices.Index(order, a.State), slices.Index(order, b.State)),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	if chosen != nil && len(chosen.Members) > 0 {
		v.Canary = &CanaryPlan{Bake: chosen.Bake.String()}
		for _, m := range chosen.Members {
			v.Canary.Workloads = append(v.Canary.Workloads, m.Ref)
		}
	}
	v.Keys = keyChanges(ch, readers)
	v.Summary = summary(v)
	return v
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
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
	// Planned two to four times, at other times, settle schedules and
	// canaries only: its sources are decided once.
	return plan.Sourced(in)
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

// settledAll is the plan of each input once its settle window, opened
// by the write at now, has passed (standing.Settled: the one rule explain
// rebuilds the window by too): a plan costs about a tenth of a
// millisecond, and an admission review waits for all of a shared
// config's readers.
func settledAll(ctx context.Context, ins []plan.Input, now time.Time) ([]plan.Plan, error) {
	written := func(refs.Ref) time.Time { return now }
	plans := make([]plan.Plan, len(ins))
	err := eachAtOnce(ctx, len(ins), func(i int) {
		plans[i] = standing.Settled(ins[i], written)
		// A verdict reads no plan's write: its copy of the pod template
		// would only stay in memory with every other reader's.
		plans[i].Update = workload.Update{}
	})
	return plans, err
}

// eachAtOnce calls f for every index below n, on every CPU at once, until
// ctx ends (then it returns ctx's error, some indexes not called); f must
// only read what the calls share (plan.For is pure, the readers are
// caches).
func eachAtOnce(ctx context.Context, n int, f func(i int)) error {
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// asked is the canary ask of config's change, if a plan asks for one, and
// the workloads the change rolls, among which the canaries are chosen (as
// change.candidates chooses them).
func asked(config refs.Ref, cs []Consumer, plans []plan.Plan) (*canary.Ask, []canary.Candidate) {
	var ask *canary.Ask
	var cands []canary.Candidate
	for i, p := range plans {
		if j := slices.IndexFunc(p.CanaryAsks, func(a canary.Ask) bool { return a.Config == config }); j >= 0 && ask == nil {
			ask = &p.CanaryAsks[j]
		}
		if p.Policy != plan.Notify && changes(p, config) {
			cands = append(cands, canary.Candidate{Ref: cs[i].Ref, First: cs[i].First, Idle: cs[i].Idle})
		}
	}
	return ask, cands
}

func changes(p plan.Plan, config refs.Ref) bool {
	return slices.ContainsFunc(p.Changes, func(c strategy.Change) bool { return c.Ref == config })
}

// Place is where plan p of consumer c, with --dry-run dryRun, leaves it
// in the change of config (standing.Of), with what more there is to say;
// false when the workload neither reads nor reloads on the config.
func Place(config refs.Ref, c Consumer, dryRun bool, p plan.Plan) (Workload, bool) {
	f, ok := standing.FactsOf(p, config, dryRun)
	if !ok {
		return Workload{}, false
	}
	f.Rollout, f.Zero = rollout.Status{State: rollout.Complete}, c.Zero
	if c.Rollout != nil {
		f.Rollout = *c.Rollout
	}
	s, ok := standing.Of(f)
	if !ok {
		return Workload{}, false
	}
	w := Workload{Ref: c.Ref, State: s.State, Reason: s.Reason}
	w.Detail, w.Until = detail(w, f.Source, p)
	return w, true
}

// canaried is w in a canaried change: a canary rolls first; another
// workload that nothing of its own holds waits for the canaries, as its
// plan before they passed (held) says.
func canaried(w Workload, config refs.Ref, c Consumer, dryRun bool, held plan.Plan, chosen canary.State) Workload {
	h, ok := Place(config, c, dryRun, held)
	return canariedOver(w, c.Ref, h, ok, chosen)
}

// canariedOver is canaried with the workload's place before the canaries
// passed (h; ok false when it had none) made already.
func canariedOver(w Workload, ref workload.Ref, h Workload, ok bool, chosen canary.State) Workload {
	w.Canary = chosen.IsCanary(ref)
	switch {
	case w.Canary && w.State == standing.Pending:
		w.Detail = "the canary, rolls first and bakes " + chosen.Bake.String()
	case !w.Canary && w.Reason == reason.ReloadDue && ok:
		w = h
	}
	if w.Reason == reason.WaitingForCanary {
		names := make([]string, len(chosen.Members))
		for i, m := range chosen.Members {
			names[i] = m.Ref.Name
		}
		w.Detail = "the canary " + strings.Join(names, ", ")
	}
	return w
}

// detail says more of why w, whose plan of the config is sp in plan p,
// stands where it does, and until when.
func detail(w Workload, sp plan.SourcePlan, p plan.Plan) (string, time.Time) {
	switch {
	case w.Reason == reason.ReloadHeld && p.Hold != nil:
		return "flap hold", p.Hold.Until
	case w.Reason == reason.SettleWindow && p.Spaced:
		return "the minimum rollout interval " + p.Interval.String(), time.Time{}
	case w.Reason == reason.ReloadPending:
		return "reload policy manual, from the " + p.PolicyFrom, time.Time{}
	case w.Reason == reason.ReloadDeferred && p.Deferred != nil && p.Deferred.Invalid != "":
		return "an invalid window: " + p.Deferred.Invalid, p.Deferred.Next
	case w.Reason == reason.ReloadDeferred && p.Deferred != nil:
		return "the window " + p.Deferred.Window, p.Deferred.Next
	case sp.State == plan.NotReloading && sp.Decision.Reload:
		return "no container to write the reload on", time.Time{}
	case w.State == standing.Complete:
		return unaffected(sp), time.Time{}
	}
	return "", time.Time{}
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
	return ""
}

// keyChanges are the keys whose value differs between ch's old and new
// data, by name, each with how many of the workloads read it (one that
// reads the whole config, or names no key, reads every key).
func keyChanges(ch Change, readers []reads) []KeyChange {
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
		for _, r := range readers {
			if r.all || len(r.keys) == 0 || slices.Contains(r.keys, out[i].Name) {
				out[i].ReadBy++
			}
		}
	}
	return out
}

// reads are the keys of a config a workload reads: all, or these (none
// named is all too).
type reads struct {
	keys []string
	all  bool
}

// readsOf are the keys of config that the workload of in reads.
func readsOf(in plan.Input, config refs.Ref) reads {
	keys, all := refs.Keys(plan.Uses(in.Workload), config)
	return reads{keys: keys, all: all}
}
