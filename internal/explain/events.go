package explain

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/reason"
)

// ripples reports whether an Event reason is one of Ripple's (the
// registry's).
func ripples(r string) bool {
	info, ok := reason.Lookup(reason.Reason(r))
	return ok && info.Event
}

// ClusterEvents returns an Explainer's Events: the last n of Ripple's
// events on a workload, newest first, read from the API server. Ripple
// records them as core/v1 Events, as Reloader does, selected here by the
// object they are about.
func ClusterEvents(r client.Reader, n int) func(ctx context.Context, kind string, obj client.Object) ([]Event, error) {
	return func(ctx context.Context, kind string, obj client.Object) ([]Event, error) {
		list := &corev1.EventList{}
		err := r.List(ctx, list, client.InNamespace(obj.GetNamespace()),
			client.MatchingFields{"involvedObject.kind": kind, "involvedObject.name": obj.GetName()})
		if err != nil {
			return nil, err
		}
		var out []Event
		for i := range list.Items {
			e := &list.Items[i]
			if e.InvolvedObject.UID != "" && e.InvolvedObject.UID != obj.GetUID() || !ripples(e.Reason) {
				continue // of an earlier object of that name, or not Ripple's
			}
			out = append(out, Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Time: eventTime(e), Count: eventCount(e)})
		}
		slices.SortStableFunc(out, func(a, b Event) int { return b.Time.Compare(a.Time) })
		return out[:min(n, len(out))], nil
	}
}

// eventTime is when the event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	t := e.CreationTimestamp.Time
	for _, c := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time} {
		if c.After(t) {
			t = c
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

func eventCount(e *corev1.Event) int32 {
	if e.Series != nil {
		return e.Series.Count
	}
	return e.Count
}
