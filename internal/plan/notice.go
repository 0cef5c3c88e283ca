package plan

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Notice is one outcome a plan decided, to be told: the controller emits
// it (Event, log line, alert, metric; controller.emit) and `ripple
// explain` prints it. The stage of For that decided it made it, message
// included; what a reason means, its Event type and its alert level are
// in the registry (package reason).
type Notice struct {
	Reason  reason.Reason
	Message string
	// Configs are the configs it is about, for the alert and the Event's
	// source component.
	Configs []refs.Ref
	// Alert is the level of its alert; reason.None sends none.
	Alert reason.Level
	// Once identifies what it tells (its reason and change set, hold or
	// revert), so that it is told once, not on every requeue.
	Once string
	// Told is set when Ripple told it already (the memory says so):
	// explain still shows it, the controller does not emit it again.
	Told bool
	// AfterWrite is set on a notice of what the plan's write does (a
	// rollback or template change recorded, an approval spent, a dry-run's
	// record): it is told once the write succeeded.
	AfterWrite bool
}

// notice is a notice of r with the registry's alert level.
func notice(r reason.Reason, configs []refs.Ref, format string, args ...any) Notice {
	return Notice{Reason: r, Message: fmt.Sprintf(format, args...), Configs: configs, Alert: reason.Of(r).Alert}
}

// tell adds n to the plan's notices.
func (p *Plan) tell(n Notice) { p.Notices = append(p.Notices, n) }

// Untold are the notices of p the controller emits now: before the write
// (afterWrite false), or once it succeeded.
func (p Plan) Untold(afterWrite bool) []Notice {
	var out []Notice
	for _, n := range p.Notices {
		if !n.Told && n.AfterWrite == afterWrite {
			out = append(out, n)
		}
	}
	return out
}

// Notice is p's notice of reason r, if it has one.
func (p Plan) Notice(r reason.Reason) (Notice, bool) {
	for _, n := range p.Notices {
		if n.Reason == r {
			return n, true
		}
	}
	return Notice{}, false
}

// Verdict is the first notice of p that says why the workload does not
// roll now, or that it does: explain's verdict.
func (p Plan) Verdict() (Notice, bool) {
	for _, n := range p.Notices {
		if reason.Of(n.Reason).NotRolled {
			return n, true
		}
	}
	return Notice{}, false
}

// ChangeNames names changed configs, e.g. `ConfigMap "app"`, `Secret "db"
// (deleted)`.
func ChangeNames(changes []strategy.Change) []string {
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = fmt.Sprintf("%s %q", c.Ref.Kind, c.Ref.Name)
		if c.Deleted {
			names[i] += " (deleted)"
		}
	}
	return names
}

// withDigests names the changed configs with their short digests, e.g.
// `ConfigMap "app" 3f2a9c01b2d4`: the digest of the data (never the data)
// tells which version an approval names. A Secret's is left out
// (DigestOf).
func withDigests(changes []strategy.Change) []string {
	names := ChangeNames(changes)
	for i, c := range changes {
		if !c.Deleted {
			names[i] += DigestOf(c.Ref, c.Hash)
		}
	}
	return names
}

// ShortDigest is the first 12 hex digits of a digest, as Events, explain
// and history show it.
func ShortDigest(sum string) string {
	return sum[:min(len(sum), 12)]
}

// DigestOf is the short digest a notice shows of config ref's data, with
// a space before it: none for a Secret, whose digest nobody needs and an
// Event (readable by the built-in view role) must not offer as an oracle
// of its value. Reloader's Events hold no digest at all.
func DigestOf(ref refs.Ref, sum string) string {
	if ref.Kind == refs.Secret || sum == "" {
		return ""
	}
	return " " + ShortDigest(sum)
}

func changeRefs(changes []strategy.Change) []refs.Ref {
	out := make([]refs.Ref, len(changes))
	for i, c := range changes {
		out[i] = c.Ref
	}
	return out
}

