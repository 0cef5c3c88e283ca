// Package change gives every change of a config a home: a ConfigRollout
// (api/v1alpha1) in the config's namespace, made and kept by the change
// controller, the Keeper. A change is one new version of a ConfigMap's or
// Secret's data that has consumers; its status tells where each consumer
// stands (package-level State) and whether every consumer Ripple manages
// runs it (the Propagated condition a pipeline waits on).
//
// The Keeper reads the workloads through a Fleet, which the controller
// implements with the same gather and planner a workload's reconcile uses:
// it decides nothing the workloads' reconciles do not, and writes only
// its own objects. It works in a loop of its own (Controller: its queue,
// watches and canary gates), one config at a time, and takes no lock a
// workload's reconcile takes; package controller only wires that loop.
package change

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Key names a config: the Keeper's unit of work.
type Key struct {
	Namespace string
	Config    refs.Ref
}

func (k Key) String() string { return k.Namespace + "/" + k.Config.String() }

// Fleet is the workloads of every kind as the Keeper sees them.
type Fleet interface {
	// Consumers are the workloads in ns that may read config, each as its
	// plan sees the config now.
	Consumers(ctx context.Context, ns string, config refs.Ref) ([]Consumer, error)
}

// ConfigIndex is the cache's field index of ConfigRollouts by their
// config (IndexValue).
const ConfigIndex = "spec.config"

// IndexValue is the ConfigIndex value of cr.
func IndexValue(cr *v1alpha1.ConfigRollout) string {
	return cr.Spec.Config.Kind + "/" + cr.Spec.Config.Name
}

// Defaults of the bounds.
const (
	// lookInterval spaces the looks at one config, and so the status
	// writes of its change (one at most per look): every rollout of its
	// consumers is an event, and a look plans every consumer (as a
	// workload's reconcile plans it), so a fan-out's events cost about one
	// look and one write a second, not one each. The last consumer's
	// completion is seen within it, and the look itself fits in the rest
	// of the second.
	lookInterval = 800 * time.Millisecond
	// poll is how often a change in flight is looked at without an event:
	// a consumer's write, rollout, approval or window opening is an event
	// of the workload (a look at once, within lookInterval); only the
	// consumers that name the config without reading it send none.
	poll = 30 * time.Second
)

// Keeper is the change controller: it makes a ConfigRollout when a config
// with consumers changes, keeps its status, supersedes and collects the
// older ones of the config, and bounds them per namespace.
type Keeper struct {
	// Client reads configs and ConfigRollouts from the cache and writes
	// ConfigRollouts; Reader reads them from the API server, where the
	// cache may lag.
	Client client.Client
	Reader client.Reader
	Fleet  Fleet
	// Tell tells notice n about cfg, a config of kind: its canaried change
	// passed or halted (an Event, an alert).
	Tell func(ctx context.Context, kind refs.Kind, cfg client.Object, n plan.Notice)
	// Wake queues the workloads in ns that may use config, whose plans
	// read what the Keeper knows of its change (Refused); nil: none.
	Wake func(ctx context.Context, ns string, config refs.Ref)
	// Records carries canaried changes over from an earlier Ripple's
	// records; nil: none.
	Records *Records
	// ResumeKey is the canary-resume annotation; Timeout is
	// --rollout-timeout, which a canary's rollout must meet.
	ResumeKey string
	Timeout   time.Duration
	// Gates judge a baking change's canaries beside their rollout status
	// (--canary-gates): their pods.
	Gates []Gate
	// InScope tells whether a namespace is this Ripple's.
	InScope func(ctx context.Context, ns string) (bool, error)
	// Kinds are the config kinds Ripple watches: another's ConfigRollouts
	// (a Ripple that watches other kinds, in the same cluster) are not
	// this one's to keep.
	Kinds []refs.Kind
	// Ring is the install's digest key ring, set before the caches start.
	Ring    func() digest.Ring
	Clock   clock.PassiveClock
	Metrics *metrics.Metrics
	// History and PerNamespace bound the ConfigRollouts kept
	// (v1alpha1.Default* when 0).
	History, PerNamespace int
	// Tracer exports a trace per change (trace.go); nil: tracing is off.
	Tracer trace.Tracer

	// traceMu guards marks: what this process saw of the changes it
	// traces (trace.go).
	traceMu sync.Mutex
	marks   map[Key]*traceMarks

	nsLocks [64]sync.Mutex

	mu       sync.Mutex
	noticed  map[Key]struct{}  // data changes seen by the handler, not yet looked at
	active   map[Key]struct{}  // configs whose latest change is in flight
	lastLook map[Key]time.Time // the last look at a config in flight
	lookAt   map[Key]time.Time // a config's turn in its namespace's looks
	stale    map[Key]staleCount
	// left are the managed consumers of a change in flight that were not
	// complete at its last look, and whether each was rolling; due marks
	// a change whose last one completed since.
	left map[Key]map[workload.Ref]bool
	due  map[Key]bool
	// makes and looks are the namespaces' budgets of new ConfigRollouts
	// and of looks.
	makes, looks map[string]*rate.Limiter
	// refused are the namespaces where the API server refused to create
	// a ConfigRollout (no right, a quota), with its message, until a
	// create there succeeds: their canaried changes are told why they
	// cannot be kept (Refused) rather than wait in silence.
	refused map[string]string
}

