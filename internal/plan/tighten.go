package plan

import (
	"fmt"
	"time"

	"github.com/ripple-dev/ripple/internal/window"
)

// Tighten-only (Settings.TightenOnly, --tighten-only): a workload's own
// reload-policy and reload-window annotations (on its metadata or its pod
// template) may only tighten what would govern it without them, its
// floor: its Namespace's annotation, else the flag's value. Namespaces
// are cluster-scoped and usually written by a platform team, workloads by
// their owners, so the floor is the platform team's word.
//
//   - policy: auto < manual < notify (notify rolls nothing at all); a
//     looser workload policy is not taken, the floor's governs.
//   - window: a workload's window must lie within the floor's over the
//     coming horizon (two weeks, so that a weekly window around a DST
//     change is seen whole); one that would open where the floor is
//     closed, or removes it ("" or always), is not taken.
//
// Either way the plan warns (InvalidAnnotation), naming the annotation.

// tightenHorizon is how far ahead a workload's window is compared with
// its floor's: every opening of a weekly window, twice.
const tightenHorizon = 15 * 24 * time.Hour

// floor is the value of a governing setting without the workload's own
// annotations: its Namespace's, else def (the flag's).
func (w Workload) floor(key, def string) (value, from string) {
	if v, ok := w.NamespaceAnnotations[key]; ok {
		return v, FromNamespace
	}
	return def, FromFlag
}

// strictness orders the policies by how much they hold back.
func strictness(p Policy) int {
	switch p {
	case Manual:
		return 1
	case Notify:
		return 2
	}
	return 0
}

// tightPolicy applies tighten-only to a workload's own policy pol (value
// v, from): the floor's policy when pol is looser, with a warning.
func tightPolicy(in Input, pol Policy, v, from string) (Policy, string, string) {
	if !in.TightenOnly || from != FromWorkload && from != FromTemplate {
		return pol, from, ""
	}
	fv, ffrom := in.Workload.floor(in.Keys.ReloadPolicy, in.ReloadPolicy)
	fpol, err := ParsePolicy(fv)
	if err != nil {
		fpol = Manual // an invalid policy counts as manual
	}
	if strictness(pol) >= strictness(fpol) {
		return pol, from, ""
	}
	return fpol, ffrom, fmt.Sprintf("%s: %q would loosen the reload policy %q of the %s (--tighten-only: a workload may only tighten it); the %s's applies",
		governingAnnotation(in.Keys.ReloadPolicy, from), v, fpol, ffrom, ffrom)
}

// governedWindow is a workload's reload window: the schedule, its value as
// written and where it came from, why it is invalid, and why the
// workload's own window was not taken (tighten-only).
type governedWindow struct {
	schedule    window.Schedule
	value, from string
	err         error
	loosened    string
}

// tightWindow applies tighten-only to the workload's own window g: the
// floor's window governs instead when g's would open where the floor's is
// closed before now+tightenHorizon, or removes it.
func tightWindow(w Workload, s Settings, g governedWindow, now time.Time) governedWindow {
	if !s.TightenOnly || g.from != FromWorkload && g.from != FromTemplate || g.err != nil {
		return g
	}
	f := parsedWindow(s, w.floor)
	if f.err == nil && within(g.schedule, f.schedule, now) {
		return g
	}
	f.loosened = fmt.Sprintf("%s: %q would widen or remove the reload window %q of the %s (--tighten-only: a workload may only narrow it); the %s's applies",
		governingAnnotation(s.Keys.ReloadWindow, g.from), g.value, f.value, f.from, f.from)
	return f
}

// within reports whether every opening of inner from now to
// now+tightenHorizon lies in an opening of outer.
func within(inner, outer window.Schedule, now time.Time) bool {
	switch {
	case outer.Always():
		return true
	case inner.Always():
		return false
	}
	end := now.Add(tightenHorizon)
	for t := inner.Next(now); !t.IsZero() && t.Before(end); t = inner.Next(t) {
		closes := inner.End(t)
		if !outer.Open(t) || outer.End(t).Before(closes) {
			return false
		}
		t = closes
	}
	return true
}