func sourceRefs(sources []SourcePlan) []refs.Ref {
	out := make([]refs.Ref, len(sources))
	for i, sp := range sources {
		out[i] = sp.Ref
	}
	return out
}

// withDigest names a source with its short digest, or its applied one.
func withDigest(sources []SourcePlan, applied bool, suffix string) []string {
	out := make([]string, len(sources))
	for i, sp := range sources {
		d := sp.Digest
		if applied {
			d = sp.Applied
		}
		out[i] = fmt.Sprintf("%s %q%s%s", sp.Ref.Kind, sp.Ref.Name, DigestOf(sp.Ref, d), suffix)
	}
	return out
}

// DeferredText says why and until when a reload is deferred, e.g. `the
// reload window "Mon-Fri 02:00-04:00 Europe/Berlin" (from the namespace)
// is closed; it rolls once, with the latest data, at its next opening,
// Tue 2026-11-24 02:00 CET (2026-11-24T01:00:00Z)`.
func DeferredText(d *Deferred) string {
	if d.Invalid != "" {
		return fmt.Sprintf("the reload window is invalid (%s); it waits until the window is fixed", d.Invalid)
	}
	closed := "is closed"
	if d.Closed {
		closed = "closed before its rollout started"
	}
	return fmt.Sprintf("the reload window %q (from the %s) %s; it rolls once, with the latest data, at its next opening, %s",
		d.Window, d.From, closed, OpeningText(d.Next))
}

// OpeningText is an opening as an absolute time in the window's zone and
// in UTC.
func OpeningText(t time.Time) string {
	return fmt.Sprintf("%s (%s)", t.Format("Mon 2006-01-02 15:04 MST"), t.UTC().Format(time.RFC3339))
}

// deferredNotice is the notice of a reload deferred by the reload window.
func deferredNotice(p Plan) Notice {
	n := notice(reason.ReloadDeferred, changeRefs(p.Changes), "Reload for changes in %s deferred: %s",
		strings.Join(ChangeNames(p.Changes), ", "), DeferredText(p.Deferred))
	n.Once, n.Told = string(reason.ReloadDeferred)+"/"+changeID(p.Changes), !p.Deferred.Began
	return n
}

// holdNotice is the notice of a hold by the flap breaker.
func holdNotice(p Plan) Notice {
	h := p.Hold
	n := notice(reason.ReloadHeld, changeRefs(p.Changes),
		"Reload held: its configs (%s) changed %d times within %s; it rolls once, with the latest data, when they have not changed for %s (%s at the earliest)",
		strings.Join(ChangeNames(p.Changes), ", "), h.Changes, h.Window, h.Quiet, h.Until.UTC().Format(time.RFC3339))
	n.Once, n.Told = string(reason.ReloadHeld)+"/"+p.Storm.ID, !h.Began
	return n
}

// settleNotice is the notice of a change set that waits for the settle
// window of the workload, or for its minimum rollout interval (Spaced):
// told on every reconcile while it waits (a debug log line), and by
// explain.
func settleNotice(in Input, p Plan, window time.Duration, release string) Notice {
	changes, until := strings.Join(ChangeNames(p.Changes), ", "), in.Now.Add(p.Wait).UTC().Format(time.RFC3339)
	switch {
	case release != "":
		return notice(reason.SettleWindow, changeRefs(p.Changes), "Changes in %s wait for the Helm release %s to finish, which may change the pod template too: Ripple looks again at %s, and rolls at %s at the latest",
			changes, release, until, p.Pending.First.Add(ReleaseHoldMax).UTC().Format(time.RFC3339))
	case p.Spaced:
		return notice(reason.SettleWindow, changeRefs(p.Changes), "Changes in %s wait for the minimum rollout interval of %s, set by %s: Ripple reloads at %s",
			changes, p.Interval, setBy(in, in.Keys.MinRolloutInterval, "--min-rollout-interval"), until)
	}
	return notice(reason.SettleWindow, changeRefs(p.Changes), "Changes in %s, last written at %s, wait for the settle window of %s, set by %s: Ripple reloads at %s unless another change comes",
		changes, p.Pending.Last.UTC().Format(time.RFC3339), window, setBy(in, in.Keys.SettleWindow, "--settle-window"), until)
}