// maxRefused bounds the namespaces whose refusal is remembered: past it
// one is forgotten, and its changes wait (its next create is refused
// again).
const maxRefused = 10000

// Refused is why the API server refused to create a ConfigRollout in ns
// at the last try; false when it did not, or one was made since.
func (k *Keeper) Refused(ns string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	why, ok := k.refused[ns]
	return why, ok
}

// created notes the outcome of a create of a ConfigRollout in ns: a
// refusal (Forbidden: no right, a quota) is remembered, any success
// forgets the namespace's. It reports whether the refusal is news: the
// workloads waiting for the change's canary must then be told.
func (k *Keeper) created(ns string, err error) bool {
	var status apierrors.APIStatus
	var full fullError
	var why, metric string
	switch {
	case err == nil:
		k.mu.Lock()
		delete(k.refused, ns)
		k.mu.Unlock()
		return false
	case errors.As(err, &full):
		why, metric = full.Error(), "full"
	case apierrors.IsForbidden(err) && errors.As(err, &status):
		why, metric = status.Status().Message, "forbidden"
	default:
		return false
	}
	k.Metrics.ChangeRefused(metric)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.refused == nil {
		k.refused = map[string]string{}
	}
	before, ok := k.refused[ns]
	if !ok && len(k.refused) >= maxRefused {
		for other := range k.refused {
			delete(k.refused, other)
			break
		}
	}
	k.refused[ns] = why
	return before != why
}

type staleCount struct {
	kind refs.Kind
	n    int32
}

// Notice notes that key's data changed: its next reconcile makes a
// ConfigRollout even if no consumer has started rolling yet.
func (k *Keeper) Notice(key Key) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.noticed == nil {
		k.noticed = map[Key]struct{}{}
	}
	k.noticed[key] = struct{}{}
}

// Active reports whether the latest change of key is in flight: a
// consumer's rollout moves it on.
func (k *Keeper) Active(key Key) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.active[key]
	return ok
}

// Reconcile brings the ConfigRollouts of the config key names up to date,
// at most once per lookInterval.
func (k *Keeper) Reconcile(ctx context.Context, key Key) (ctrl.Result, error) {
	if wait := k.untilLook(key); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("config", klog.KRef(key.Namespace, key.Config.Name), "kind", key.Config.Kind))
	cfg, err := k.config(ctx, key)
	if cfg == nil || err != nil {
		k.forget(key)
		return ctrl.Result{}, err
	}
	revs := Revisions(k.Ring(), key.Namespace, key.Config, digest.RevisionSum(source.Digest(cfg), source.Others(cfg)))
	if len(revs) == 0 {
		k.forget(key)
		return ctrl.Result{}, nil
	}
	owned, err := k.list(ctx, key, cfg)
	if err != nil {
		return ctrl.Result{}, err
	}
	current := len(owned) > 0 && slices.Contains(revs, owned[0].Spec.Revision)
	if current && Done(owned[0].Status) {
		// A write that left the data as it was (metadata, or the same
		// data again): the change already carries it, nothing to plan.
		k.takeNotice(key)
		return ctrl.Result{}, k.receipt(ctx, cfg, owned)
	}
	consumers, err := k.Fleet.Consumers(ctx, key.Namespace, key.Config)
	if err != nil {
		return ctrl.Result{}, err
	}
	noticed := k.takeNotice(key)
	if current {
		return k.update(ctx, key, cfg, owned, consumers)
	}
	if !hasConsumers(consumers) || (!noticed && !inFlight(consumers)) {
		k.forget(key)
		return ctrl.Result{}, nil // no consumer, or no change: the data is the one every consumer runs
	}
	return k.begin(ctx, key, cfg, revs[0], owned, consumers, noticed)
}

