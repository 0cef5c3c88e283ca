package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/internal/config"
)

// newLeaseLock returns client-go's Lease lock, made to notice a release at
// once: a standby that finds the Lease held waits on a watch of it (for up
// to a retry period) instead of only sleeping, so when a leader that shuts
// down releases the Lease, the standby takes it within moments rather than
// at its next jittered retry (up to 2.2 retry periods).
func newLeaseLock(rc *rest.Config, cfg config.Config) (resourcelock.Interface, error) {
	ns := cfg.LeaderElectionNamespace
	if ns == "" {
		b, err := os.ReadFile(config.InClusterNamespace)
		if err != nil {
			return nil, fmt.Errorf("leader election needs a namespace for its Lease: set --leader-election-namespace or $POD_NAMESPACE (not running in a pod: %w)", err)
		}
		ns = strings.TrimSpace(string(b))
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	rc = rest.AddUserAgent(rest.CopyConfig(rc), "leader-election")
	// Not the process's token bucket (--kube-api-qps): behind a burst of
	// reconcile reads, a renewal waited for it past the renew deadline and
	// the leader lost its Lease and exited. The elector makes one request
	// per retry period; it needs no client-side limit.
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	rc.ContentType = runtime.ContentTypeProtobuf // a built-in type (NewManager)
	watcher, err := coordinationv1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	// A hung request must not outlive the renew deadline (as in
	// controller-runtime); watches have their own bound.
	rc.Timeout = max(cfg.RenewDeadline/2, time.Second)
	leases, err := coordinationv1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: cfg.LeaderElectionID},
		Client:     leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())},
	}
	return &watchfulLock{LeaseLock: lock, watcher: watcher, wait: cfg.RetryPeriod}, nil
}

type watchfulLock struct {
	*resourcelock.LeaseLock
	watcher coordinationv1client.LeasesGetter
	wait    time.Duration
}

// Get waits, when another replica holds the Lease, until it is released or
// handed on, or for a retry period at most; then it reads the Lease.
func (l *watchfulLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	leases := l.watcher.Leases(l.LeaseMeta.Namespace)
	cur, err := leases.Get(ctx, l.LeaseMeta.Name, metav1.GetOptions{})
	if err == nil && heldByOther(cur, l.Identity()) {
		l.waitForChange(ctx, leases, cur)
	}
	return l.LeaseLock.Get(ctx)
}

func (l *watchfulLock) waitForChange(ctx context.Context, leases coordinationv1client.LeaseInterface, cur *coordinationv1.Lease) {
	ctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	w, err := leases.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", cur.Name).String(),
		ResourceVersion: cur.ResourceVersion,
	})
	if err != nil {
		return
	}
	defer w.Stop()
	holder := ptr.Deref(cur.Spec.HolderIdentity, "")
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Deleted || ev.Type == watch.Error {
				return
			}
			if lease, ok := ev.Object.(*coordinationv1.Lease); ok && ptr.Deref(lease.Spec.HolderIdentity, "") != holder {
				return
			}
		}
	}
}

func heldByOther(l *coordinationv1.Lease, me string) bool {
	h := ptr.Deref(l.Spec.HolderIdentity, "")
	return h != "" && h != me
}