// setBy names what sets a workload's duration: its annotation key, when
// it has one, else the flag.
func setBy(in Input, key, flag string) string {
	if v, ok := in.Workload.Annotations[key]; ok {
		return fmt.Sprintf("annotation %q: %q", key, v)
	}
	return flag
}

// resumedNotice is the notice of the end of a hold, made once the plan
// knows whether it rolls.
func resumedNotice(p Plan) Notice {
	next := "the latest data rolls out"
	switch rolls := p.Reloads() || p.WouldReload; {
	case !rolls && len(p.Changes) > 0:
		next = "the latest data rolls out when the minimum rollout interval has passed"
	case !rolls:
		next = "nothing to roll, the configs are back to what the workload runs"
	}
	return notice(reason.ReloadResumed, changeRefs(p.Changes), "The hold ends: %s", next)
}

// pendingNotice is the notice of a change set that waits for an approval:
// what waits, where the manual policy comes from, since when, and the
// command that approves it.
func pendingNotice(in Input, a *Awaiting) Notice {
	_, from, _ := policy(in)
	n := notice(reason.ReloadPending, changeRefs(a.Changes),
		"Reload pending approval (reload policy manual, from the %s): changes in %s, waiting since %s; approve with `%s`",
		from, strings.Join(withDigests(a.Changes), ", "), a.Since.UTC().Format(time.RFC3339), ApproveCommand(in.Workload))
	n.Once, n.Told = string(reason.ReloadPending)+"/"+a.ID, !a.Began
	return n
}

// PauseNotice is the notice of a paused workload, which `ripple explain`
// tells (not an Event): paused by Ripple for its pause period, until it
// resumes it at until, or by its owner (until is zero). ok is false when
// the workload is not paused.
func PauseNotice(in Input) (n Notice, until time.Time, ok bool) {
	w, key := in.Workload, in.Keys.PausedAt
	if !w.Pausable || !w.Paused {
		return Notice{}, time.Time{}, false
	}
	at, marked := w.Annotations[key]
	if !marked {
		return notice(reason.Paused, nil, "spec.paused is set, not by Ripple (no %q): reloads are written on the pod template and roll out when its owner resumes it",
			key), time.Time{}, true
	}
	start, err := time.Parse(time.RFC3339, at)
	period, _ := pausePeriod(in)
	if err != nil || period <= 0 {
		return notice(reason.Paused, nil, "paused by Ripple (%q is %q), without a valid %q: Ripple resumes it now", key, at, in.Keys.PausePeriod), in.Now, true
	}
	until = start.Add(period)
	return notice(reason.Paused, nil, "paused by Ripple at %s for %s (%q): the reloads of the period roll out once when Ripple resumes it at %s",
		start.UTC().Format(time.RFC3339), period, in.Keys.PausePeriod, until.UTC().Format(time.RFC3339)), until, true
}

// supersededNotice is the notice of an approval whose configs' digests
// are not the pending ones: spent by the write, never applied.
func supersededNotice(a *Approving) Notice {
	stale := make([]string, len(a.Stale))
	var configs []refs.Ref
	for i, s := range a.Stale {
		kind, name, _ := strings.Cut(s.Config, "/")
		ref := refs.Ref{Kind: refs.Kind(kind), Name: name}
		stale[i] = fmt.Sprintf("%s %q%s", kind, name, DigestOf(ref, s.Digest))
		configs = append(configs, ref)
	}
	why := "the config changed again since, or its data was written again after the approval (a later resourceVersion, or a write time cleared or set ahead), or nothing of it is pending"
	if a.Expired != "" {
		why = "the approval has expired: " + a.Expired
	}
	n := notice(reason.ApprovalSuperseded, configs,
		"Approval%s of %s not applied: %s; what is pending needs its own approval",
		approvedBy(a), strings.Join(stale, ", "), why)
	n.AfterWrite = true
	return n
}

