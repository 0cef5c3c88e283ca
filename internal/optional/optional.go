// Package optional follows the APIs that Ripple uses only once the API
// server serves them: Argo Rollouts, OpenShift DeploymentConfigs and the
// Secrets Store CSI driver's pod statuses. A CRD installed after Ripple
// starts is picked up; one removed while it runs stops its reloads without
// stopping Ripple.
package optional

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// discoveryInterval is how often the API server is asked whether an
// enabled optional API is served (or still is).
const discoveryInterval = 10 * time.Second

// API is an optional API and what to do once it is served.
type API struct {
	GVK schema.GroupVersionKind
	// Flag is the flag that enabled it, for the log.
	Flag string
	// Enable starts using the API; it is retried until it succeeds.
	Enable func(context.Context) error
	// Missing, when set, is told that the API is not served, or that
	// Enable failed (err), at each check until it is enabled.
	Missing func(err error)
}

type discoverable struct {
	API
	// enabled is set once enable succeeded; served tracks the last answer,
	// to log changes only.
	enabled, served bool
}

func (it *discoverable) missing(err error) {
	if it.Missing != nil {
		it.Missing(err)
	}
}

// Discoverer enables each optional API once the API server serves it, and
// logs when it goes away (its informer retries until the API returns).
type Discoverer struct {
	client discovery.DiscoveryInterface
	items  []discoverable
	log    logr.Logger
}

// NewDiscoverer returns a Discoverer of apis.
func NewDiscoverer(client discovery.DiscoveryInterface, log logr.Logger, apis ...API) *Discoverer {
	d := &Discoverer{client: client, log: log}
	for _, api := range apis {
		d.items = append(d.items, discoverable{API: api})
	}
	return d
}

// NeedLeaderElection is false: standbys index and cache the optional
// kinds too.
func (d *Discoverer) NeedLeaderElection() bool { return false }

// Start asks the API server every discoveryInterval until ctx ends.
func (d *Discoverer) Start(ctx context.Context) error {
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

func (d *Discoverer) check(ctx context.Context, it *discoverable) {
	served, err := d.serves(it.GVK)
	if err != nil {
		d.log.Error(err, "asking the API server for an optional API", "apiVersion", it.GVK.GroupVersion().String())
		return
	}
	if !served && !it.enabled {
		it.missing(nil)
	}
	switch {
	case !served && it.served && it.enabled:
		d.log.Info("the API is no longer served; its reloads stop until it returns", "flag", it.Flag,
			"apiVersion", it.GVK.GroupVersion().String(), "kind", it.GVK.Kind)
	case !served && it.served:
		d.log.Info("enabled, but the API server does not serve it; Ripple starts using it when it does", "flag", it.Flag,
			"apiVersion", it.GVK.GroupVersion().String(), "kind", it.GVK.Kind)
	case served && !it.enabled:
		if err := it.Enable(ctx); err != nil {
			d.log.Error(err, "starting to watch an optional API; retrying", "flag", it.Flag, "kind", it.GVK.Kind)
			it.missing(err)
			return
		}
		it.enabled = true
		d.log.Info("the API is served; watching it", "flag", it.Flag, "apiVersion", it.GVK.GroupVersion().String(), "kind", it.GVK.Kind)
	case served && !it.served:
		d.log.Info("the API is served again", "flag", it.Flag, "apiVersion", it.GVK.GroupVersion().String(), "kind", it.GVK.Kind)
	}
	it.served = served
}

func (d *Discoverer) serves(gvk schema.GroupVersionKind) (bool, error) {
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
