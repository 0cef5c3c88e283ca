package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	rsource "github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// canaryPoll is how often the canaries of the changes in progress are
// read: a halt is told within it of the canary's status showing it.
const canaryPoll = time.Second

// Canaries keeps the canaried changes (plan.Canary), one per config, and
// drives them: it chooses the canaries of a change when a workload first
// asks (StartCanary, among the workloads the change rolls), sees them
// apply it, reads their rollouts every canaryPoll (Check), continues a
// halted change an operator resumed, tells the config's Events, and
// queues the workloads that wait when the change passes or halts.
//
// Each change is kept in memory and in a record in Ripple's namespace (a
// ConfigMap labelled with the canary-record key): a restart, a failover or
// a kill -9 finds the choice of canaries, a bake or a halt where it was.
// Ripple's rights on configs stay read-only.
type Canaries struct {
	deps *Deps
	// Reader reads records from the API server (the cache holds configs
	// without their data).
	Reader client.Reader
	// Namespace is Ripple's, where the records are.
	Namespace string

	mu          sync.Mutex
	changes     map[configKey]*canaryEntry
	reconcilers map[string]*Reconciler
}

type configKey struct {
	ns  string
	ref refs.Ref
}

// canaryEntry is a change as kept: its record's name and resourceVersion
// (empty: not written yet), whether memory is ahead of it, and the
// workloads that wait for it.
type canaryEntry struct {
	c       plan.Canary
	version string
	dirty   bool
	waiting map[workload.Ref]struct{}
}

// register lets the canaries plan and queue the workloads of r's kind.
func (cs *Canaries) register(r *Reconciler) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.reconcilers == nil {
		cs.reconcilers = map[string]*Reconciler{}
	}
	cs.reconcilers[r.Kind.Name()] = r
}

