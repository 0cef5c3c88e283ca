// Package controller connects Ripple's pure decision packages to
// controller-runtime. The reconciled object is the workload: ConfigMap and
// Secret events are mapped to the workloads that use them through a cache
// field index, and each reconcile reads the world and converges:
//
//	gather (cache reads) -> decide (pure) -> settle -> act (one patch) -> record (event, log)
//
// What has been applied is read back from the workload itself (the
// strategy's env var or annotation on the pod template, and the applied
// record on the workload metadata for configs that were never rolled), so
// restarts, failovers and relists roll nothing, and changes made while
// Ripple was down are applied once when it returns.
package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Event reasons.
const (
	ReasonReloaded          = "Reloaded"
	ReasonReloadFailed      = "ReloadFailed"
	ReasonInvalidAnnotation = "InvalidAnnotation"
	ReasonReloadSkipped     = "ReloadSkipped"
)

// maxSettleFactor bounds the settle window: a workload whose configs keep
// changing is still rolled after this many windows from the first change.
const maxSettleFactor = 10

// conflictRetry is how soon a reconcile whose patch met a newer object
// runs again; the cache is then usually current.
const conflictRetry = 100 * time.Millisecond

// Reconciler reconciles one workload kind.
type Reconciler struct {
	Client   client.Client
	Kind     workload.Kind
	Config   config.Config
	Recorder events.EventRecorder
	Metrics  *metrics.Metrics
	// Alert, when set, is told of every rollout.
	Alert func(notify.Reload)
	Clock clock.PassiveClock
	// csi is shared by the reconcilers of every kind; nil without
	// --enable-csi-integration.
	csi *csiState
	// Started is when this Ripple started watching: with --reload-on-create,
	// configs created before it are not "created" unless
	// --sync-after-restart is set.
	Started time.Time

	mu sync.Mutex
	// pending holds, per workload, the change set waiting for its settle
	// window to close. It is only a schedule: losing it on restart delays
	// a rollout by one window and loses nothing.
	pending map[types.NamespacedName]pendingChange
}

type pendingChange struct {
	changes     string // identity of the change set
	first, last time.Time
}

// plan is what a reconcile found: the configs that reload the workload and
// those of them whose new digest is not yet applied.
type plan struct {
	// ambiguous configs share where the strategy records them with another
	// (colliding env var names): only the applied record tells their state.
	ambiguous map[refs.Ref]bool
	changes   []strategy.Change
	tracked   map[refs.Ref]string // digest of every config that reloads the workload
	missing   map[refs.Ref]string // last applied digest of deleted configs whose delete is not rolled
	warnings  []string
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	began := r.Clock.Now()
	res, out, err := r.reconcile(ctx, req)
	if err != nil {
		out.result = metrics.ResultError
	}
	if out.result == metrics.ResultError || out.retry {
		r.Metrics.Retried()
	}
	r.Metrics.Reconciled(out.result, out.skip, r.Clock.Since(began))
	return res, err
}

// outcome is how a reconcile ended, for the metrics.
type outcome struct {
	result, skip string
	retry        bool
}

