package main

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// seenKey is a digest on one workload.
type seenKey struct{ Workload, Digest string }

// observer watches the soak's Deployments and notes when each digest first
// showed on each: the latency of a change. The verdict does not depend on
// it (a relist after the API server's restart may skip a version; the
// ReplicaSets keep them all).
type observer struct {
	mu      sync.Mutex
	first   map[seenKey]time.Time
	records map[seenKey]time.Time // when each digest first showed as what the pods read (effective)
	current map[string]*appsv1.Deployment
	// steps are, per workload, the digests its template showed in turn,
	// each with the record of the version that first showed it.
	steps map[string][]revision
}

func startObserver(ctx context.Context, cs kubernetes.Interface) (*observer, error) {
	o := &observer{first: map[seenKey]time.Time{}, records: map[seenKey]time.Time{}, current: map[string]*appsv1.Deployment{}, steps: map[string][]revision{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = soakLabel + "=true"
	}))
	inf := f.Apps().V1().Deployments().Informer()
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.saw(obj) },
		UpdateFunc: func(_, obj any) { o.saw(obj) },
	})
	if err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return o, nil
}

func (o *observer) saw(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	now := time.Now()
	k := seenKey{Workload: d.Namespace + "/" + d.Name, Digest: applied(&d.Spec.Template)}
	rec := seenKey{Workload: k.Workload, Digest: effective(d)}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.first[k]; !ok {
		o.first[k] = now
	}
	if _, ok := o.records[rec]; !ok {
		o.records[rec] = now
	}
	o.current[k.Workload] = d
	steps := o.steps[k.Workload]
	if len(steps) == 0 || steps[len(steps)-1].Digest != k.Digest {
		o.steps[k.Workload] = append(steps, revision{N: len(steps) + 1, Digest: k.Digest, Record: recorded(d.Annotations), Fresh: true})
	}
}

// sequence returns the digests workload showed in turn on the watch.
func (o *observer) sequence(workload string) []revision {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.steps[workload]
}

// firstSeen returns when digest first showed on workload.
func (o *observer) firstSeen(workload, digest string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.first[seenKey{workload, digest}]
	return t, ok
}

// recorded reports whether Ripple ever recorded that workload's pods read
// digest (effective).
func (o *observer) recorded(workload, digest string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.records[seenKey{workload, digest}]
	return ok
}

// reads returns the digest Ripple records that workload's pods read now
// (effective), as last seen.
func (o *observer) reads(workload string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := o.current[workload]
	if d == nil {
		return ""
	}
	return effective(d)
}