// begin makes the ConfigRollout of key's change of cfg to revision, within
// the namespace's budget, and retires the config's older ones (owned).
func (k *Keeper) begin(ctx context.Context, key Key, cfg client.Object, revision string, owned []v1alpha1.ConfigRollout, consumers []Consumer, noticed bool) (ctrl.Result, error) {
	if wait := k.budget(key.Namespace); wait > 0 {
		if noticed {
			k.Notice(key) // kept for the look that makes it
		}
		return ctrl.Result{RequeueAfter: wait}, nil // the namespace's changes come too fast: the data then gets the object
	}
	cr, err := k.createWithin(ctx, key, cfg, revision)
	if errors.As(err, new(fullError)) {
		if noticed {
			k.Notice(key)
		}
		return ctrl.Result{RequeueAfter: fullRetry}, nil // told once (created); a change in flight ends in its own time
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	owned = slices.DeleteFunc(owned, func(o v1alpha1.ConfigRollout) bool { return o.Name == cr.Name })
	kept, err := k.retire(ctx, cr.Name, owned)
	if err != nil {
		return ctrl.Result{}, err
	}
	return k.update(ctx, key, cfg, append([]v1alpha1.ConfigRollout{*cr}, kept...), consumers)
}

// hasConsumers reports whether a workload reads the config.
func hasConsumers(cs []Consumer) bool {
	return slices.ContainsFunc(cs, func(c Consumer) bool {
		_, _, ok := State(c, time.Time{})
		return ok
	})
}

// inFlight reports whether a consumer Ripple rolls has not completed the
// config's current data: a change seen by a workload's reconcile only (a
// change made while Ripple was down).
func inFlight(cs []Consumer) bool {
	return slices.ContainsFunc(cs, func(c Consumer) bool {
		s, _, ok := State(c, time.Time{})
		return ok && pending(s)
	})
}

// pending reports whether a consumer in state s is one Ripple rolls that
// has not completed the change.
func pending(s v1alpha1.ConsumerState) bool {
	switch s {
	case v1alpha1.ConsumerComplete, v1alpha1.ConsumerStale, v1alpha1.ConsumerNotifyOnly, v1alpha1.ConsumerExcluded:
		return false
	}
	return true
}

// config is the config key names, from the cache; nil when it is gone,
// out of scope, or of a kind this Ripple does not watch.
func (k *Keeper) config(ctx context.Context, key Key) (client.Object, error) {
	if !slices.Contains(k.Kinds, key.Config.Kind) {
		return nil, nil
	}
	if in, err := k.InScope(ctx, key.Namespace); err != nil || !in {
		return nil, err
	}
	obj := source.Object(key.Config.Kind)
	if obj == nil {
		return nil, nil
	}
	err := k.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Config.Name}, obj)
	if err != nil || obj.GetDeletionTimestamp() != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return obj, nil
}

// list is the ConfigRollouts of key's config cfg, newest first: those
// of this config, not of an earlier one of its name (a UID of its own),
// which the garbage collector deletes with it.
func (k *Keeper) list(ctx context.Context, key Key, cfg client.Object) ([]v1alpha1.ConfigRollout, error) {
	items, err := List(ctx, k.Client, key.Namespace, key.Config, true)
	return slices.DeleteFunc(items, func(cr v1alpha1.ConfigRollout) bool { return cr.Spec.Config.UID != cfg.GetUID() }), err
}