var skipped = outcome{result: metrics.ResultSkipped}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, outcome, error) {
	log := ctrl.LoggerFrom(ctx)
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		r.forget(req.NamespacedName)
		if f, ok := r.Kind.(workload.Finisher); ok && apierrors.IsNotFound(err) {
			_, err = f.Finish(ctx, r.Client, req.NamespacedName, nil)
			return ctrl.Result{}, skipped, err
		}
		return ctrl.Result{}, skipped, client.IgnoreNotFound(err)
	}
	if f, ok := r.Kind.(workload.Finisher); ok && obj.GetDeletionTimestamp() == nil {
		// An interrupted reload is finished before anything new is
		// decided; its own write brings the next reconcile.
		if did, err := f.Finish(ctx, r.Client, req.NamespacedName, obj); did || err != nil {
			return ctrl.Result{}, skipped, err
		}
	}
	tpl := r.Kind.PodTemplate(obj)
	if obj.GetDeletionTimestamp() != nil || tpl == nil {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, skipped, nil
	}
	if in, err := r.inScope(ctx, obj.GetNamespace()); err != nil || !in {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, outcome{result: metrics.ResultSkipped, skip: metrics.SkipIgnoredNotSelected}, err
	}

	p, err := r.gather(ctx, obj, tpl)
	if err != nil {
		return ctrl.Result{}, outcome{}, err
	}
	window, warning := r.settleWindow(obj)
	if warning != "" {
		p.warnings = append(p.warnings, warning)
	}
	if c, ok := r.Kind.(workload.Checker); ok {
		p.warnings = append(p.warnings, c.Check(obj)...)
	}
	pause, warning := r.pausePeriod(obj)
	if warning != "" {
		p.warnings = append(p.warnings, warning)
	}
	for _, w := range p.warnings {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonInvalidAnnotation, "Reload", "%s", w)
	}

	seen := r.Clock.Now()
	if len(p.changes) > 0 {
		var wait time.Duration
		if wait, seen = r.settle(req.NamespacedName, p.changes, window); wait > 0 {
			log.V(1).Info("waiting for the settle window", "configs", changeNames(p.changes), "wait", wait)
			return ctrl.Result{RequeueAfter: wait}, skipped, nil
		}
	} else {
		r.forget(req.NamespacedName)
	}

	var update workload.Update
	newTpl := tpl
	if len(p.changes) > 0 {
		newTpl = tpl.DeepCopy()
		r.Config.Strategy.Apply(newTpl, p.changes, r.Clock.Now())
		update.Template = newTpl
	}
	if rec, changed := r.record(obj, newTpl, p); changed {
		update.Annotations = map[string]*string{r.Config.Keys.Applied: rec}
	}
	if update.Template != nil && equality.Semantic.DeepEqual(tpl, update.Template) {
		// e.g. the delete of a config whose env var was never written
		update.Template = nil
	}
	resume := r.pause(obj, &update, pause)
	if update.Template == nil && update.Annotations == nil && update.Paused == nil {
		return ctrl.Result{RequeueAfter: resume}, outcome{result: metrics.ResultSkipped, skip: metrics.SkipStrategyNotUpdated}, nil
	}

	res, err := r.Kind.Write(ctx, r.Client, obj, update)
	if apierrors.IsConflict(err) {
		log.V(1).Info("workload changed since it was read; retrying")
		return ctrl.Result{RequeueAfter: conflictRetry}, outcome{result: metrics.ResultSkipped, retry: true}, nil
	}
	if update.Template != nil && res.Skipped == "" {
		r.Metrics.Reloaded(r.Kind.Name(), obj.GetNamespace(), err, r.Clock.Since(seen), len(p.changes))
	}
	if err != nil {
		if update.Template != nil {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonReloadFailed, "Reload",
				"Reload for changes in %s failed: %v", strings.Join(changeNames(p.changes), ", "), err)
		}
		return ctrl.Result{}, outcome{}, fmt.Errorf("writing %s %s: %w", r.Kind.Name(), req.NamespacedName, err)
	}
	if update.Paused != nil {
		log.Info(map[bool]string{true: "paused", false: "resumed"}[*update.Paused], "workload", klog.KObj(obj), "kind", r.Kind.Name())
	}
	if update.Template == nil {
		log.V(1).Info("recorded the applied configs", "configs", len(p.tracked))
		return ctrl.Result{RequeueAfter: resume}, outcome{result: metrics.ResultSkipped, skip: metrics.SkipStrategyNotUpdated}, nil
	}
	r.forget(req.NamespacedName)
	names := changeNames(p.changes)
	if res.Skipped != "" {
		log.Info("reload skipped", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", names, "reason", res.Skipped)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReloadSkipped, "Reload",
			"Changes in %s not reloaded: %s", strings.Join(names, ", "), res.Skipped)
		return ctrl.Result{}, outcome{result: metrics.ResultSkipped, skip: metrics.SkipStrategyNotUpdated}, nil
	}
	log.Info("reloaded", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", names, "strategy", r.Config.Strategy.Name())
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReloaded, "Reload",
		"Reloaded for changes in %s (strategy %s)", strings.Join(names, ", "), r.Config.Strategy.Name())
	if r.Alert != nil {
		alert := notify.Reload{Namespace: obj.GetNamespace(), Kind: r.Kind.Name(), Workload: obj.GetName()}
		for _, c := range p.changes {
			alert.Sources = append(alert.Sources, notify.Source{Type: c.Ref.Kind.Type(), Name: c.Ref.Name})
		}
		r.Alert(alert) // queued: a slow endpoint never holds a reload up
	}
	return ctrl.Result{RequeueAfter: resume}, outcome{result: metrics.ResultSuccess}, nil
}

