package explain

import (
	"fmt"
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
	r.Notices = notices(f.Plan)
	r.State, r.Reason, r.Verdict = verdict(f, r)
	return r
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
			out = append(out, Use{Container: u.Container, Init: u.Init, Via: string(u.Via), Volume: u.Volume, Keys: u.Keys})
		}
	}
	return out
}

// notWatched is a source of a kind the Ripple explained does not watch.
func notWatched(s metainfo.Settings, ref refs.Ref, uses []Use) Source {
	src := Source{Kind: string(ref.Kind), Name: ref.Name, Uses: uses, State: "NotWatched", Reason: "NotWatched"}
	switch {
	case ref.Kind == refs.SecretProviderClass && !s.Config.CSI:
		src.Message = fmt.Sprintf("SecretProviderClasses reload workloads only with --enable-csi-integration; %s", s.Flag("enable-csi-integration"))
	case ref.Kind == refs.SecretProviderClass:
		src.Reason = "Unknown"
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
	s.Found, s.Reload, s.Reason = true, false, "NotSelected"
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

// noticeVerdicts are the plan's notices that give explain's verdict: the
// first of them the plan told is it, in the words of its notice, so that
// explain and the controller's Events say the same. A reason's entry is
// the report's state, its reason there (when not the notice's own) and
// the verdict's prefix.
var noticeVerdicts = map[reason.Reason]struct {
	state          State
	reason, prefix string
}{
	reason.SettleWindow:     {state: Waiting, prefix: "waiting: "},
	reason.ReloadHeld:       {state: Waiting, prefix: "held: "},
	reason.ReloadPending:    {state: PendingApproval, reason: "PendingApproval"},
	reason.WaitingForCanary: {state: Waiting},
	reason.RolloutHalted:    {state: Waiting},
	reason.CanaryUnkept:     {state: Waiting, prefix: "held: "},
	reason.ReloadDeferred:   {state: Waiting},
	reason.WouldReload:      {state: WouldReload, reason: "NotifyPolicy"},
}

// planVerdict is the verdict of the first notice of the plan that gives
// one (noticeVerdicts); an empty state when none does. A dry run's
// WouldReload is explain's own (verdict).
func planVerdict(f Facts) (State, string, string) {
	for _, n := range f.Plan.Notices {
		v, ok := noticeVerdicts[n.Reason]
		if ok && (n.Reason != reason.WouldReload || !f.Settings.Plan.DryRun) {
			return v.state, cmpOr(v.reason, string(n.Reason)), v.prefix + n.Message
		}
	}
	return "", "", ""
}

// waitVerdict is the verdict of a wait the plan does not tell, for
// explain reads it from elsewhere (the workload's pause, Ripple's Events);
// an empty state when it gives none (a pause that has ended, an owner's
// pause).
func waitVerdict(w Wait, now time.Time) (State, string, string) {
	switch {
	case w.For == waitPause && w.Until.After(now):
		return Paused, string(reason.Paused), "paused: " + w.Message
	case w.For == waitHold:
		return Waiting, reasonHeld, "held: " + w.Message
	case w.For == waitSlot:
		return Waiting, reasonQueued, "waiting: " + w.Message
	case w.For == waitRestart:
		return Waiting, string(reason.RestartInProgress), "restarting: " + w.Message
	}
	return "", "", ""
}

// verdict is the state of the workload, its reason and one line saying it.
func verdict(f Facts, r Report) (State, string, string) {
	if why, because := outOfReach(f); why != "" {
		return NotReloading, why, "not reloading: " + because
	}
	if state, reason, line := planVerdict(f); state != "" {
		return state, reason, line
	}
	for _, w := range r.Waiting {
		if state, reason, line := waitVerdict(w, f.Now); state != "" {
			return state, reason, line
		}
	}
	if changes := strings.Join(plan.ChangeNames(f.Plan.Changes), ", "); changes != "" {
		if f.Settings.Plan.DryRun {
			return WouldReload, "DryRun", fmt.Sprintf("would reload for changes in %s, but %s: Ripple records a WouldReload event and rolls nothing", changes, f.Settings.Flag("dry-run"))
		}
		return WouldReload, "Changed", fmt.Sprintf("reloads now for changes in %s, not yet applied on the workload", changes)
	}
	if len(f.Plan.Warnings) > 0 {
		return Invalid, "InvalidAnnotation", "invalid annotation: " + f.Plan.Warnings[0]
	}
	for _, r := range []reason.Reason{reason.RolledBack, reason.ReloadSkipped} {
		if n, ok := f.Plan.Notice(r); ok {
			return UpToDate, recordReason(r), n.Message // as its Event says it
		}
	}
	var reloading []string
	for _, s := range r.Sources {
		if s.Reload {
			reloading = append(reloading, fmt.Sprintf("%s %q (%s)", s.Kind, s.Name, s.Reason))
		}
	}
	switch {
	case len(reloading) > 0:
		return UpToDate, "Applied", fmt.Sprintf("up to date: reloads on %s and already has what it holds", strings.Join(reloading, ", "))
	case len(r.Sources) == 0:
		return NotReloading, "NoSources", "not reloading: the pod template uses no ConfigMap or Secret and no annotation names one"
	}
	s := r.Sources[0]
	msg := "not reloading: " + s.Message
	if s.Hint != "" {
		msg += "; " + s.Hint
	}
	return NotReloading, s.Reason, msg
}

// recordReason is explain's reason of a workload up to date by its
// record: the source state the notice r tells of.
func recordReason(r reason.Reason) string {
	if r == reason.RolledBack {
		return string(plan.RolledBack)
	}
	return string(plan.TemplateApplied)
}

// outOfReach says why Ripple does not reload the workload at all: it runs
// in webhook mode, the kind is ignored, the namespace is out of scope, or
// the workload has no template.
func outOfReach(f Facts) (reason, why string) {
	switch {
	case f.Settings.Webhook != "":
		return "WebhookMode", fmt.Sprintf("Ripple runs in webhook mode (%s): it posts each change to the webhook and reloads nothing", f.Settings.Webhook)
	case f.Kind.Off != "":
		return "KindIgnored", fmt.Sprintf("Ripple does not reload %ss: %s", f.Kind.Name(), f.Kind.Off)
	case f.OutOfScope != "":
		return "NamespaceOutOfScope", f.OutOfScope
	case f.Template == nil:
		return "NoTemplate", f.NoTemplate
	}
	return "", ""
}