// approvedBy names who approved, as the approval says: unverified unless
// an admission policy checks it (Settings.ApprovalsVerified).
func approvedBy(a *Approving) string {
	if a == nil || a.By == "" {
		return ""
	}
	if !a.Verified {
		return fmt.Sprintf(" by %s (unverified)", a.By)
	}
	return " by " + a.By
}

// revertAdvice is what to do about an owner that rewrites the template.
const revertAdvice = "let the owner carry the change, or use the restart method evict " +
	"(ripple.dev/restart-method), which restarts the pods without touching the template; `ripple explain` shows the workload"

// revertNotices are the notices of a reload another manager undid (told
// once per rollout of Ripple's), and of a rollout held after MaxAttempts.
func revertNotices(in Input, p *Plan) {
	if len(p.Reverted) > 0 {
		n := notice(reason.ReloadReverted, sourceRefs(p.Reverted),
			"Reload reverted by %s: the pod template no longer carries %s. Its rewrite restarted the pods, which read the current data; Ripple does not write it again and rolls on the next config change; %s",
			lastWriter(in), strings.Join(withDigest(p.Reverted, false, ""), ", "), revertAdvice)
		n.Once = string(reason.ReloadReverted) + "/" + in.OnTemplate
		p.tell(n)
	}
	if p.RevertHeld {
		n := notice(reason.ReloadReverted, changeRefs(p.Changes),
			"Reload held: Ripple rolled %s %d times and %s did not keep it. Ripple holds it until the next config change; %s",
			strings.Join(ChangeNames(p.Changes), ", "), MaxAttempts, lastWriter(in), revertAdvice)
		n.Once, n.Told = "held/"+p.record, !p.HeldNoticed
		p.tell(n)
	}
}

func lastWriter(in Input) string {
	if in.Workload.LastWriter == "" {
		return "another manager"
	}
	return in.Workload.LastWriter
}

// recordNotices are the notices of what the workload's record says
// instead of a rollout: its pod template rolled back, and changes a
// template change applied. The write of the plan that first sees one
// records it, so each is told once, after that write; later plans show
// it told.
func recordNotices(in Input, p *Plan) {
	var back, tpl []SourcePlan
	for _, sp := range p.Sources {
		switch sp.State {
		case RolledBack:
			back = append(back, sp)
		case TemplateApplied:
			tpl = append(tpl, sp)
		}
	}
	if len(back) > 0 {
		built, now := strings.Join(withDigest(back, true, ""), ", "), strings.Join(withDigest(back, false, " (changed since)"), ", ")
		n := notice(reason.RolledBack, sourceRefs(back),
			"Pod template rolled back to a revision built for %s; its pods read the current data: %s. Ripple keeps the rollback and rolls again on the next config change", built, now)
		if rec := in.Workload.Template.Annotations[in.Keys.Pinned]; pinned(in) && rec != "" {
			// The restored template names the copies it was built with.
			n = notice(reason.RolledBack, sourceRefs(back),
				"Pod template rolled back to a revision built for %s; its pods read that data, from the copies it pins (%s), not the current data: %s. Ripple keeps the rollback and rolls again on the next config change", built, rec, now)
		}
		n.AfterWrite, n.Told = true, len(p.RolledBack) == 0 || !p.Writes()
		p.tell(n)
	}
	if len(tpl) > 0 {
		n := notice(reason.ReloadSkipped, sourceRefs(tpl),
			"Changes in %s not reloaded: the pod template was changed after the config (e.g. helm upgrade); its new pods read the new data, so Ripple records them as applied",
			strings.Join(withDigest(tpl, false, ""), ", "))
		n.AfterWrite, n.Told = true, len(p.WithTemplate) == 0 || !p.Writes()
		p.tell(n)
	}
}

