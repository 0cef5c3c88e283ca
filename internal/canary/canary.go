// Package canary drives the canaried config changes (plan.Canary): the
// planner decides what a change's canaries are and when it passes or
// halts; this package keeps each change, in memory and in a record in
// Ripple's namespace, reads the canaries' rollouts, and tells the config's
// Events. It sees the workloads through a Fleet, which the controller
// implements.
package canary

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
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	rsource "github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Fleet is the workloads of every kind as the canaries see them.
type Fleet interface {
	// Candidates are the workloads in ns that a change of config would
	// roll now (plan.CanaryCandidate).
	Candidates(ctx context.Context, ns string, config refs.Ref) ([]plan.CanaryCandidate, error)
	// Status is how the rollout of workload k stands; gone is set when it
	// no longer exists.
	Status(ctx context.Context, k workload.Ref) (st rollout.Status, gone bool, err error)
	// Tell tells notice n about obj, a config of kind (an Event, an
	// alert).
	Tell(ctx context.Context, kind refs.Kind, obj client.Object, n plan.Notice)
	// Enqueue queues workload k for a reconcile.
	Enqueue(k workload.Ref)
}

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
	Fleet Fleet
	// Client reads configs from the cache and writes the records.
	Client client.Client
	// Reader reads records from the API server (the cache holds configs
	// without their data).
	Reader client.Reader
	// Namespace is Ripple's, where the records are.
	Namespace string
	Settings  plan.Settings
	Clock     clock.PassiveClock
	Metrics   *metrics.Metrics

	mu      sync.Mutex
	changes map[configKey]*canaryEntry
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
			cands, err := cs.Fleet.Candidates(ctx, k.Namespace, a.Config)
			if err != nil {
				return nil, err
			}
			next := &canaryEntry{c: plan.StartCanary(k.Namespace, a, cands, cs.Clock.Now()), waiting: map[workload.Ref]struct{}{}}
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

// Applied records that canary k rolled the changes of p (after its
// write), or shows them applied (its plan finds them unchanged, at the
// data of the change: a restart came between its write and the record).
func (cs *Canaries) Applied(ctx context.Context, k workload.Ref, in plan.Input, p plan.Plan, wrote bool) {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.changes) == 0 {
		return
	}
	now := cs.Clock.Now()
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
			cs.Check(ctx)
		}
	}
}

// Check moves every change in progress on: its canaries read, a halted
// one's resume annotation read, a record not written yet written again.
func (cs *Canaries) Check(ctx context.Context) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	now := cs.Clock.Now()
	for key, e := range cs.changes {
		if e.dirty {
			cs.save(ctx, key, e)
		}
		var next plan.Canary
		var changed bool
		switch e.c.Phase {
		case plan.CanaryRolling, plan.CanaryBaking:
			next, changed = e.c.Check(cs.health(ctx, e.c), cs.Settings.Rollouts.Timeout, now)
		case plan.CanaryHalted:
			if cfg := cs.config(ctx, key); cfg != nil && e.c.Resumes(cfg.GetAnnotations()[cs.Settings.Keys.CanaryResume]) {
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
		switch st, gone, err := cs.Fleet.Status(ctx, m.Ref); {
		case err != nil:
			ctrl.LoggerFrom(ctx).V(1).Info("reading a canary's rollout", "kind", m.Ref.Kind, "workload", klog.KRef(m.Ref.Namespace, m.Ref.Name), "error", err.Error())
		case gone:
			out[m.Ref] = rollout.Status{State: rollout.Stalled, Reason: "the workload was deleted"}
		case !m.Applied.IsZero():
			out[m.Ref] = st
		}
	}
	return out
}

// config is the config of key from the cache; nil when gone.
func (cs *Canaries) config(ctx context.Context, key configKey) client.Object {
	obj := rsource.Object(key.ref.Kind)
	if obj == nil || cs.Client.Get(ctx, types.NamespacedName{Namespace: key.ns, Name: key.ref.Name}, obj) != nil {
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
		cs.Metrics.Halted(string(key.ref.Kind))
	}
	if cfg := cs.config(ctx, key); cfg != nil {
		cs.Fleet.Tell(ctx, key.ref.Kind, cfg, n)
	}
	for k := range e.waiting {
		cs.Fleet.Enqueue(k)
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
		Labels:      map[string]string{cs.Settings.Keys.CanaryRecord: "true"},
		Annotations: map[string]string{cs.Settings.Keys.CanaryRecord: key.ns + "/" + key.ref.String()},
	}, Data: map[string]string{plan.CanaryRecordKey: string(data)}}
	if e.version == "" {
		err = cs.Client.Create(ctx, cm)
	} else {
		err = cs.Client.Update(ctx, cm)
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

// Of is the canaried change of config in ns kept for the data digest, if
// any: the change controller shows it on the change's ConfigRollout.
func (cs *Canaries) Of(ns string, config refs.Ref, digest string) (plan.Canary, bool) {
	if cs == nil {
		return plan.Canary{}, false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	e, ok := cs.changes[configKey{ns, config}]
	if !ok || e.c.Digest != digest || e.c.Phase == "" {
		return plan.Canary{}, false
	}
	return e.c, true
}