// newestFirst orders a config's changes newest first: by the config's
// resourceVersion each was seen at, which orders two changes made within
// one second; by creation for objects made before Ripple recorded it.
func newestFirst(items []v1alpha1.ConfigRollout) {
	slices.SortFunc(items, func(a, b v1alpha1.ConfigRollout) int {
		if c, ok := CompareVersions(b.Spec.Config.ResourceVersion, a.Spec.Config.ResourceVersion); ok && c != 0 {
			return c
		}
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(b.Name, a.Name))
	})
}

// create makes the ConfigRollout of cfg's data at revision, owned by cfg
// (deleted with it).
func (k *Keeper) create(ctx context.Context, key Key, cfg client.Object, revision string) (*v1alpha1.ConfigRollout, error) {
	rv := cfg.GetResourceVersion()
	labels := map[string]string{v1alpha1.LabelConfigKind: kindLabel(key.Config.Kind), v1alpha1.LabelLatest: "true"}
	if labelValue(key.Config.Name) {
		labels[v1alpha1.LabelConfigName] = key.Config.Name
	}
	if labelValue(rv) {
		labels[v1alpha1.LabelConfigVersion] = rv
	}
	cr := &v1alpha1.ConfigRollout{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: Name(key.Config, cfg.GetUID(), revision, cfg.GetResourceVersion()), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: string(key.Config.Kind), Name: cfg.GetName(), UID: cfg.GetUID()}},
		},
		Spec: v1alpha1.ConfigRolloutSpec{
			Config:   v1alpha1.ConfigReference{Kind: string(key.Config.Kind), Name: key.Config.Name, UID: cfg.GetUID(), ResourceVersion: rv},
			Revision: revision,
		},
	}
	err := k.Client.Create(ctx, cr)
	if k.created(key.Namespace, err) && k.Wake != nil {
		k.Wake(ctx, key.Namespace, key.Config)
	}
	if apierrors.IsAlreadyExists(err) {
		// Made by an earlier reconcile that the cache has not shown yet.
		err = k.Reader.Get(ctx, client.ObjectKeyFromObject(cr), cr)
		return cr, err
	}
	if err != nil {
		return nil, fmt.Errorf("creating the ConfigRollout of %s: %w", key, err)
	}
	k.Metrics.ChangeWrite("create")
	ctrl.LoggerFrom(ctx).Info("change seen", "configRollout", klog.KObj(cr))
	cr.Status.SeenAt = metav1.Time{Time: k.Clock.Now()}
	return cr, nil
}

// labelValue reports whether a config's name is a label value: its
// ConfigRollouts carry it as their config-name label.
func labelValue(name string) bool { return len(validation.IsValidLabelValue(name)) == 0 }

func kindLabel(kind refs.Kind) string {
	if kind == refs.Secret {
		return "secret"
	}
	return "configmap"
}

// retire supersedes the older changes of a config that are still in
// flight by the newest, moves the latest label off them and deletes those
// past the config's history; it returns those kept.
func (k *Keeper) retire(ctx context.Context, newest string, older []v1alpha1.ConfigRollout) ([]v1alpha1.ConfigRollout, error) {
	history := cmp.Or(k.History, v1alpha1.DefaultHistory)
	for i := range older {
		cr := &older[i]
		if i >= history-1 {
			if err := k.delete(ctx, cr); err != nil {
				return nil, err
			}
			continue
		}
		if err := k.unmark(ctx, cr); err != nil {
			return nil, err
		}
		if !Done(cr.Status) {
			cr.Status = Supersede(cr.Status, newest, k.Clock.Now())
			if err := k.writeStatus(ctx, cr); err != nil {
				return nil, err
			}
		}
	}
	return older[:min(len(older), max(history-1, 0))], nil
}

