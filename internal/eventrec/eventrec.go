// Package eventrec records Ripple's Events as Reloader writes them: core/v1
// Events with Reloader's source components, through a client of their own
// with a budget of its own, paced and queued fairly per namespace so that
// neither a fan-out of thousands of reloads nor a tenant's flood of
// invalid annotations loses or delays the Events of others.
package eventrec

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/ripple-dev/ripple/internal/fairqueue"
	"github.com/ripple-dev/ripple/internal/refs"
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
	// them, a few MiB at most. Past it the namespace with the most Events
	// waiting loses its oldest, counted in ripple_events_dropped_total.
	eventQueue = 10000
	// eventsInFlight bounds the Events handed to the broadcaster and not
	// yet written: its own queue is first in, first out, so when the API
	// server writes fewer than eventQPS a second, Events handed ahead
	// would wait there behind a flooding namespace's, however fair the
	// pacedRecorder's queue.
	eventsInFlight = eventBurst
	// eventSlotWait is how long the pacedRecorder waits for a write to
	// free a slot before it frees them all: the correlator's spam filter
	// drops an Event without a write, so its slot is never freed.
	eventSlotWait = time.Second
)

// New returns the recorder of Ripple's Events: core/v1 Events, as
// Reloader writes them, with Reloader's source component (see
// eventComponent), through a client of their own made from cfg, paced by
// a pacedRecorder, stopped with ctx. onDrop counts each Event dropped.
func New(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, log logr.Logger, onDrop func()) (events.EventRecorder, error) {
	rc := rest.CopyConfig(cfg)
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter() // the pacedRecorder paces them
	rc.ContentType = runtime.ContentTypeProtobuf            // a built-in type, as the control plane sends it
	cs, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	limiter := flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst)
	return startRecorder(ctx, cs.Events(""), scheme, limiter, log, onDrop), nil
}

// startRecorder starts the broadcaster writing to sink and returns its
// pacedRecorder, paced by limiter; both stop with ctx.
func startRecorder(ctx context.Context, sink corev1client.EventInterface, scheme *runtime.Scheme, limiter flowcontrol.RateLimiter,
	log logr.Logger, onDrop func()) *pacedRecorder {
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		// client-go's default spam filter keeps 25 Events per object and
		// then one per 5 minutes: Ripple records two per rollout (Reloaded,
		// RolloutComplete), and the pacedRecorder already bounds the rate.
		BurstSize: eventSpamBurst, QPS: eventSpamQPS,
	}))
	recorders := map[string]record.EventRecorder{}
	for _, c := range eventComponents {
		recorders[c] = b.NewRecorder(scheme, corev1.EventSource{Component: c})
	}
	p := newPacedRecorder(recorders, scheme, limiter, eventQueue, log)
	p.onDrop = onDrop
	p.slots = make(chan struct{}, eventsInFlight)
	b.StartRecordingToSink(writtenSink{EventSink: &corev1client.EventSinkImpl{Interface: sink}, written: p.written})
	go func() {
		p.run(ctx)
		b.Shutdown()
	}()
	return p
}

// The client-side spam filter of the Events of one object: a burst of
// eventSpamBurst, then eventSpamQPS.
const (
	eventSpamBurst = 200
	eventSpamQPS   = 1
)

// Reloader's source components: one per controller, reloader-<resource>.
// Ripple's own Events that name no config (RolloutComplete, ReloadHeld,
// InvalidAnnotation...) have no Reloader controller: their component is
// componentRipple.
const (
	componentConfigMaps = "reloader-configmaps"
	componentSecrets    = "reloader-secrets"
	componentCSI        = "reloader-secretproviderclasspodstatuses"
	componentRipple     = "ripple"
)

var eventComponents = []string{componentConfigMaps, componentSecrets, componentCSI, componentRipple}

// sourceComponents are the config kinds as a workload Event's note names
// them (`ConfigMap "name"`), with their component.
var sourceComponents = []struct{ prefix, component string }{
	{string(refs.ConfigMap) + ` "`, componentConfigMaps},
	{string(refs.Secret) + ` "`, componentSecrets},
	{string(refs.SecretProviderClass) + ` "`, componentCSI},
}

// eventComponent is the source component of an Event: the component of
// the related config's kind when the Event has one, else of the first
// config its note names (a change set that mixes kinds takes its first
// config's, as Reloader, whose controllers are one per kind, would have
// recorded it first), else componentRipple.
func eventComponent(related runtime.Object, note string) string {
	if related != nil {
		switch related.(type) {
		case *corev1.ConfigMap:
			return componentConfigMaps
		case *corev1.Secret:
			return componentSecrets
		}
	}
	component, at := componentRipple, len(note)
	for _, s := range sourceComponents {
		if i := strings.Index(note, s.prefix); i >= 0 && i < at {
			component, at = s.component, i
		}
	}
	return component
}

