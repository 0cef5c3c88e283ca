package app

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// probeInterval is how often an informer that lost the API server asks
// whether it is back; probeTimeout how long a probe may take (a loaded
// API server is slow, not gone).
const (
	probeInterval = 250 * time.Millisecond
	probeTimeout  = 2 * time.Second
)

// outage brings the informers back within a probe interval of the API
// server's return. client-go's reflector backs off after each list or
// watch that fails to reach the API server, up to 30 s with jitter, so
// after a 15 s outage it came back up to 25 s late. With outage, a list or
// watch that fails because the API server cannot be reached (connection
// refused, reset or timed out; 500, 503 or 504) while /readyz fails too
// waits until /readyz answers, probed every interval, and is then tried
// once more: the reflector sees a slow call, not a failure, and has no
// back-off to sit out.
type outage struct {
	// ready asks the API server's /readyz.
	ready    func(context.Context) error
	interval time.Duration
	clock    clock.WithTicker

	// The informers waiting together share one probe per half interval.
	mu      sync.Mutex
	checked time.Time
	up      bool
}

// newOutage probes the API server of rc, around the client-side rate
// limit (a probe is no load on the API server: /readyz is not
// rate-limited by priority and fairness either).
func newOutage(rc *rest.Config) (*outage, error) {
	rc = rest.CopyConfig(rc)
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	rc.Timeout = probeTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	ready := func(ctx context.Context) error { return dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() }
	return &outage{ready: ready, interval: probeInterval, clock: clock.RealClock{}}, nil
}

// wrap returns lw, whose lists and watches wait out an outage; lw itself
// with no outage.
func (o *outage) wrap(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	if o == nil {
		return lw
	}
	return waiting{ListerWatcher: lw, ctx: toolscache.ToListerWatcherWithContext(lw), o: o}
}

type waiting struct {
	toolscache.ListerWatcher
	ctx toolscache.ListerWatcherWithContext
	o   *outage
}

func (w waiting) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := w.ctx.ListWithContext(ctx, opts)
	if w.o.waited(ctx, err) {
		return w.ctx.ListWithContext(ctx, opts)
	}
	return obj, err
}

func (w waiting) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	wi, err := w.ctx.WatchWithContext(ctx, opts)
	if w.o.waited(ctx, err) {
		return w.ctx.WatchWithContext(ctx, opts)
	}
	return wi, err
}

// IsWatchListSemanticsUnSupported is lw's: the reflector streams the
// initial list only from a client that can.
func (w waiting) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(w.ListerWatcher)
}

// waited reports whether err says the API server could not be reached
// and /readyz failed too, and the API server then answered /readyz again:
// the call is worth one more try.
func (o *outage) waited(ctx context.Context, err error) bool {
	if err == nil || !unreachable(err) || o.answers(ctx) {
		return false
	}
	log := klog.FromContext(ctx)
	log.V(1).Info("the API server cannot be reached: waiting for it to answer /readyz", "error", err.Error())
	t := o.clock.NewTicker(o.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
		}
		if o.answers(ctx) {
			log.V(1).Info("the API server answers again")
			return true
		}
	}
}

// answers reports whether the API server answers /readyz; a probe less
// than half an interval old stands.
func (o *outage) answers(ctx context.Context) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.checked.IsZero() && o.clock.Since(o.checked) < o.interval/2 {
		return o.up
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	o.up = o.ready(ctx) == nil
	o.checked = o.clock.Now()
	return o.up
}

// unreachable reports whether err may mean that the API server, or its
// etcd, cannot be reached: an error of the transport (no API status), or
// an internal error, unavailable or timed out.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}