// unmark takes the latest label off cr, an older change of its config: a
// merge patch of that label alone, which no other writer's fields touch.
func (k *Keeper) unmark(ctx context.Context, cr *v1alpha1.ConfigRollout) error {
	if _, ok := cr.Labels[v1alpha1.LabelLatest]; !ok {
		return nil
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+v1alpha1.LabelLatest+`":null}}}`))
	if err := k.Client.Patch(ctx, cr, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("moving the latest label off ConfigRollout %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	k.Metrics.ChangeWrite("label")
	return nil
}

// receipt records on the config's newest change (owned[0], which carries
// cfg's data) that it does at cfg's resourceVersion, and, once it
// propagated, that the older changes it superseded did too: the data they
// replaced runs nowhere Ripple manages.
func (k *Keeper) receipt(ctx context.Context, cfg client.Object, owned []v1alpha1.ConfigRollout) error {
	cr := &owned[0]
	if observe(&cr.Status, cfg.GetResourceVersion()) {
		if err := k.writeStatus(ctx, cr); err != nil {
			return err
		}
	}
	if cr.Status.PropagatedAt == nil {
		return nil
	}
	for i := range owned[1:] {
		old := &owned[i+1]
		if st, ok := Overtaken(old.Status, cr.Name, k.Clock.Now()); ok {
			old.Status = st
			if err := k.writeStatus(ctx, old); err != nil {
				return err
			}
		}
	}
	return nil
}

// observe raises st's observed config version to rv; false when it was
// there already.
func observe(st *v1alpha1.ConfigRolloutStatus, rv string) bool {
	if rv == st.ObservedConfigVersion {
		return false
	}
	if c, ok := CompareVersions(rv, st.ObservedConfigVersion); ok && c < 0 {
		return false // the cache is behind a write seen before
	}
	st.ObservedConfigVersion = rv
	return true
}

// Each namespace may have at most namespaceRate ConfigRollouts made a
// second, in bursts of namespaceBurst: a tenant changing its configs
// without pause costs a few API writes a second, and every other
// namespace's changes get theirs at once. The changes it makes meanwhile
// get none of their own: the change in flight when the budget allows is
// the one made (those between were superseded anyway).
const (
	namespaceRate  = 2
	namespaceBurst = 20
)

// Each namespace's configs are looked at at most lookRate times a second
// together, in bursts of lookBurst (a look plans every consumer): a
// tenant with many configs changing at once waits for its own looks, and
// the change controller's workers stay free for other namespaces. The
// completion of a change's last consumer is looked at regardless.
const (
	lookRate  = 20
	lookBurst = 40
)

// budget is how long a new ConfigRollout in ns must wait; none, and one
// is taken from the namespace's budget, when it may be made now.
func (k *Keeper) budget(ns string) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.makes == nil {
		k.makes = map[string]*rate.Limiter{}
	}
	return k.take(k.makes, ns, namespaceRate, namespaceBurst, k.Clock.Now())
}