// gather finds every config that reloads obj and which of them changed.
func (r *Reconciler) gather(ctx context.Context, obj client.Object, tpl *corev1.PodTemplateSpec) (plan, error) {
	p := plan{tracked: map[refs.Ref]string{}, missing: map[refs.Ref]string{}, ambiguous: map[refs.Ref]bool{}}
	applied := r.appliedRecord(obj)
	referenced := refs.All(&tpl.Spec)
	policies := make([]annotation.Policy, len(r.Config.Kinds))
	names := make([][]string, len(r.Config.Kinds))
	byKey := map[string][]refs.Ref{}
	for i, kind := range r.Config.Kinds {
		if kind == refs.SecretProviderClass && (r.csi == nil || !r.csi.served.Load()) {
			continue // the CSI driver's API is not served (yet)
		}
		policies[i] = annotation.Parse(r.Config.Keys, kind, obj.GetAnnotations(), tpl.Annotations)
		for _, err := range policies[i].Invalid {
			p.warnings = append(p.warnings, err.Error())
		}
		var err error
		if names[i], err = r.candidates(ctx, kind, obj.GetNamespace(), referenced, policies[i], applied); err != nil {
			return p, err
		}
		for _, name := range names[i] {
			ref := refs.Ref{Kind: kind, Name: name}
			key := r.Config.Strategy.Slot(ref)
			byKey[key] = append(byKey[key], ref)
		}
	}
	// A kind whose reload leaves its own template alone shows nothing
	// there: its applied record says it all.
	keeps := r.Kind.KeepsTemplate(obj)
	for _, rs := range byKey {
		for _, ref := range rs {
			p.ambiguous[ref] = len(rs) > 1 || keeps
		}
	}
	for i, kind := range r.Config.Kinds {
		policy := policies[i]
		for _, name := range names[i] {
			ref := refs.Ref{Kind: kind, Name: name}
			cfg := ConfigObject(kind)
			err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, cfg)
			deleted := apierrors.IsNotFound(err)
			if err != nil && !deleted {
				return p, err
			}
			container, isRef := refs.Target(&tpl.Spec, ref)
			d := decide.Decide(decide.Input{
				Keys:          r.Config.Keys,
				Policy:        policy,
				Config:        decide.Config{Ref: ref, Annotations: cfg.GetAnnotations()},
				Referenced:    isRef,
				AutoReloadAll: r.Config.AutoReloadAll,
			})
			if !d.Reload || container == "" {
				continue
			}
			var last string
			var ok bool
			if !p.ambiguous[ref] {
				last, ok = r.Config.Strategy.Applied(tpl, ref)
			}
			if !ok {
				last, ok = applied[ref.String()]
			}
			// A delete already rolled leaves no state to compare with.
			ok = ok && last != digest.DeleteMarker
			change := strategy.Change{Ref: ref, Namespace: obj.GetNamespace(), Container: container}
			if deleted && kind == refs.SecretProviderClass {
				continue // the driver keeps serving what it mounted
			}
			if deleted {
				switch {
				case ok && r.Config.ReloadOnDelete:
					change.Hash, change.Deleted = digest.DeleteMarker, true
					p.changes = append(p.changes, change)
				case ok:
					// Remember what was applied: a re-created config with
					// other data is then a change, whatever the strategy.
					p.missing[ref] = last
				}
				continue
			}
			sum := cfg.GetAnnotations()[digestAnnotation]
			if kind == refs.SecretProviderClass {
				var mounted bool
				if sum, mounted, err = r.csi.digest(ctx, r.Client, obj.GetNamespace(), name, last); err != nil {
					return p, err
				} else if !mounted {
					continue
				}
			}
			p.tracked[ref] = sum
			// A config seen for the first time is a baseline, not a change,
			// unless --reload-on-create says its creation is one.
			if (ok && last != sum) || (!ok && r.created(cfg, obj)) {
				change.Hash = sum
				p.changes = append(p.changes, change)
			}
		}
	}
	return p, nil
}

