package controller

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Events have a client-side budget of their own, apart from
// --kube-api-qps: a fan-out of one change to hundreds of workloads emits
// an Event per rollout (and one per completion), and on the shared budget
// they took it whole for many seconds (300 Events: 14 s at 20/s), holding
// up every other request of the process. A fan-out of 300 is out within
// a few seconds of its rollouts, larger ones at eventQPS. The burst is
// small so that the Events of a fan-out do not take the API server from
// its reload writes, which come first (a burst of 50 instead of 10 made
// the writes of a 300-Deployment fan-out about 50 ms slower).
const (
	eventQPS   = 100
	eventBurst = 10
	// eventQueue bounds the Events waiting for the budget: 100 s of
	// them, a few MiB at most. Past it an Event is dropped and counted.
	eventQueue = 10000
)

// newRecorder returns the recorder of Ripple's Events: events.k8s.io
// Events through a client of their own, paced by a pacedRecorder, stopped
// with ctx.
func newRecorder(ctx context.Context, mgr ctrl.Manager) (events.EventRecorder, error) {
	rc := rest.CopyConfig(mgr.GetConfig())
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter() // the pacedRecorder paces them
	cs, err := eventsv1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("starting the event broadcaster: %w", err)
	}
	p := newPacedRecorder(b.NewRecorder(mgr.GetScheme(), "ripple"), mgr.GetScheme(),
		flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst), eventQueue, mgr.GetLogger().WithName("events"))
	go func() {
		p.run(ctx)
		b.Shutdown()
	}()
	return p, nil
}

// pacedRecorder hands Events to client-go's broadcaster no faster than
// its limiter allows. The broadcaster queues at most 1,000 Events and drops
// the rest while its sink waits for the rate limit one Event at a time: a
// fan-out of thousands of reloads within seconds lost most of its Events.
// Here they wait in a queue of their own instead, as a reference to the
// object and the formatted note, never the object itself.
type pacedRecorder struct {
	next    events.EventRecorder
	scheme  *runtime.Scheme
	limiter flowcontrol.RateLimiter
	queue   chan func()
	log     logr.Logger
	dropped atomic.Int64
}

func newPacedRecorder(next events.EventRecorder, scheme *runtime.Scheme, limiter flowcontrol.RateLimiter, size int, log logr.Logger) *pacedRecorder {
	return &pacedRecorder{next: next, scheme: scheme, limiter: limiter, queue: make(chan func(), size), log: log}
}

// Eventf implements events.EventRecorder. It never blocks.
func (p *pacedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	ref, err := reference.GetReference(p.scheme, regarding)
	if err != nil {
		p.log.Error(err, "not recording an Event on an object without a reference", "reason", reason)
		return
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(p.scheme, related); err != nil {
			rel = nil
		}
	}
	note = fmt.Sprintf(note, args...)
	send := func() {
		if rel == nil {
			p.next.Eventf(ref, nil, eventtype, reason, action, "%s", note)
			return
		}
		p.next.Eventf(ref, rel, eventtype, reason, action, "%s", note)
	}
	select {
	case p.queue <- send:
	default:
		p.drop(ref, reason)
	}
}

func (p *pacedRecorder) drop(ref *corev1.ObjectReference, reason string) {
	if n := p.dropped.Add(1); n%1000 == 1 {
		p.log.Error(nil, "Events queue full: dropping Events", "dropped", n, "reason", reason,
			"object", ref.Namespace+"/"+ref.Name, "queue", cap(p.queue))
	}
}

// run hands the queued Events on, each when the limiter allows, until ctx
// ends.
func (p *pacedRecorder) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case send := <-p.queue:
			if err := p.limiter.Wait(ctx); err != nil {
				return
			}
			send()
		}
	}
}
