package controller

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/workload"
)

// pausePeriod returns the pause-period of a workload that can be paused;
// 0 when it has none. An invalid value gives a warning, and the reload then
// happens without a pause (Reloader drops the reload instead).
func (r *Reconciler) pausePeriod(obj client.Object) (time.Duration, string) {
	if _, ok := r.Kind.(workload.Pauser); !ok {
		return 0, ""
	}
	v, ok := obj.GetAnnotations()[r.Config.Keys.PausePeriod]
	if !ok {
		return 0, ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return 0, fmt.Sprintf("annotation %q: %q is not a duration such as 30s or 5m; reloading without a pause",
			r.Config.Keys.PausePeriod, v)
	}
	return d, ""
}

// pause adds the pause-period writes to u and returns when the workload
// must be looked at again to resume it. A reload of a running workload
// pauses it and records when (the paused-at annotation), so that the
// reloads of the period roll out once, when it is resumed. The schedule is
// only that annotation: it holds across restarts and failovers, and a
// manual resume or a re-created workload leaves nothing behind.
func (r *Reconciler) pause(obj client.Object, u *workload.Update, period time.Duration) time.Duration {
	pz, ok := r.Kind.(workload.Pauser)
	if !ok {
		return 0
	}
	key := r.Config.Keys.PausedAt
	set := func(v *string) {
		if u.Annotations == nil {
			u.Annotations = map[string]*string{}
		}
		u.Annotations[key] = v
	}
	now := r.Clock.Now()
	at, marked := obj.GetAnnotations()[key]
	paused := pz.Paused(obj)
	switch {
	case paused && marked:
		// Paused by Ripple: a fixed window from the first reload, not
		// extended by later ones.
		t, err := time.Parse(time.RFC3339, at)
		if err == nil && period > 0 && now.Before(t.Add(period)) {
			return t.Add(period).Sub(now)
		}
		resume := false
		u.Paused = &resume
		set(nil)
		return 0
	case marked:
		set(nil) // resumed by someone else
	case paused:
		return 0 // paused by its owner, who resumes it
	}
	if u.Template == nil || period <= 0 {
		return 0
	}
	pause := true
	u.Paused = &pause
	stamp := now.UTC().Format(time.RFC3339)
	set(&stamp)
	return period
}