// For returns the canaried changes asks name, as the workload k that
// asks sees them: a change not kept yet, or kept for other data, starts
// (its canaries chosen now). k is queued again when the change passes or
// halts.
func (cs *Canaries) For(ctx context.Context, k workload.Ref, asks []plan.CanaryAsk) (map[refs.Ref]plan.Canary, error) {
	if cs == nil {
		return nil, nil // no canaries kept: the changes stay held
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make(map[refs.Ref]plan.Canary, len(asks))
	for _, a := range asks {
		key := configKey{k.Namespace, a.Config}
		e, err := cs.load(ctx, key)
		if err != nil {
			return nil, err
		}
		if e == nil || e.c.Digest != a.Digest {
			cands, err := cs.candidates(ctx, k.Namespace, a.Config)
			if err != nil {
				return nil, err
			}
			next := &canaryEntry{c: plan.StartCanary(k.Namespace, a, cands, cs.deps.Clock.Now()), waiting: map[workload.Ref]struct{}{}}
			if e != nil {
				next.version = e.version
			}
			e, next.dirty = next, true
			cs.changes[key] = e
			cs.save(ctx, key, e)
		}
		e.waiting[k] = struct{}{}
		out[a.Config] = e.c
	}
	return out, nil
}

// load returns the change kept for key, reading its record the first
// time; nil when there is none.
func (cs *Canaries) load(ctx context.Context, key configKey) (*canaryEntry, error) {
	if cs.changes == nil {
		cs.changes = map[configKey]*canaryEntry{}
	}
	if e, ok := cs.changes[key]; ok {
		return e, nil
	}
	var cm corev1.ConfigMap
	err := cs.Reader.Get(ctx, types.NamespacedName{Namespace: cs.Namespace, Name: plan.CanaryRecordName(key.ns, key.ref)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the canary record of %s %s/%s: %w", key.ref.Kind, key.ns, key.ref.Name, err)
	}
	c, err := plan.ParseCanaryRecord(cm.Data[plan.CanaryRecordKey], key.ns, key.ref)
	if err != nil {
		// Treated as none, and overwritten by the change the asker starts.
		ctrl.LoggerFrom(ctx).Info("ignoring a canary record", "record", klog.KRef(cs.Namespace, cm.Name), "error", err.Error())
		return &canaryEntry{version: cm.ResourceVersion, waiting: map[workload.Ref]struct{}{}}, nil
	}
	e := &canaryEntry{c: c, version: cm.ResourceVersion, waiting: map[workload.Ref]struct{}{}}
	cs.changes[key] = e
	return e, nil
}

// candidates are the workloads in ns that a change of config would roll
// now, of every kind: those the plan changes (not under the notify
// policy, which rolls nothing).
func (cs *Canaries) candidates(ctx context.Context, ns string, config refs.Ref) ([]plan.CanaryCandidate, error) {
	var out []plan.CanaryCandidate
	for _, r := range cs.reconcilers {
		objs, err := r.Finder.Of(ctx, r.Kind, ns, config)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			p, in, err := r.planOf(ctx, obj)
			if err != nil || in == nil {
				continue // gone, or no template yet: not a candidate
			}
			if p.Policy != plan.Notify && slices.ContainsFunc(p.Changes, func(c strategy.Change) bool { return c.Ref == config }) {
				out = append(out, plan.CanaryCandidate{Ref: workload.RefTo(r.Kind, obj), First: plan.IsCanaryFirst(obj.GetAnnotations(), r.Settings.Keys)})
			}
		}
	}
	return out, nil
}

// applied records that canary k rolled the changes of p (after its
// write), or shows them applied (its plan finds them unchanged, at the
// data of the change: a restart came between its write and the record).
func (cs *Canaries) applied(ctx context.Context, k workload.Ref, in plan.Input, p plan.Plan, wrote bool) {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.changes) == 0 {
		return
	}
	now := cs.deps.Clock.Now()
	for i, sp := range p.Sources {
		key := configKey{k.Namespace, sp.Ref}
		e, ok := cs.changes[key]
		if !ok || e.c.Phase != plan.CanaryRolling || in.Sources[i].Digest != e.c.Digest {
			continue
		}
		rolled := wrote && slices.ContainsFunc(p.Changes, func(c strategy.Change) bool { return c.Ref == sp.Ref })
		if !rolled && sp.State != plan.Unchanged {
			continue
		}
		if next, changed := e.c.Applied(k, now); changed {
			e.c, e.dirty = next, true
			cs.save(ctx, key, e)
		}
	}
}

// Start reads the canaries of the changes in progress every canaryPoll,
// until ctx ends. It runs on the leader only.
func (cs *Canaries) Start(ctx context.Context) error {
	t := time.NewTicker(canaryPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			cs.check(ctx)
		}
	}
}

// check moves every change in progress on: its canaries read, a halted
// one's resume annotation read, a record not written yet written again.
func (cs *Canaries) check(ctx context.Context) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	now := cs.deps.Clock.Now()
	for key, e := range cs.changes {
		if e.dirty {
			cs.save(ctx, key, e)
		}
		var next plan.Canary
		var changed bool
		switch e.c.Phase {
		case plan.CanaryRolling, plan.CanaryBaking:
			next, changed = e.c.Check(cs.health(ctx, e.c), cs.deps.Settings.Rollouts.Timeout, now)
		case plan.CanaryHalted:
			if cfg := cs.config(ctx, key); cfg != nil && e.c.Resumes(cfg.GetAnnotations()[cs.deps.Settings.Keys.CanaryResume]) {
				next, changed = e.c.Resume(now)
			}
		}
		if changed {
			e.c, e.dirty = next, true
			cs.save(ctx, key, e)
			cs.tell(ctx, key, e)
		}
	}
}

