package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/internal/rollout"
)

// observer follows the benchmark's Deployments (and, on a full cluster,
// their ReplicaSets) on a watch and timestamps what it sees as it arrives:
// a Deployment whose pod template differs from the last one seen has been
// rolled, since in these scenarios only the controller writes templates.
// (metadata.generation will not do: the API server also bumps it for
// annotation-only edits of a Deployment, such as a controller's baseline
// record.) Reaction latencies are computed from these timestamps, never
// from polling or sleeps.
type observer struct {
	cs          kubernetes.Interface
	ns          string // "" for all namespaces
	baselineKey string // annotation a controller writes when it has seen a workload; "" for none

	mu sync.Mutex
	// template holds a hash of each Deployment's pod template.
	template  map[string]uint64
	baselined map[string]bool
	// rolling holds the Deployments whose rollout is in progress by their
	// status, as Ripple's rollout cap reads it.
	rolling map[string]bool
	// changes holds, per workload, when each template change was seen.
	changes map[string][]time.Time
	// replicaSets holds, per Deployment, when each of its ReplicaSets was
	// seen created; ReplicaSets that existed when the observer started
	// have the zero time.
	replicaSets map[string][]time.Time
	// relists counts watch restarts that needed a relist, during which
	// template changes could only be timed when the relist returned.
	relists int
	// changed is closed and replaced whenever something changes, to wake
	// waiters without polling.
	changed chan struct{}
}

// benchLabel marks every object the benchmark creates.
const benchLabel = "ripple-bench"

func newObserver(cs kubernetes.Interface, baselineKey string) *observer {
	return &observer{
		cs:          cs,
		baselineKey: baselineKey,
		template:    map[string]uint64{},
		baselined:   map[string]bool{},
		rolling:     map[string]bool{},
		changes:     map[string][]time.Time{},
		replicaSets: map[string][]time.Time{},
		changed:     make(chan struct{}),
	}
}

// start lists and watches until ctx ends. It returns once the initial lists
// are in, so everything that happens afterwards is seen on the watch.
func (o *observer) start(ctx context.Context, replicaSets bool) error {
	rv, err := o.listDeployments(ctx)
	if err != nil {
		return err
	}
	go o.loop(ctx, rv, o.watchDeployments, o.listDeployments)
	if replicaSets {
		rv, err := o.listReplicaSets(ctx)
		if err != nil {
			return err
		}
		go o.loop(ctx, rv, o.watchReplicaSets, o.listReplicaSets)
	}
	return nil
}

func listOptions() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: benchLabel + "=true", Limit: 1000}
}

// pagedList is a page of a list of the benchmark's objects.
type pagedList interface {
	GetContinue() string
	GetResourceVersion() string
}

// listPages lists the benchmark's objects page by page, calls each with
// every page, and returns the list's resource version.
func listPages[L pagedList](ctx context.Context, list func(context.Context, metav1.ListOptions) (L, error), each func(L)) (string, error) {
	opts := listOptions()
	for {
		page, err := list(ctx, opts)
		if err != nil {
			return "", err
		}
		each(page)
		if page.GetContinue() == "" {
			return page.GetResourceVersion(), nil
		}
		opts.Continue = page.GetContinue()
	}
}

// watchFrom watches the benchmark's objects of one kind from rv and calls
// each with every event and the time it arrived, until the server ends the
// watch; it returns the last resource version seen.
func watchFrom[T interface {
	runtime.Object
	GetResourceVersion() string
}](ctx context.Context, rv string, start func(context.Context, metav1.ListOptions) (watch.Interface, error), each func(watch.EventType, T, time.Time)) (string, error) {
	opts := listOptions()
	opts.ResourceVersion, opts.AllowWatchBookmarks, opts.Limit = rv, true, 0
	w, err := start(ctx, opts)
	if err != nil {
		return rv, err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		now := time.Now() // as early as possible: this is the observation time
		if ev.Type == watch.Error {
			return rv, apierrors.FromObject(ev.Object)
		}
		obj, ok := ev.Object.(T)
		if !ok {
			continue
		}
		rv = obj.GetResourceVersion()
		each(ev.Type, obj, now)
	}
	return rv, nil
}

func (o *observer) listDeployments(ctx context.Context) (string, error) {
	rv, err := listPages(ctx, o.cs.AppsV1().Deployments(o.ns).List, func(list *appsv1.DeploymentList) {
		now := time.Now()
		o.mu.Lock()
		defer o.mu.Unlock()
		for i := range list.Items {
			o.updateDeployment(&list.Items[i], now)
		}
	})
	if err == nil {
		o.notify()
	}
	return rv, err
}

func (o *observer) listReplicaSets(ctx context.Context) (string, error) {
	return listPages(ctx, o.cs.AppsV1().ReplicaSets(o.ns).List, func(list *appsv1.ReplicaSetList) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for i := range list.Items {
			o.addReplicaSet(&list.Items[i], time.Time{})
		}
	})
}

