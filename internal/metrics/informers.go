package metrics

import (
	"context"
	"strings"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
)

// EventCounter counts source events once each, for
// reloader_events_received_total: the workload controllers' predicates see
// every event once per workload kind.
type EventCounter struct {
	cache   cache.Cache
	kinds   []refs.Kind
	metrics *Metrics
}

// NewEventCounter returns an EventCounter of the source kinds' informers;
// their series start at 0.
func (m *Metrics) NewEventCounter(c cache.Cache, kinds []refs.Kind) *EventCounter {
	for _, kind := range kinds {
		m.initResource(resourceName(kind))
	}
	return &EventCounter{cache: c, kinds: kinds, metrics: m}
}

// resourceName is a source kind's resource_type label: configmaps, secrets.
func resourceName(kind refs.Kind) string { return strings.ToLower(string(kind)) + "s" }

// Start adds the event handlers and waits for ctx to end.
func (c *EventCounter) Start(ctx context.Context) error {
	for _, kind := range c.kinds {
		inf, err := c.cache.GetInformer(ctx, source.Object(kind))
		if err != nil {
			return err
		}
		resource := resourceName(kind)
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { c.metrics.EventReceived("add", resource, true) },
			UpdateFunc: func(o, n any) {
				oo, _ := o.(client.Object)
				no, _ := n.(client.Object)
				c.metrics.EventReceived("update", resource, oo == nil || no == nil ||
					source.Digest(oo) != source.Digest(no))
			},
			DeleteFunc: func(any) { c.metrics.EventReceived("delete", resource, true) },
		})
		if err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// LeaderGauge sets ripple_leader: runnables that need leader election start
// only on the leader (or at once without leader election). Losing the lead
// ends the process, so the gauge never needs to go back to 0.
type LeaderGauge struct{ Metrics *Metrics }

// Start sets the gauge and waits for ctx to end.
func (l LeaderGauge) Start(ctx context.Context) error {
	l.Metrics.SetLeader(true)
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is true: the gauge is set once this replica leads.
func (LeaderGauge) NeedLeaderElection() bool { return true }