// health reads the rollouts of c's canaries that applied its change. A
// canary deleted meanwhile, before or after it applied the change, has
// stalled: the change does not pass on a workload that is gone.
func (cs *Canaries) health(ctx context.Context, c plan.Canary) map[workload.Ref]rollout.Status {
	out := map[workload.Ref]rollout.Status{}
	for _, m := range c.Members {
		r, ok := cs.reconcilers[m.Ref.Kind]
		if !ok {
			continue
		}
		obj := r.Kind.New()
		err := cs.deps.Client.Get(ctx, types.NamespacedName{Namespace: m.Ref.Namespace, Name: m.Ref.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			out[m.Ref] = rollout.Status{State: rollout.Stalled, Reason: "the workload was deleted"}
		case err == nil && !m.Applied.IsZero():
			out[m.Ref], _ = cs.deps.restartStatus(ctx, r.Kind, obj)
		}
	}
	return out
}

// config is the config of key from the cache; nil when gone.
func (cs *Canaries) config(ctx context.Context, key configKey) client.Object {
	obj := rsource.Object(key.ref.Kind)
	if obj == nil || cs.deps.Client.Get(ctx, types.NamespacedName{Namespace: key.ns, Name: key.ref.Name}, obj) != nil {
		return nil
	}
	return obj
}

// tell tells the config's Event of a change that passed or halted (with
// the alert and ripple_changes_halted_total) and queues the workloads that
// wait for it.
func (cs *Canaries) tell(ctx context.Context, key configKey, e *canaryEntry) {
	held := 0
	for k := range e.waiting {
		if !e.c.IsCanary(k) {
			held++
		}
	}
	n, ok := plan.CanaryOutcome(e.c, held)
	if !ok {
		return
	}
	if e.c.Phase == plan.CanaryHalted {
		cs.deps.Metrics.Halted(string(key.ref.Kind))
	}
	if cfg := cs.config(ctx, key); cfg != nil {
		cs.deps.emit(ctx, string(key.ref.Kind), cfg, []plan.Notice{n})
	}
	for k := range e.waiting {
		if r, ok := cs.reconcilers[k.Kind]; ok {
			r.enqueue(types.NamespacedName{Namespace: k.Namespace, Name: k.Name})
		}
	}
}

// save writes e's record, when memory is ahead of it. A failed write is
// logged and tried again on the next check: memory holds the change
// meanwhile.
func (cs *Canaries) save(ctx context.Context, key configKey, e *canaryEntry) {
	if !e.dirty {
		return
	}
	data, err := json.Marshal(e.c)
	if err != nil {
		return
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: cs.Namespace, Name: plan.CanaryRecordName(key.ns, key.ref), ResourceVersion: e.version,
		Labels:      map[string]string{cs.deps.Settings.Keys.CanaryRecord: "true"},
		Annotations: map[string]string{cs.deps.Settings.Keys.CanaryRecord: key.ns + "/" + key.ref.String()},
	}, Data: map[string]string{plan.CanaryRecordKey: string(data)}}
	if e.version == "" {
		err = cs.deps.Client.Create(ctx, cm)
	} else {
		err = cs.deps.Client.Update(ctx, cm)
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		var cur corev1.ConfigMap
		if cs.Reader.Get(ctx, client.ObjectKeyFromObject(cm), &cur) == nil {
			e.version = cur.ResourceVersion // ours to overwrite: the leader keeps the change
		}
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "writing a canary record; trying again", "record", klog.KRef(cs.Namespace, cm.Name))
		return
	}
	e.version, e.dirty = cm.ResourceVersion, false
}

// planOf plans obj as a reconcile would, without acting: nil input when
// it has no pod template.
func (r *Reconciler) planOf(ctx context.Context, obj client.Object) (plan.Plan, *plan.Input, error) {
	tpl, err := workload.Template(ctx, r.Client, r.Kind, obj)
	if err != nil || tpl == nil {
		return plan.Plan{}, nil, err
	}
	g := gather.Gatherer{Reader: r.Client, Settings: r.Settings, Rotations: r.Rotations, Priors: r.Priors}
	in, err := g.Input(ctx, r.Kind, obj, tpl)
	if err != nil {
		return plan.Plan{}, nil, err
	}
	in.Memory, in.Now = r.Memory.Load(workload.RefTo(r.Kind, obj)), r.Clock.Now()
	return plan.For(in), &in, nil
}