// wouldReloadNotice is the notice of the rollout --dry-run or the notify
// policy held back; only the notify policy alerts.
func wouldReloadNotice(in Input, p Plan) Notice {
	by := "reload policy notify"
	if in.DryRun {
		by = "--dry-run"
	}
	n := notice(reason.WouldReload, changeRefs(p.Changes), "Would reload for changes in %s (%s)", strings.Join(ChangeNames(p.Changes), ", "), by)
	n.AfterWrite = true
	if in.DryRun {
		n.Alert = reason.None
	}
	return n
}

// templateFirstNote is added to the Reloaded notice of a plan that rolls
// although the pod template changed while its change set waited.
const templateFirstNote = "; the pod template was changed before the config, so its new pods may have read the old data"

// Written is the notice of p's write as it ended: Reloaded (how says how
// the kind rolled it), ReloadSkipped when the kind rolled nothing
// (skipped says why), or ReloadFail. A plan that does not roll has none.
func (p Plan) Written(how, skipped string, err error) (Notice, bool) {
	if !p.Reloads() {
		return Notice{}, false
	}
	list := strings.Join(ChangeNames(p.Changes), ", ")
	configs := changeRefs(p.Changes)
	switch {
	case err != nil:
		return notice(reason.ReloadFail, configs, "Reload for changes in %s failed: %v", list, err), true
	case skipped != "":
		return notice(reason.ReloadSkipped, configs, "Changes in %s not reloaded: %s", list, skipped), true
	}
	approved, note := "", ""
	if p.Approving != nil && len(p.Approving.Applied) > 0 {
		approved = ", approved" + approvedBy(p.Approving)
	}
	if p.TemplateFirst {
		note = templateFirstNote
	}
	return notice(reason.Reloaded, configs, "Reloaded for changes in %s (%s%s)%s", list, how, approved, note), true
}

// Notice is the notice of a wait for a rollout slot, told when the
// workload joins the line.
func (a Admission) Notice(changes []strategy.Change) Notice {
	n := notice(reason.RolloutQueued, changeRefs(changes), "Changes in %s wait: %s", strings.Join(ChangeNames(changes), ", "), a.Why)
	n.Told = !a.First
	return n
}

// Notice is the notice of the end of a followed rollout: RolloutComplete
// or RolloutStalled; none while it is in progress.
func (pr Progress) Notice() (Notice, bool) {
	took := pr.Took.Round(100 * time.Millisecond)
	switch pr.State {
	case rollout.Complete:
		return notice(reason.RolloutComplete, nil, "Rollout complete after %s", took), true
	case rollout.Stalled:
		return notice(reason.RolloutStalled, nil, "Rollout stalled after %s: %s", took, pr.Reason), true
	}
	return Notice{}, false
}

// Bounds on the warnings one plan tells: an annotation written by anyone
// who may edit a workload must not flood the cluster's Events (the shared
// Event queue drops the oldest). explain still shows them all.
const (
	maxWarnings       = 5
	maxWarningMessage = 1024
)

// warningNotices are the plan's distinct warnings as InvalidAnnotation
// notices, at most maxWarnings of them and each cut at maxWarningMessage
// bytes: told on every plan, as the workload still carries them.
func warningNotices(p *Plan) {
	seen := map[string]bool{}
	told := 0
	for _, w := range p.Warnings {
		if seen[w] {
			continue
		}
		seen[w] = true
		if told++; told <= maxWarnings {
			p.tell(notice(reason.InvalidAnnotation, nil, "%s", cut(w, maxWarningMessage)))
		}
	}
	if more := told - maxWarnings; more > 0 {
		p.tell(notice(reason.InvalidAnnotation, nil, "... and %d more invalid annotations: `ripple explain` lists them all", more))
	}
}

// cut shortens s to at most n bytes, on a rune boundary, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "... (cut)"
	i := n - len(more)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + more
}
