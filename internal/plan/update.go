package plan

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/ripple-dev/ripple/internal/workload"
)

// update builds the one write of a plan whose settle window has closed,
// and returns when to look again to resume a pause. Under the evict and
// delete restart methods it builds no template: the write is the record
// and the restart time, and the Restart the controller carries out.
func update(in Input, p Plan, period time.Duration) (workload.Update, time.Duration) {
	var u workload.Update
	tpl := in.Workload.Template
	switch {
	case len(p.Changes) == 0:
	case in.Workload.Restart.Pods():
		u.Restart = restartNow(in.Workload, in.Now)
	default:
		tpl = tpl.DeepCopy()
		in.Strategy.Apply(tpl, p.Changes, in.Now)
		u.Template = tpl
	}
	u.Annotations = records(in, p.Sources, tpl)
	if u.Template != nil && equality.Semantic.DeepEqual(in.Workload.Template, u.Template) {
		// e.g. the delete of a source whose env var was never written
		u.Template = nil
	}
	if u.Restart != nil {
		at := u.Restart.At.Format(time.RFC3339)
		if u.Annotations == nil {
			u.Annotations = map[string]*string{}
		}
		u.Annotations[in.Keys.RestartedAt] = &at
	}
	return u, pause(in, &u, period)
}

// dryRun is the write of a dry-run plan: only the record of what the
// workload shows, as if the changes had not happened (a changed source keeps
// its applied digest, a created one is left out), so that turning dry-run
// off rolls each held-back change once. A workload Ripple paused before
// dry-run was switched on is still resumed when its period ends: that
// finishes an earlier rollout rather than starting one, and leaving it
// paused would hold back every later rollout of its owner too.
func dryRun(in Input, p Plan, period time.Duration) (workload.Update, time.Duration) {
	sources := make([]SourcePlan, 0, len(p.Sources))
	for _, sp := range p.Sources {
		switch sp.State {
		case Changed:
			sp.Digest = sp.Applied
		case Created:
			continue
		}
		sources = append(sources, sp)
	}
	u := workload.Update{Annotations: records(in, sources, in.Workload.Template)}
	return u, pause(in, &u, period) // with no template write, pause only resumes
}

// records returns the writes of the applied record and the aliases, nil
// when there are none.
func records(in Input, sources []SourcePlan, tpl *corev1.PodTemplateSpec) map[string]*string {
	out := map[string]*string{}
	if v := record(in, sources, tpl); v != nil {
		out[in.Keys.Applied] = v
	}
	if v := aliasWrite(in, sources); v != nil {
		out[in.Keys.AppliedAlias] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// pausePeriod returns the pause period of a workload that can be paused;
// 0 when it has none. An invalid value gives a warning, and the reload then
// happens without a pause (Reloader drops the reload instead).
func pausePeriod(in Input) (time.Duration, string) {
	if !in.Workload.Pausable {
		return 0, ""
	}
	v, ok := in.Workload.Annotations[in.Keys.PausePeriod]
	if !ok {
		return 0, ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return 0, fmt.Sprintf("annotation %q: %q is not a duration such as 30s or 5m; reloading without a pause", in.Keys.PausePeriod, v)
	}
	return d, ""
}

// pause adds the pause-period writes to u and returns when the workload
// must be looked at again to resume it. A reload of a running workload
// pauses it and records when (the paused-at annotation), so that the
// reloads of the period roll out once, when it is resumed. The schedule is
// only that annotation: it holds across restarts and failovers, and a
// manual resume or a re-created workload leaves nothing behind.
func pause(in Input, u *workload.Update, period time.Duration) time.Duration {
	if !in.Workload.Pausable {
		return 0
	}
	key := in.Keys.PausedAt
	set := func(v *string) {
		if u.Annotations == nil {
			u.Annotations = map[string]*string{}
		}
		u.Annotations[key] = v
	}
	at, marked := in.Workload.Annotations[key]
	switch {
	case in.Workload.Paused && marked:
		// Paused by Ripple: a fixed window from the first reload, not
		// extended by later ones.
		t, err := time.Parse(time.RFC3339, at)
		if err == nil && period > 0 && in.Now.Before(t.Add(period)) {
			return t.Add(period).Sub(in.Now)
		}
		resume := false
		u.Paused = &resume
		set(nil)
		return 0
	case marked:
		set(nil) // resumed by someone else
	case in.Workload.Paused:
		return 0 // paused by its owner, who resumes it
	}
	if u.Template == nil || period <= 0 || in.Workload.KeepsTemplate {
		return 0 // a reload that restarts pods has no template rollout to hold
	}
	paused := true
	u.Paused = &paused
	stamp := in.Now.UTC().Format(time.RFC3339)
	set(&stamp)
	return period
}