// candidates lists the names of configs of kind that may reload the
// workload: those it references, those its named-reload annotation names,
// and those in its applied record (a deleted config matched by a pattern
// can no longer be listed).
func (r *Reconciler) candidates(ctx context.Context, kind refs.Kind, ns string, referenced []refs.Ref, policy annotation.Policy, applied map[string]string) ([]string, error) {
	var names []string
	for _, ref := range referenced {
		if ref.Kind == kind {
			names = append(names, ref.Name)
		}
	}
	for key := range applied {
		if name, ok := strings.CutPrefix(key, string(kind)+"/"); ok {
			names = append(names, name)
		}
	}
	patterns := false
	for _, m := range policy.Named {
		if m.Literal() {
			names = append(names, m.String())
		} else {
			patterns = true
		}
	}
	if patterns {
		list := configList(kind)
		if err := r.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, name := range objectNames(list) {
			if slices.ContainsFunc(policy.Named, func(m annotation.Matcher) bool { return m.Match(name) }) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// appliedRecord reads the workload's record of applied config digests.
// A malformed record counts as empty: the next write replaces it.
func (r *Reconciler) appliedRecord(obj client.Object) map[string]string {
	rec := map[string]string{}
	if v := obj.GetAnnotations()[r.Config.Keys.Applied]; v != "" {
		_ = json.Unmarshal([]byte(v), &rec)
	}
	return rec
}

// record returns the applied record to store on the workload metadata: the
// digest of every tracked (or deleted but not rolled) config that the pod
// template does not already show. That is the baseline of configs never
// rolled, so that a change made while Ripple is down is still seen as a
// change. It returns nil when no record is needed, and whether it differs
// from the stored one.
func (r *Reconciler) record(obj client.Object, tpl *corev1.PodTemplateSpec, p plan) (*string, bool) {
	rec := map[string]string{}
	for _, m := range []map[refs.Ref]string{p.tracked, p.missing} {
		for ref, sum := range m {
			if shown, ok := r.Config.Strategy.Applied(tpl, ref); !ok || shown != sum || p.ambiguous[ref] {
				rec[ref.String()] = sum
			}
		}
	}
	old := obj.GetAnnotations()[r.Config.Keys.Applied]
	if len(rec) == 0 {
		// Leave a record this Ripple has no use for: another Ripple with
		// an overlapping scope may own it, and a stale one costs nothing.
		return nil, false
	}
	b, err := json.Marshal(rec) // map keys are sorted: the value is stable
	if err != nil {
		return nil, false
	}
	v := string(b)
	return &v, v != old
}

// created reports whether --reload-on-create makes cfg's creation a change
// for obj: cfg was created after the workload, and after Ripple started
// unless --sync-after-restart is set. Timestamps have one-second
// granularity, so a config and a workload applied together do not count.
func (r *Reconciler) created(cfg, obj client.Object) bool {
	if !r.Config.ReloadOnCreate {
		return false
	}
	at := cfg.GetCreationTimestamp().Time
	if !at.After(obj.GetCreationTimestamp().Time) {
		return false
	}
	return r.Config.SyncAfterRestart || !at.Before(r.Started.Truncate(time.Second))
}

// inScope reports whether the namespace is selected by
// --namespace-selector. Only selected namespaces are cached, so a cache miss
// means "not selected".
func (r *Reconciler) inScope(ctx context.Context, ns string) (bool, error) {
	if r.Config.NamespaceSelector == nil {
		return true, nil
	}
	err := r.Client.Get(ctx, types.NamespacedName{Name: ns}, namespaceObject())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// settleWindow returns the workload's settle window and a warning when its
// annotation is invalid.
func (r *Reconciler) settleWindow(obj client.Object) (time.Duration, string) {
	v, ok := obj.GetAnnotations()[r.Config.Keys.SettleWindow]
	if !ok {
		return r.Config.SettleWindow, ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return r.Config.SettleWindow, fmt.Sprintf("annotation %q: %q is not a duration such as 5s or 0; using the default %s",
			r.Config.Keys.SettleWindow, v, r.Config.SettleWindow)
	}
	return d, ""
}

// settle returns how long to wait before acting on changes: until window
// has passed without a new change set, and no longer than maxSettleFactor
// windows after the first. It also returns when the first change was seen.
func (r *Reconciler) settle(key types.NamespacedName, changes []strategy.Change, window time.Duration) (time.Duration, time.Time) {
	now := r.Clock.Now()
	if window <= 0 {
		return 0, now
	}
	id := changeID(changes)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[types.NamespacedName]pendingChange{}
	}
	pc, ok := r.pending[key]
	if !ok {
		pc.first = now
	}
	if !ok || pc.changes != id {
		pc.changes, pc.last = id, now
		r.pending[key] = pc
	}
	deadline := pc.last.Add(window)
	if limit := pc.first.Add(maxSettleFactor * window); limit.Before(deadline) {
		deadline = limit
	}
	return max(deadline.Sub(now), 0), pc.first
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.pending, key)
	r.mu.Unlock()
}

func changeID(changes []strategy.Change) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString(c.Ref.String() + "=" + c.Hash + ";")
	}
	return b.String()
}

// changeNames names the changed configs, e.g. `ConfigMap "app"`.
func changeNames(changes []strategy.Change) []string {
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = fmt.Sprintf("%s %q", c.Ref.Kind, c.Ref.Name)
		if c.Deleted {
			names[i] += " (deleted)"
		}
	}
	return names
}