// loop keeps a watch open from rv, resuming after the server closes it and
// relisting when the resource version has expired.
func (o *observer) loop(ctx context.Context, rv string, watchRV func(context.Context, string) (string, error), list func(context.Context) (string, error)) {
	for ctx.Err() == nil {
		next, err := watchRV(ctx, rv)
		switch {
		case err == nil:
			rv = next
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			o.mu.Lock()
			o.relists++
			o.mu.Unlock()
			if next, err := list(ctx); err == nil {
				rv = next
			}
		default:
			select { // API server restarting or ctx ending
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func (o *observer) watchDeployments(ctx context.Context, rv string) (string, error) {
	return watchFrom(ctx, rv, o.cs.AppsV1().Deployments(o.ns).Watch, func(t watch.EventType, d *appsv1.Deployment, now time.Time) {
		o.mu.Lock()
		switch t {
		case watch.Added, watch.Modified:
			o.updateDeployment(d, now)
		case watch.Deleted:
			key := d.Namespace + "/" + d.Name
			delete(o.template, key)
			delete(o.baselined, key)
			delete(o.rolling, key)
		}
		o.mu.Unlock()
		if t != watch.Bookmark {
			o.notify()
		}
	})
}

func (o *observer) watchReplicaSets(ctx context.Context, rv string) (string, error) {
	return watchFrom(ctx, rv, o.cs.AppsV1().ReplicaSets(o.ns).Watch, func(t watch.EventType, rs *appsv1.ReplicaSet, now time.Time) {
		if t == watch.Added {
			o.mu.Lock()
			o.addReplicaSet(rs, now)
			o.mu.Unlock()
			o.notify()
		}
	})
}

// updateDeployment records d as seen at now; o.mu is held.
func (o *observer) updateDeployment(d *appsv1.Deployment, now time.Time) {
	key := d.Namespace + "/" + d.Name
	h := templateHash(&d.Spec.Template)
	if prev, ok := o.template[key]; ok && prev != h {
		o.changes[key] = append(o.changes[key], now)
	}
	o.template[key] = h
	o.rolling[key] = rollout.Deployment(d).State == rollout.Progressing
	if o.baselineKey != "" {
		_, o.baselined[key] = d.Annotations[o.baselineKey]
	}
}

// addReplicaSet records a new ReplicaSet of a Deployment; o.mu is held.
func (o *observer) addReplicaSet(rs *appsv1.ReplicaSet, at time.Time) {
	if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
		key := rs.Namespace + "/" + ref.Name
		o.replicaSets[key] = append(o.replicaSets[key], at)
	}
}

func (o *observer) notify() {
	o.mu.Lock()
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
}

// waitFor waits until cond, called with o.mu held, returns true, or until
// timeout. It returns what cond said last as the error message.
func (o *observer) waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		ok, pending := cond()
		ch := o.changed
		o.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("timed out after %s waiting for %s", timeout, pending)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// waitBaselined waits until the controller has recorded its baseline on
// every one of n workloads.
func (o *observer) waitBaselined(ctx context.Context, n int, timeout time.Duration) error {
	return o.waitFor(ctx, timeout, func() (bool, string) {
		done := 0
		for _, b := range o.baselined {
			if b {
				done++
			}
		}
		return done >= n, fmt.Sprintf("the %s annotation on %d workloads (have %d)", o.baselineKey, n, done)
	})
}

// waitChanged waits until every workload in keys has been seen changing at
// or after since.
func (o *observer) waitChanged(ctx context.Context, keys []string, since time.Time, timeout time.Duration) error {
	return o.waitFor(ctx, timeout, func() (bool, string) {
		missing := 0
		for _, k := range keys {
			times := o.changes[k]
			if len(times) == 0 || times[len(times)-1].Before(since) {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("template changes of %d of %d workloads", missing, len(keys))
	})
}

// waitReplicaSets waits until each Deployment in keys has at least one
// ReplicaSet seen created at or after since (since zero: any at all).
func (o *observer) waitReplicaSets(ctx context.Context, keys []string, since time.Time, timeout time.Duration) error {
	return o.waitFor(ctx, timeout, func() (bool, string) {
		missing := 0
		for _, k := range keys {
			if countSince(o.replicaSets[k], since) == 0 {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("new ReplicaSets of %d of %d Deployments", missing, len(keys))
	})
}

// rollingCount returns how many of keys have a rollout in progress and
// how many have not changed at or after since.
func (o *observer) rollingCount(keys []string, since time.Time) (rolling, unchanged int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range keys {
		if o.rolling[k] {
			rolling++
		}
		if times := o.changes[k]; len(times) == 0 || times[len(times)-1].Before(since) {
			unchanged++
		}
	}
	return rolling, unchanged
}

// changesSince returns, per workload, the template changes seen at or
// after t.
func (o *observer) changesSince(t time.Time) map[string][]time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return since(o.changes, t)
}

// replicaSetsSince returns, per Deployment, the ReplicaSets created at or
// after t.
func (o *observer) replicaSetsSince(t time.Time) map[string][]time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return since(o.replicaSets, t)
}

// relistCount returns the number of relists the observer itself needed.
func (o *observer) relistCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.relists
}

// since keeps the times at or after t; the times must be in order.
func since(m map[string][]time.Time, t time.Time) map[string][]time.Time {
	out := map[string][]time.Time{}
	for k, times := range m {
		for i, at := range times {
			if !at.Before(t) {
				out[k] = append([]time.Time(nil), times[i:]...)
				break
			}
		}
	}
	return out
}

func countSince(times []time.Time, t time.Time) int {
	n := 0
	for _, at := range times {
		if !at.Before(t) {
			n++
		}
	}
	return n
}

// total counts the times in m.
func total(m map[string][]time.Time) int {
	n := 0
	for _, times := range m {
		n += len(times)
	}
	return n
}

// templateHash fingerprints a pod template. Encoding is deterministic (map
// keys sorted), so equal templates hash equal.
func templateHash(t *corev1.PodTemplateSpec) uint64 {
	h := fnv.New64a()
	_ = json.NewEncoder(h).Encode(t)
	return h.Sum64()
}
