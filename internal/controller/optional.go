package controller

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/workload"
)

// discoveryInterval is how often the API server is asked whether an
// enabled optional API is served (or still is).
const discoveryInterval = 10 * time.Second

type discoverable struct {
	gvk    schema.GroupVersionKind
	flag   string
	enable func(context.Context) error
	// enabled is set once enable succeeded; served tracks the last answer,
	// to log changes only.
	enabled, served bool
}

// discoverer enables each optional API once the API server serves it, and
// logs when it goes away: a CRD installed after Ripple starts is picked up,
// one removed while it runs stops its reloads without stopping Ripple (its
// informer retries until the CRD returns).
type discoverer struct {
	setup  *setup
	client discovery.DiscoveryInterface
	items  []discoverable
	log    logr.Logger
}

// NeedLeaderElection: standbys index and cache the optional kinds too.
func (d *discoverer) NeedLeaderElection() bool { return false }

func (d *discoverer) Start(ctx context.Context) error {
	for i := range d.items {
		d.items[i].served = true // so that absence is logged once
	}
	for {
		for i := range d.items {
			d.check(ctx, &d.items[i])
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(discoveryInterval):
		}
	}
}

func (d *discoverer) check(ctx context.Context, it *discoverable) {
	served, err := d.serves(it.gvk)
	if err != nil {
		d.log.Error(err, "asking the API server for an optional API", "apiVersion", it.gvk.GroupVersion().String())
		return
	}
	switch {
	case !served && it.served && it.enabled:
		d.log.Info("the API is no longer served; its reloads stop until it returns", "flag", it.flag,
			"apiVersion", it.gvk.GroupVersion().String(), "kind", it.gvk.Kind)
	case !served && it.served:
		d.log.Info("enabled, but the API server does not serve it; Ripple starts using it when it does", "flag", it.flag,
			"apiVersion", it.gvk.GroupVersion().String(), "kind", it.gvk.Kind)
	case served && !it.enabled:
		if err := it.enable(ctx); err != nil {
			d.log.Error(err, "starting to watch an optional API; retrying", "flag", it.flag, "kind", it.gvk.Kind)
			return
		}
		it.enabled = true
		d.log.Info("the API is served; watching it", "flag", it.flag, "apiVersion", it.gvk.GroupVersion().String(), "kind", it.gvk.Kind)
	case served && !it.served:
		d.log.Info("the API is served again", "flag", it.flag, "apiVersion", it.gvk.GroupVersion().String(), "kind", it.gvk.Kind)
	}
	it.served = served
}

func (d *discoverer) serves(gvk schema.GroupVersionKind) (bool, error) {
	list, err := d.client.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind {
			return true, nil
		}
	}
	return false, nil
}

// recoverer is a kind that leaves records of unfinished reloads behind a
// restart (a Job being re-created).
type recoverer interface {
	Recover(ctx context.Context, c client.Client, namespaces []string) error
}

// recovery finishes, once on the leader, the reloads a previous leader
// left unfinished.
type recovery struct {
	kind       recoverer
	client     client.Client
	namespaces []string
}

func (r *recovery) Start(ctx context.Context) error {
	log := log.FromContext(ctx).WithName("recovery")
	for delay := time.Second; ; delay = min(2*delay, time.Minute) {
		err := r.kind.Recover(ctx, r.client, r.namespaces)
		if err == nil {
			return nil
		}
		log.Error(err, "finishing interrupted reloads; retrying", "in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// indexWorkloadRef indexes Rollouts by the Deployment they take their
// template from.
const indexWorkloadRef = "ripple.dev/workload-ref"

// requestsViaTemplateRef maps the Deployments that depend on a config (by
// their own index) to the workloads of r.Kind that take their template
// from one of them.
func (r *Reconciler) requestsViaTemplateRef(ctx context.Context, ns string, keys []string) []reconcile.Request {
	var reqs []reconcile.Request
	for _, key := range keys {
		deps := workload.Deployment.NewList()
		if err := r.Client.List(ctx, deps, client.InNamespace(ns), client.MatchingFields{indexConfigs: key}); err != nil {
			log.FromContext(ctx).Error(err, "listing Deployments from the cache", "index", key)
			continue
		}
		for _, dep := range objectNames(deps) {
			reqs = append(reqs, r.requestsForTemplateRef(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep}})...)
		}
	}
	return reqs
}

// requestsForTemplateRef maps a Deployment to the workloads of r.Kind
// that take their template from it.
func (r *Reconciler) requestsForTemplateRef(ctx context.Context, dep client.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(dep.GetNamespace()), client.MatchingFields{indexWorkloadRef: dep.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing workloads by workloadRef from the cache", "kind", r.Kind.Name())
		return nil
	}
	var reqs []reconcile.Request
	for _, name := range objectNames(list) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: dep.GetNamespace(), Name: name}})
	}
	return reqs
}