// take takes one from ns's budget in limits (made at r a second, in
// bursts of b, on first use), or says how long until one is there; k.mu
// is held.
func (k *Keeper) take(limits map[string]*rate.Limiter, ns string, r rate.Limit, b int, now time.Time) time.Duration {
	l, ok := limits[ns]
	if !ok {
		l = rate.NewLimiter(r, b)
		limits[ns] = l
	}
	res := l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

// reserve takes a look from ns's budget, now or at its turn: how long
// until then (the look then needs none more); k.mu is held. Each waiting
// config of the namespace gets a turn of its own, so that waiting costs
// one requeue, not one per token.
func (k *Keeper) reserve(ns string, now time.Time) time.Duration {
	if k.looks == nil {
		k.looks = map[string]*rate.Limiter{}
	}
	l, ok := k.looks[ns]
	if !ok {
		l = rate.NewLimiter(lookRate, lookBurst)
		k.looks[ns] = l
	}
	return l.ReserveN(now, 1).DelayFrom(now)
}

// createWithin makes the ConfigRollout of key's change (create) within
// its namespace's bound: the oldest of the namespace are deleted first,
// those done first, so that no tenant's changes grow Ripple's cache or the
// API server's storage without limit. The namespace's changes are made
// one at a time (a lock of its shard), so that two workers never both
// take the last place.
func (k *Keeper) createWithin(ctx context.Context, key Key, cfg client.Object, revision string) (*v1alpha1.ConfigRollout, error) {
	mu := &k.nsLocks[fnv32(key.Namespace)%uint32(len(k.nsLocks))]
	mu.Lock()
	defer mu.Unlock()
	if err := k.makeRoom(ctx, key.Namespace); err != nil {
		if k.created(key.Namespace, err) && k.Wake != nil {
			k.Wake(ctx, key.Namespace, key.Config)
		}
		return nil, err
	}
	return k.create(ctx, key, cfg, revision)
}

// fullError is why a change gets no ConfigRollout while its namespace's
// bound is taken by changes in flight: deleting one of them would lose a
// halt, or restart a canary, to a tenant's next write.
type fullError struct {
	ns    string
	bound int
}

func (e fullError) Error() string {
	return fmt.Sprintf("namespace %s has %d changes in flight, the most --config-rollouts-per-namespace keeps: a new change gets no ConfigRollout until one of them ends", e.ns, e.bound)
}

// fullRetry is how soon a change refused for a full namespace looks again.
const fullRetry = 30 * time.Second

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// nearBound is how close to the namespace's bound the cache's count is
// checked against the API server's: the cache may not show the changes
// made a moment ago.
const nearBound = 10

// makeRoom deletes the oldest done ConfigRollouts of ns so that one more
// stays within the namespace's bound; a fullError when too few are done:
// a change in flight, halted or not, is never deleted to make room.
func (k *Keeper) makeRoom(ctx context.Context, ns string) error {
	bound := cmp.Or(k.PerNamespace, v1alpha1.DefaultPerNamespace)
	var l v1alpha1.ConfigRolloutList
	if err := k.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return err
	}
	if len(l.Items)+1+nearBound > bound {
		if err := k.Reader.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("listing the ConfigRollouts of namespace %s: %w", ns, err)
		}
	}
	items := l.Items
	over := len(items) + 1 - bound
	if over <= 0 {
		return nil
	}
	newestFirst(items)
	slices.Reverse(items)
	items = slices.DeleteFunc(items, func(cr v1alpha1.ConfigRollout) bool { return !Done(cr.Status) })
	if len(items) < over {
		return fullError{ns: ns, bound: bound}
	}
	for i := range items[:over] {
		if err := k.delete(ctx, &items[i]); err != nil {
			return err
		}
	}
	return nil
}

func (k *Keeper) delete(ctx context.Context, cr *v1alpha1.ConfigRollout) error {
	err := k.Client.Delete(ctx, cr, client.Preconditions{UID: &cr.UID})
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting ConfigRollout %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	if err == nil {
		k.Metrics.ChangeWrite("delete")
	}
	return nil
}

// update writes the status of the config's newest change (owned[0]) from
// consumers when it changed, with the receipt, and looks again while the
// change is in flight.
func (k *Keeper) update(ctx context.Context, key Key, cfg client.Object, owned []v1alpha1.ConfigRollout, consumers []Consumer) (ctrl.Result, error) {
	now := k.Clock.Now()
	cr := &owned[0]
	stored := cr.Status
	if cr.Status.SeenAt.IsZero() {
		cr.Status.SeenAt = cr.CreationTimestamp // made, then its first status write lost
	}
	if cr.Status.Writer == "" {
		cr.Status.Writer = source.Writer(cfg) // the revision is the same: so is the write
	}
	first := false
	if cr.Status.Trace == nil && !Done(cr.Status) {
		cr.Status.Trace = k.traceBegin(ctx, key, cfg, cr, now)
		first = cr.Status.Trace != nil
	}
	sum := source.Digest(cfg)
	cs := step(cr.Status.Canary, key, sum, consumers, Resumes(cfg.GetAnnotations()[k.ResumeKey], cr), k.Timeout, now, k.judge(ctx, key, cr.Status.Canary),
		func() (canary.State, bool) { return k.Records.Carry(ctx, key, sum, otherDigests(cfg)) })
	if cs.canary == nil || cs.canary.Phase != canary.Baking {
		k.endGates(key)
	} else if cr.Status.Canary == nil || cr.Status.Canary.Phase != string(canary.Baking) {
		k.judge(ctx, key, canaryStatus(cs.canary)) // the bake starts: so do the gates
	}
	st := Status(cr.Status, consumers, cs.canary, false, now)
	observe(&st, cfg.GetResourceVersion())
	k.track(key, st, leftOf(consumers, cr.Status.SeenAt.Time))
	k.traceLook(ctx, key, cr.Name, st, consumers, first, now)
	if equality.Semantic.DeepEqual(st, stored) {
		return k.next(st, cs.wake), k.receipt(ctx, cfg, owned)
	}
	cr.Status = st
	if err := k.writeStatus(ctx, cr); err != nil {
		return ctrl.Result{}, err
	}
	if err := k.receipt(ctx, cfg, owned); err != nil {
		return ctrl.Result{}, err
	}
	k.wrote(ctx, key, cfg, cr, stored, cs)
	return k.next(st, cs.wake), nil
}

