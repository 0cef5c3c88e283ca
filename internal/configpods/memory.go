package configpods

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	rsource "github.com/ripple-dev/ripple/internal/source"
)

// The reasons of the registry this controller tells on the config.
const (
	reasonEvicted   = reason.PodsEvicted
	reasonRestarted = reason.PodsRestarted
	reasonBlocked   = reason.EvictionBlocked
	reasonInvalid   = reason.InvalidAnnotation
	reasonFailed    = reason.RestartFailed
)

// change is config k's change as obj shows it: the time its data
// changed, zero while it has not. A digest seen to change is a change at
// its last data write (managedFields), or now when that is older. A
// config seen for the first time (at start, or once annotated) changed at
// its last data write, unless that was its creation: so after a Ripple
// restart a restart interrupted goes on, and pods older than the config's
// data are restarted.
func (c *Controller) change(k Key, obj client.Object) seen {
	d, written := rsource.Digest(obj), rsource.Written(obj)
	now := c.env.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.changes[k]
	switch {
	case ok && s.digest == d:
		return s
	case ok:
		s = seen{digest: d, at: written}
		if !written.After(now.Add(-time.Minute)) {
			s.at = now // the write time is stale or unknown: seen now
		}
	default:
		s = seen{digest: d}
		if written.After(obj.GetCreationTimestamp().Time) {
			s.at = written
		}
	}
	c.changes[k] = s
	return s
}

// forget forgets config k: gone, or no longer annotated.
func (c *Controller) forget(k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.changes, k)
}

// evicted notes that config k's change ch evicted a pod.
func (c *Controller) evicted(k Key, ch seen) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.changes[k]; ok && s.at.Equal(ch.at) {
		s.evicted = true
		c.changes[k] = s
	}
}

// done reports whether config k's change ch evicted pods and its end was
// not told yet, and notes it told.
func (c *Controller) done(k Key, ch seen) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.changes[k]
	if !ok || !s.at.Equal(ch.at) || !s.evicted {
		return false
	}
	s.evicted = false
	c.changes[k] = s
	return true
}

// warnOnce tells a Warning (or Event) of what on config obj once per
// change and message.
func (c *Controller) warnOnce(ctx context.Context, obj client.Object, k Key, ch seen, what string, r reason.Reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	once := fmt.Sprintf("%s/%s/%s/%s/%d/%s", k.Kind, k.Namespace, k.Name, what, ch.at.UnixNano(), msg)
	c.mu.Lock()
	if c.told[once] {
		c.mu.Unlock()
		return
	}
	if len(c.told) >= maxTold {
		c.told = map[string]bool{}
	}
	c.told[once] = true
	c.mu.Unlock()
	c.tell(ctx, obj, k, r, "%s", msg)
}

// tell tells a notice of reason r on config obj, through the emitter.
func (c *Controller) tell(ctx context.Context, obj client.Object, k Key, r reason.Reason, format string, args ...any) {
	c.env.Tell(ctx, string(k.Kind), obj, plan.Notice{Reason: r, Message: fmt.Sprintf(format, args...)})
}
