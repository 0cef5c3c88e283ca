package explain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Facts are what a report is built from.
type Facts struct {
	Kind   Kind
	Object client.Object
	// Template is the pod template reloads are written on; when it is nil,
	// NoTemplate says why.
	Template   *corev1.PodTemplateSpec
	NoTemplate string
	// Input and Plan are the planner's, as the controller would have them.
	Input plan.Input
	Plan  plan.Plan
	// Rollout is how the workload's rollout stands; nil where it cannot
	// be read (manifest files hold no status): complete.
	Rollout *rollout.Status
	// Written is when each source was last written.
	Written map[refs.Ref]time.Time
	// Unselected are the sources, with their labels, that exist but are
	// outside --resource-label-selector: the controller does not see them.
	Unselected map[refs.Ref]string
	// OutOfScope says why the namespace is out of scope; empty when in.
	OutOfScope string
	Settings   metainfo.Settings
	Events     []Event
	Now        time.Time
}

// The waits of a workload.
const (
	waitSettle = "settleWindow"
	waitPause  = "pausePeriod"
	waitOwner  = "owner"
	waitHold   = "hold"
	waitSlot   = "rolloutSlot"
	// waitRestart is a restart method's restart of the pods in progress.
	waitRestart = "restart"
)

// digestLen is how much of a digest is shown: enough to compare.
const digestLen = 12

// Build builds the report of a workload from its facts. It reads nothing.
func Build(f Facts) Report {
	r := Report{
		Workload: workload.RefTo(f.Kind, f.Object),
		Sources:  sources(f), Policy: policy(f), Waiting: waiting(f), Warnings: f.Plan.Warnings,
		Settings: f.Settings.Shown, SettingsFrom: f.Settings.From, Events: ages(f.Events, f.Now),
	}
	if m := f.Input.Workload.Restart; m.Pods() {
		r.Restart = &Restart{Method: m.Method, MaxUnavailable: m.MaxUnavailable, Containers: m.Containers}
		switch m.Method {
		case workload.RestartInPlace:
			r.Restart.Fallback = m.Fallback
		case workload.RestartReloadAction:
			r.Restart.Fallback, r.Restart.Action, r.Restart.Delay = m.Fallback, m.Action.String(), m.Delay.String()
		}
		if !m.At.IsZero() {
			r.Restart.Since = &m.At
		}
	}
	if n := f.Settings.Config.Shard.Count; n > 1 {
		r.Shard = &Shard{Index: dependents.ShardOf(r.Workload.Namespace, n), Count: n}
	}
	if r.Restart != nil && r.Restart.Since != nil {
		which := "the pods created before"
		switch r.Restart.Method {
		case workload.RestartInPlace:
			which = "the containers of the pods, not restarted since"
		case workload.RestartReloadAction:
			which = "by their reload action the pods created before"
		}
		r.Waiting = append(r.Waiting, Wait{For: waitRestart, Setting: f.Settings.Plan.Keys.RestartMethod, Message: fmt.Sprintf(
			"the restart method %s is restarting %s %s, up to %d pods at a time",
			r.Restart.Method, which, stamp(*r.Restart.Since), r.Restart.MaxUnavailable)})
	}
	r.ReloadWindow = reloadWindow(f)
	r.ReloadPolicy = reloadPolicy(f)
	r.Pinning = pinning(f)
	r.Notices = notices(f.Plan)
	var st standing.Standing
	st, r.Verdict = verdict(f, r)
	r.State, r.Reason = st.State, st.Reason
	return r
}

// pinning is the pinning of a workload that asks for it; nil when it
// does not.
func pinning(f Facts) *Pinning {
	if !plan.AsksToPin(f.Input) {
		return nil
	}
	p := &Pinning{On: f.Input.Pinning, Refused: plan.PinRefused(f.Input)}
	if f.Template != nil {
		p.Copies = f.Template.Annotations[f.Input.Keys.Pinned]
	}
	return p
}