// wrote tells what the status write of cr, whose status was stored, did:
// the canary records carried over are dropped, a pass or halt is told, a
// propagation counted and logged.
func (k *Keeper) wrote(ctx context.Context, key Key, cfg client.Object, cr *v1alpha1.ConfigRollout, stored v1alpha1.ConfigRolloutStatus, cs canaryStep) {
	if cs.carried {
		k.Records.Drop(ctx, key)
	}
	k.traceCanary(ctx, cr, stored.Canary, cs.verdicts, k.Clock.Now())
	if n := cs.outcome; n != nil {
		if cs.canary.Phase == canary.Halted {
			k.Metrics.Halted(string(key.Config.Kind))
		}
		if k.Tell != nil {
			k.Tell(ctx, key.Config.Kind, cfg, *n)
		}
	}
	if st := cr.Status; st.PropagatedAt != nil && stored.PropagatedAt == nil {
		k.Metrics.Propagated(string(key.Config.Kind), st.PropagatedAt.Sub(st.SeenAt.Time))
		ctrl.LoggerFrom(ctx).Info("change propagated", "configRollout", klog.KObj(cr), "consumers", st.Counts.Managed, "stale", st.Counts.Stale)
	}
}

// otherDigests are the other forms of cfg's data's digest.
func otherDigests(cfg client.Object) []string {
	var out []string
	for _, f := range source.Others(cfg) {
		out = append(out, f.Digest)
	}
	return out
}

// next is when to look at a change again: while in flight, every poll, or
// sooner when its canary has a time of its own (wake).
func (k *Keeper) next(st v1alpha1.ConfigRolloutStatus, wake time.Duration) ctrl.Result {
	if Done(st) {
		return ctrl.Result{}
	}
	if wake > 0 && wake < poll {
		return ctrl.Result{RequeueAfter: wake}
	}
	return ctrl.Result{RequeueAfter: poll}
}

// Completed notes that consumer w of key's change completed its rollout,
// and reports whether that may end the change: it was the last consumer
// left at the last look, and rolling (it had applied the change). The
// change is then looked at at once, not after lookInterval, so that
// Propagated follows the last rollout without a wait.
func (k *Keeper) Completed(key Key, w workload.Ref) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	left := k.left[key]
	if !left[w] {
		return false // not left, or not rolling: a look must see it apply
	}
	delete(left, w)
	if len(left) > 0 {
		return false
	}
	if k.due == nil {
		k.due = map[Key]bool{}
	}
	k.due[key] = true
	return true
}

// Rolled notes an update of a consumer of key's change in flight that
// does not complete it: the look it calls for waits lookInterval from the
// first update of a burst, unless one is spaced already. A fan-out's
// writes are then looked at once they are made, not as they begin, when
// the look's plan of every consumer would take the CPU from the writes.
func (k *Keeper) Rolled(key Key) {
	now := k.Clock.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if last, ok := k.lastLook[key]; ok && now.Sub(last) < lookInterval {
		return
	}
	if k.lastLook == nil {
		k.lastLook = map[Key]time.Time{}
	}
	k.lastLook[key] = now
}

// untilLook is how long the next look at key must wait; none, and the
// look is taken, when lookInterval has passed since the last or the last
// consumer left completed.
func (k *Keeper) untilLook(key Key) time.Duration {
	now := k.Clock.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	due := k.due[key]
	delete(k.due, key)
	if last, ok := k.lastLook[key]; ok && now.Sub(last) < lookInterval && !due {
		return lookInterval - now.Sub(last)
	}
	if at, ok := k.lookAt[key]; ok && !due {
		if now.Before(at) {
			return at.Sub(now) // its turn in the namespace's looks
		}
		delete(k.lookAt, key) // its turn: the budget was taken when it was given
	} else if wait := k.reserve(key.Namespace, now); wait > 0 && !due {
		if k.lookAt == nil {
			k.lookAt = map[Key]time.Time{}
		}
		k.lookAt[key] = now.Add(wait)
		return wait
	}
	if k.lastLook == nil {
		k.lastLook = map[Key]time.Time{}
	}
	k.lastLook[key] = now
	return 0
}

