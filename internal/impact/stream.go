package impact

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
)

// chunk is how many readers a verdict gathers and plans at once: their
// inputs and plans, a few KB each, are garbage once each is placed, so
// that a verdict of a config read by 5,000 workloads holds a chunk's
// worth of them, not 5,000 (an admission webhook makes two at once, and
// anyone who reaches its port may ask for them).
var chunk = 256

// outcome is one reader's place in a streamed verdict: a few hundred
// bytes (not its input nor its plan).
type outcome struct {
	// w is its place, ok false when it does not take part: first by its
	// plan before any canary passed, then once they passed (canaried).
	w, canaried     Workload
	ok, canariedOK  bool
	consumer, again bool
	reads           reads
}

// stream is Of(ch, the consumers of objs gathered with g, now), made a
// chunk of objs at a time: the same verdict, holding of each reader only
// its place. A canaried change gathers and plans its readers twice (Of
// plans them twice too), the second time with the canaries passed.
func (a Assessor) stream(ctx context.Context, ch Change, g gather.Gatherer, objs []found, now time.Time) (Verdict, error) {
	outs := make([]outcome, len(objs))
	var ask *canary.Ask
	var cands []canary.Candidate
	err := a.plannedChunks(ctx, ch, g, objs, now, nil, func(i int, c Consumer, in plan.Input, p plan.Plan) {
		if j := slices.IndexFunc(p.CanaryAsks, func(a canary.Ask) bool { return a.Config == ch.Config }); j >= 0 && ask == nil {
			asked := p.CanaryAsks[j]
			ask = &asked
		}
		if p.Policy != plan.Notify && changes(p, ch.Config) {
			cands = append(cands, canary.Candidate{Ref: c.Ref, First: c.First, Idle: c.Idle})
		}
		w, ok := Place(ch.Config, c, in.DryRun, p)
		outs[i] = outcome{w: w, ok: ok, consumer: true, reads: readsOf(in, ch.Config)}
	})
	if err != nil {
		return Verdict{}, err
	}
	var chosen *canary.State
	if ask != nil {
		c := canary.Start(ch.Namespace, *ask, cands, now)
		chosen = &c
		passed := c
		passed.Phase = canary.Passed
		err := a.plannedChunks(ctx, ch, g, objs, now, &passed, func(i int, c Consumer, in plan.Input, p plan.Plan) {
			w, ok := Place(ch.Config, c, in.DryRun, p)
			if ok {
				w = canariedOver(w, c.Ref, outs[i].w, outs[i].ok, *chosen)
			}
			outs[i].canaried, outs[i].canariedOK, outs[i].again = w, ok, true
			outs[i].reads = readsOf(in, ch.Config)
		})
		if err != nil {
			return Verdict{}, err
		}
	}
	var placed []Workload
	var readers []reads
	for _, o := range outs {
		w, ok := o.w, o.ok && o.consumer
		if chosen != nil {
			w, ok = o.canaried, o.canariedOK && o.again
		}
		if ok {
			placed = append(placed, w)
			readers = append(readers, o.reads)
		}
	}
	return verdictOf(ch, placed, readers, chosen), nil
}

// plannedChunks gathers the consumers of objs with g and plans them as
// Of does (with the canaries passed when passed is set), a chunk at a
// time, and calls each with every consumer's index in objs, the
// consumer, its input and its plan, in objs' order.
func (a Assessor) plannedChunks(ctx context.Context, ch Change, g gather.Gatherer, objs []found, now time.Time, passed *canary.State,
	each func(i int, c Consumer, in plan.Input, p plan.Plan)) error {
	for lo := 0; lo < len(objs); lo += chunk {
		part := objs[lo:min(lo+chunk, len(objs))]
		cs := make([]*Consumer, len(part))
		errs := make([]error, len(part))
		err := eachAtOnce(ctx, len(part), func(i int) { cs[i], errs[i] = a.consumer(ctx, g, part[i].kind, part[i].obj) })
		if err := errors.Join(append(errs, err)...); err != nil {
			return err
		}
		at, ins := make([]int, 0, len(part)), make([]plan.Input, 0, len(part))
		for i, c := range cs {
			if c == nil {
				continue
			}
			in := inputOf(ch, c.Input, now)
			if passed != nil {
				in.Canaries = map[refs.Ref]canary.State{ch.Config: *passed}
			}
			at, ins = append(at, i), append(ins, in)
		}
		plans, err := settledAll(ctx, ins, now)
		if err != nil {
			return err
		}
		for k, i := range at {
			each(lo+i, *cs[i], ins[k], plans[k])
		}
	}
	return nil
}