// notices are the plan's notices as the report shows them; the invalid
// annotations are its Warnings.
func notices(p plan.Plan) []Notice {
	var out []Notice
	for _, n := range p.Notices {
		if n.Reason == reason.InvalidAnnotation {
			continue
		}
		info := reason.Of(n.Reason)
		t := ""
		if info.Event {
			t = info.Type()
		}
		out = append(out, Notice{Reason: string(n.Reason), Type: t, Message: n.Message, Told: n.Told})
	}
	return out
}

// sources are the planned sources, then those the template uses that
// were not planned (a kind this Ripple does not watch).
func sources(f Facts) []Source {
	out := []Source{}
	var uses []refs.Use
	if f.Template != nil {
		uses = refs.Uses(&f.Template.Spec)
	}
	for _, fr := range f.Input.Workload.FieldRefs {
		uses = append(uses, fr.Use())
	}
	seen := map[refs.Ref]bool{}
	for i, sp := range f.Plan.Sources {
		src := f.Input.Sources[i]
		seen[sp.Ref] = true
		s := Source{
			Kind: string(sp.Ref.Kind), Name: sp.Ref.Name, Found: src.Found, Uses: usesOf(uses, sp.Ref),
			Digest: f.shown(sp.Ref, cmpOr(sp.Digest, src.Digest)), Applied: f.shown(sp.Ref, sp.Applied), State: string(sp.State),
			Reload: sp.Decision.Reload, Reason: string(sp.Decision.Reason), Message: sp.Decision.Message, Keys: sp.Keys,
			Hint: hint(f, src, sp.Decision),
		}
		if t, ok := f.Written[sp.Ref]; ok && !t.IsZero() {
			s.LastWrite = &t
		}
		if l, ok := f.Unselected[sp.Ref]; ok {
			unselected(&s, l, f.Settings)
		}
		out = append(out, s)
	}
	for _, u := range uses {
		if !seen[u.Ref] {
			seen[u.Ref] = true
			out = append(out, notWatched(f.Settings, u.Ref, usesOf(uses, u.Ref)))
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// shown is the short digest explain shows of config ref's data: none of
// a Secret's with --digest=hmac-sha256, under which no output of Ripple
// holds a digest of a Secret (docs/security.md).
func (f Facts) shown(ref refs.Ref, sum string) string {
	if ref.Kind == refs.Secret && f.Settings.Config.Digest == digest.HMACSHA256 {
		return ""
	}
	return short(sum)
}

func short(sum string) string {
	if len(sum) > digestLen {
		return sum[:digestLen]
	}
	return sum
}

func usesOf(uses []refs.Use, ref refs.Ref) []Use {
	out := []Use{}
	for _, u := range uses {
		if u.Ref == ref {
			out = append(out, Use{Container: u.Container, Init: u.Init, Via: string(u.Via), Volume: u.Volume, Keys: u.Keys, Field: u.Field})
		}
	}
	return out
}

// notWatchedState is the state of a source of a kind the Ripple
// explained does not watch (the planner has none for it): its reason's
// word.
const notWatchedState = string(reason.NotWatched)

// notWatched is a source of a kind the Ripple explained does not watch.
func notWatched(s metainfo.Settings, ref refs.Ref, uses []Use) Source {
	src := Source{Kind: string(ref.Kind), Name: ref.Name, Uses: uses, State: notWatchedState, Reason: string(reason.NotWatched)}
	switch {
	case ref.Kind == refs.SecretProviderClass && !s.Config.CSI:
		src.Message = fmt.Sprintf("SecretProviderClasses reload workloads only with --enable-csi-integration; %s", s.Flag("enable-csi-integration"))
	case ref.Kind == refs.SecretProviderClass:
		src.Reason = string(reason.RotationUnknown)
		src.Message = "explain cannot tell a SecretProviderClass rotation: the controller sees it in SecretProviderClassPodStatus changes and keeps it in memory"
	default:
		src.Message = fmt.Sprintf("%ss are not watched: %s", ref.Kind, s.Flag("resources-to-ignore"))
	}
	return src
}

// unselected turns the decision of a source outside
// --resource-label-selector, with labels l, into the reason it is not seen.
func unselected(s *Source, l string, settings metainfo.Settings) {
	if s.Reload {
		s.Hint = "with its labels selected, the decision would be: " + s.Message
	}
	s.Found, s.Reload, s.Reason = true, false, string(reason.NotSelected)
	s.Message = fmt.Sprintf("%s %q (labels %s) is not selected by %s: Ripple does not watch it", s.Kind, s.Name, l, settings.Flag("resource-label-selector"))
}

// hint names the likely mistake behind a NotOptedIn decision: search
// without match, auto set to something not true, typed auto of the
// other kind.
func hint(f Facts, src plan.Source, d decide.Decision) string {
	if d.Reason != decide.NotOptedIn {
		return ""
	}
	keys := f.Settings.Plan.Keys
	kind := src.Ref.Kind
	meta, tpl := f.Object.GetAnnotations(), tplAnnotations(f.Template)
	p := annotation.Parse(keys, kind, meta, tpl)
	ann := meta
	if p.FromTemplate {
		ann = tpl
	}
	what := fmt.Sprintf("%s %q", kind, src.Ref.Name)
	if p.Search {
		return fmt.Sprintf("the workload has %q set to \"true\", but %s does not have %q set to \"true\"", keys.Search, what, keys.Match)
	}
	if p.AutoSet {
		key := keys.Auto
		if _, ok := ann[key]; !ok {
			key = keys.TypedAutoKey(kind)
		}
		h := fmt.Sprintf("%q is %q, which is not true", key, ann[key])
		if f.Settings.Plan.AutoReloadAll {
			h += "; any value also opts the workload out of --auto-reload-all"
		}
		return h
	}
	for _, other := range refs.Kinds() {
		if b, err := strconv.ParseBool(ann[keys.TypedAutoKey(other)]); other != kind && err == nil && b {
			return fmt.Sprintf("%q applies to %ss only; %s needs %q or %q", keys.TypedAutoKey(other), other, what, keys.TypedAutoKey(kind), keys.Auto)
		}
	}
	return ""
}

// ages sets the age of each event.
func ages(events []Event, now time.Time) []Event {
	for i := range events {
		events[i].Age = duration.HumanDuration(now.Sub(events[i].Time))
	}
	return events
}

// verdict is where the workload stands (standing.Workload, from its plan
// and what explain reads beside it) and one line saying it.
func verdict(f Facts, r Report) (standing.Standing, string) {
	unmanaged, because := outOfReach(f)
	w := standing.Whole{Plan: f.Plan, DryRun: f.Settings.Plan.DryRun, Rollout: rollout.Status{State: rollout.Complete}, Unmanaged: unmanaged}
	if f.Rollout != nil {
		w.Rollout = *f.Rollout
	}
	w.Zero = f.Object != nil && rollout.ScaledToZero(f.Object)
	w.Held, w.Rolling = beside(r.Waiting, f.Now)
	if w.Rolling != "" && w.Rollout.State == rollout.Complete {
		// A pause or a restart holds its rollout, whatever the kind's
		// status (none in manifest files) says.
		w.Rollout = rollout.Status{State: rollout.Progressing}
	}
	for ref := range f.Unselected {
		w.NotSelected = append(w.NotSelected, ref)
	}
	s := standing.Workload(w)
	switch {
	case because != "":
		return s, "not reloading: " + because
	case (s.State == standing.Complete || s.State == standing.Stale) && len(f.Plan.Warnings) > 0:
		// Nothing else would point at the annotation Ripple warns of (an
		// invalid pattern may be why it does not reload).
		return s, line(f, r, s) + "; invalid annotation: " + f.Plan.Warnings[0]
	}
	return s, line(f, r, s)
}

// beside is what the waits explain reads beside the plan say of the
// workload at now: what holds it (the storm breaker's hold, a place in
// line for a rollout slot, both from Ripple's Events) and why its rollout
// is in progress (Ripple's pause period, a restart method's restart).
func beside(waits []Wait, now time.Time) (held, rolling reason.Reason) {
	for _, w := range waits {
		switch {
		case w.For == waitHold && held == "":
			held = reason.ReloadHeld
		case w.For == waitSlot && held == "":
			held = reason.RolloutQueued
		case w.For == waitPause && w.Until.After(now):
			rolling = reason.Paused
		case w.For == waitRestart:
			rolling = reason.RestartInProgress
		}
	}
	return held, rolling
}

// prefixes begin the verdict of a reason whose notice or wait tells it.
var prefixes = map[reason.Reason]string{
	reason.SettleWindow: "waiting: ", reason.ReloadHeld: "held: ", reason.CanaryUnkept: "held: ", reason.RolloutQueued: "waiting: ",
	reason.Paused: "paused: ", reason.RestartInProgress: "restarting: ",
}

// waitsOf are the waits that tell a reason the plan has no notice of.
var waitsOf = map[reason.Reason]string{
	reason.ReloadHeld: waitHold, reason.RolloutQueued: waitSlot, reason.Paused: waitPause, reason.RestartInProgress: waitRestart,
}

// line is the verdict of standing s for people: the words of the
// plan's notice of its reason, as the controller's Event says it, or of
// the wait that tells it; else explain's own sentence.
func line(f Facts, r Report, s standing.Standing) string {
	if n, ok := f.Plan.Notice(s.Reason); ok && (s.Reason != reason.WouldReload || !f.Settings.Plan.DryRun) {
		return prefixes[s.Reason] + n.Message
	}
	if i := slices.IndexFunc(r.Waiting, func(w Wait) bool { return w.For == waitsOf[s.Reason] }); i >= 0 {
		return prefixes[s.Reason] + r.Waiting[i].Message
	}
	changes := strings.Join(plan.ChangeNames(f.Plan.Changes), ", ")
	switch s.Reason {
	case reason.WouldReload:
		return fmt.Sprintf("would reload for changes in %s, but %s: Ripple records a WouldReload event and rolls nothing", changes, f.Settings.Flag("dry-run"))
	case reason.ReloadDue:
		return fmt.Sprintf("reloads now for changes in %s, not yet applied on the workload", changes)
	case reason.RolloutInProgress:
		return fmt.Sprintf("rolling: reloads on %s and applied what it holds; its rollout is in progress: %s", reloadsOn(r), f.Rollout.Reason)
	case reason.RolloutStalled:
		return fmt.Sprintf("stalled: reloads on %s and applied what it holds; its rollout stalled: %s", reloadsOn(r), f.Rollout.Reason)
	case reason.NoSources:
		return "nothing to reload: the pod template uses no ConfigMap or Secret and no annotation names one"
	case reason.Applied:
		return fmt.Sprintf("up to date: reloads on %s and already has what it holds", reloadsOn(r))
	}
	return notReloading(r, s)
}

// reloadsOn names the sources the workload reloads on, with the reason of
// each decision, e.g. `ConfigMap "app" (AutoMatch)`.
func reloadsOn(r Report) string {
	var reloading []string
	for _, s := range r.Sources {
		if s.Reload {
			reloading = append(reloading, fmt.Sprintf("%s %q (%s)", s.Kind, s.Name, s.Reason))
		}
	}
	return strings.Join(reloading, ", ")
}

// notReloading is the verdict of a workload that does not reload on its
// configs: the decision of the first source that says why, with its hint.
func notReloading(r Report, s standing.Standing) string {
	i := slices.IndexFunc(r.Sources, func(src Source) bool { return src.Reason == string(s.Reason) })
	if i < 0 {
		return reason.Of(s.Reason).When
	}
	src := r.Sources[i]
	msg := "not reloading: " + src.Message
	if src.Hint != "" {
		msg += "; " + src.Hint
	}
	return msg
}

// outOfReach says why Ripple does not reload the workload at all: it runs
// in webhook mode, the kind is ignored, the namespace is out of scope, or
// the workload has no template.
func outOfReach(f Facts) (reason.Reason, string) {
	switch {
	case f.Settings.Webhook != "":
		return reason.WebhookMode, fmt.Sprintf("Ripple runs in webhook mode (%s): it posts each change to the webhook and reloads nothing", f.Settings.Webhook)
	case f.Kind.Off != "":
		return reason.KindIgnored, fmt.Sprintf("Ripple does not reload %ss: %s", f.Kind.Name(), f.Kind.Off)
	case f.OutOfScope != "":
		return reason.NamespaceOutOfScope, f.OutOfScope
	case f.Template == nil:
		return reason.NoTemplate, f.NoTemplate
	}
	return "", ""
}