func (k *Keeper) writeStatus(ctx context.Context, cr *v1alpha1.ConfigRollout) error {
	if err := k.Client.Status().Update(ctx, cr); err != nil {
		return fmt.Errorf("writing the status of ConfigRollout %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	k.Metrics.ChangeWrite("status")
	return nil
}

// leftOf are the managed consumers of a change seen at seen that have not
// completed it, and whether each is rolling.
func leftOf(cs []Consumer, seen time.Time) map[workload.Ref]bool {
	left := map[workload.Ref]bool{}
	for _, c := range cs {
		if s, _, ok := State(c, seen); ok && pending(s) {
			left[c.Ref] = s == v1alpha1.ConsumerRolling
		}
	}
	return left
}

// track keeps whether key's latest change is in flight, the consumers it
// waits for, and its stale consumers for the gauge.
func (k *Keeper) track(key Key, st v1alpha1.ConfigRolloutStatus, left map[workload.Ref]bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.active == nil {
		k.active, k.stale, k.left = map[Key]struct{}{}, map[Key]staleCount{}, map[Key]map[workload.Ref]bool{}
	}
	if Done(st) {
		delete(k.active, key)
		delete(k.lastLook, key)
		delete(k.left, key)
	} else {
		k.active[key] = struct{}{}
		k.left[key] = left
	}
	k.stale[key] = staleCount{kind: key.Config.Kind, n: st.Counts.Stale}
	k.staleGauge(key.Config.Kind)
}

func (k *Keeper) takeNotice(key Key) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.noticed[key]
	delete(k.noticed, key)
	return ok
}

// A Gate judges the canaries of a baking change beside their rollout
// status (canary.Verdict): the pod gate so far.
type Gate interface {
	// Judge is the gate's verdict on the canaries of key's change, which
	// bakes since then; its first call starts what it needs (a watch).
	Judge(ctx context.Context, key Key, since time.Time, canaries []workload.Ref) canary.Verdict
	// Done ends what the gate keeps of key's change: its bake ended.
	Done(key Key)
}

// judge is the gates' verdicts on key's change, canary st, while it bakes.
func (k *Keeper) judge(ctx context.Context, key Key, st *v1alpha1.CanaryStatus) []canary.Verdict {
	if st == nil || st.Phase != string(canary.Baking) || len(k.Gates) == 0 {
		return nil
	}
	canaries := make([]workload.Ref, 0, len(st.Workloads))
	for _, w := range st.Workloads {
		canaries = append(canaries, workload.Ref{Kind: w.Kind, Namespace: key.Namespace, Name: w.Name})
	}
	out := make([]canary.Verdict, 0, len(k.Gates))
	for _, g := range k.Gates {
		out = append(out, g.Judge(ctx, key, st.Since.Time, canaries))
	}
	return out
}

func (k *Keeper) endGates(key Key) {
	for _, g := range k.Gates {
		g.Done(key)
	}
}

// forget drops what the Keeper keeps of key: its config is gone, out of
// scope or unchanged.
func (k *Keeper) forget(key Key) {
	k.endGates(key)
	k.traceForget(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.noticed, key)
	delete(k.active, key)
	delete(k.left, key)
	delete(k.due, key)
	delete(k.lookAt, key)
	if _, ok := k.stale[key]; ok {
		delete(k.stale, key)
		k.staleGauge(key.Config.Kind)
	}
	delete(k.lastLook, key)
}

// staleGauge sets the gauge of kind; k.mu is held.
func (k *Keeper) staleGauge(kind refs.Kind) {
	var n int
	for _, s := range k.stale {
		if s.kind == kind {
			n += int(s.n)
		}
	}
	k.Metrics.StaleConsumers(string(kind), n)
}