// pacedRecorder hands Events to client-go's broadcaster no faster than
// its limiter allows. The broadcaster queues at most 1,000 Events and drops
// the rest while its sink waits for the rate limit one Event at a time: a
// fan-out of thousands of reloads within seconds lost most of its Events.
// Here they wait in a queue of their own instead, as a reference to the
// object and the formatted note, never the object itself. The queue is
// fair per namespace: a tenant whose workloads flood it (thousands of
// invalid annotations) loses its own oldest Events, and the Events of
// other namespaces are recorded in turn with its own.
type pacedRecorder struct {
	// next are the broadcaster's recorders by source component.
	next    map[string]record.EventRecorder
	scheme  *runtime.Scheme
	limiter flowcontrol.RateLimiter
	queue   *fairqueue.Queue[func()]
	log     logr.Logger
	dropped atomic.Int64
	// onDrop, when set, counts a dropped Event (a metric).
	onDrop func()
	// slots, when set, hold one token per Event handed to the
	// broadcaster and not yet written (eventsInFlight).
	slots chan struct{}
	clock clock.Clock
}

func newPacedRecorder(next map[string]record.EventRecorder, scheme *runtime.Scheme, limiter flowcontrol.RateLimiter, size int, log logr.Logger) *pacedRecorder {
	return &pacedRecorder{next: next, scheme: scheme, limiter: limiter, queue: fairqueue.New[func()](size), log: log, clock: clock.RealClock{}}
}

// writtenSink tells the pacedRecorder of each write attempt, which frees
// a slot.
type writtenSink struct {
	record.EventSink
	written func()
}

func (s writtenSink) Create(e *corev1.Event) (*corev1.Event, error) {
	defer s.written()
	return s.EventSink.Create(e)
}

func (s writtenSink) Update(e *corev1.Event) (*corev1.Event, error) {
	defer s.written()
	return s.EventSink.Update(e)
}

func (s writtenSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	defer s.written()
	return s.EventSink.Patch(e, data)
}

// written frees a slot; a retried write frees one that is free already.
func (p *pacedRecorder) written() {
	select {
	case <-p.slots:
	default:
	}
}

// acquire takes a slot for an Event to hand on, waiting at most
// eventSlotWait for a write to free one; it is false once ctx ended.
func (p *pacedRecorder) acquire(ctx context.Context) bool {
	if p.slots == nil {
		return true
	}
	wait := p.clock.NewTimer(eventSlotWait)
	defer wait.Stop()
	select {
	case p.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	case <-wait.C():
	}
	// No write for eventSlotWait: the correlator dropped the Events that
	// hold the slots, or the API server is that slow, and the broadcaster
	// queues them.
	for len(p.slots) > 0 {
		p.written()
	}
	p.slots <- struct{}{}
	return true
}

// Eventf implements events.EventRecorder, the interface of Ripple's call
// sites. It never blocks. A core/v1 Event has no action (its reason says
// it) and no related object; related only picks the source component.
func (p *pacedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, _, note string, args ...any) {
	ref, err := reference.GetReference(p.scheme, regarding)
	if err != nil {
		p.log.Error(err, "not recording an Event on an object without a reference", "reason", reason)
		return
	}
	note = fmt.Sprintf(note, args...)
	rec := p.next[eventComponent(related, note)]
	send := func() { rec.Event(ref, eventtype, reason, note) }
	if from, dropped := p.queue.Push(ref.Namespace, send); dropped {
		p.drop(from)
	}
}

// drop counts an Event dropped from namespace's, logging the first of
// each thousand.
func (p *pacedRecorder) drop(namespace string) {
	if p.onDrop != nil {
		p.onDrop()
	}
	if n := p.dropped.Add(1); n%1000 == 1 {
		p.log.Error(nil, "Events queue full: dropping the oldest Events of the namespace with the most waiting",
			"dropped", n, "namespace", namespace)
	}
}

// run hands the queued Events on, each when the limiter allows, until ctx
// ends.
func (p *pacedRecorder) run(ctx context.Context) {
	for {
		send, ok := p.queue.Pop()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-p.queue.Ready():
			}
			continue
		}
		if err := p.limiter.Wait(ctx); err != nil || !p.acquire(ctx) {
			return
		}
		send()
	}
}
