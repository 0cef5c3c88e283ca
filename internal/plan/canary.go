package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The planner's side of a canaried change (internal/canary has the state
// machine): the canary stage holds a workload that is not a canary of a
// change until its canaries passed, asks for the state it lacks, and says
// why it waits.

// CanaryOf resolves how a change of src is canaried: the config's canary
// annotations, else its Namespace's (ns, read with --namespace-defaults),
// else --canary and --canary-bake (canary.Resolve). A config of another
// namespace (a cross-namespace reference) is not canaried for the
// workload: its change's canaries are chosen by its ConfigRollout, in its
// own namespace, among that namespace's consumers, and one of another
// namespace would wait for them forever.
func CanaryOf(src Source, ns map[string]string, s Settings) (canary.Spec, []string) {
	if strings.Contains(src.Ref.Name, "/") {
		return canary.Spec{}, nil
	}
	return canary.Resolve(canary.Levels{Default: s.Canary, Namespace: ns, Config: src.Annotations,
		Where: " on " + src.Ref.String(), Tighten: s.TightenOnly}, s.Keys)
}

// canary holds the workload back while a canaried change of its configs
// waits for its canaries (it is not one of them) or halted. A change whose
// state the input lacks is asked for (Plan.CanaryAsks) and held until
// the change controller chooses its canaries. A change no canary can be
// kept for is held too, failing closed (--canary-unkept=roll rolls it).
// --dry-run and the notify policy roll nothing, so they wait for no canary.
func (pl *planning) canary() bool {
	in, p := pl.in, &pl.p
	if in.DryRun || p.Policy == Notify {
		return false
	}
	self := workload.Ref{Kind: in.Workload.Kind, Namespace: in.Workload.Namespace, Name: in.Workload.Name}
	held := false
	for _, ch := range p.Changes {
		i := slices.IndexFunc(in.Sources, func(s Source) bool { return s.Ref == ch.Ref })
		if ch.Deleted || i < 0 {
			continue
		}
		src := in.Sources[i]
		spec, problems := CanaryOf(src, in.Workload.NamespaceAnnotations, in.Settings)
		p.Warnings = append(p.Warnings, problems...)
		if !spec.On() {
			continue
		}
		if in.CanaryUnkept != "" && in.UnkeptRolls {
			p.Warnings = append(p.Warnings, fmt.Sprintf("the change of %s %q is canaried (annotation %q, or --canary), but %s: it rolls without a canary (--canary-unkept=roll)",
				ch.Ref.Kind, ch.Ref.Name, in.Keys.Canary, in.CanaryUnkept))
			continue
		}
		c, known := in.Canaries[ch.Ref]
		switch {
		case in.CanaryUnkept != "":
			p.tell(unkeptNotice(ch.Ref, src.Digest, in.Keys.Canary, in.CanaryUnkept, in.Memory.Canary))
		case !known || c.Digest != src.Digest:
			p.CanaryAsks = append(p.CanaryAsks, canary.Ask{Config: ch.Ref, Digest: src.Digest, Spec: spec})
			p.tell(choosingNotice(ch.Ref, src.Digest))
		case c.Phase == canary.Passed, c.Phase != canary.Halted && c.IsCanary(self):
			continue
		default:
			p.tell(canaryNotice(c, in.Memory.Canary))
		}
		held = true
	}
	return held
}

// canaryNotice tells why a workload waits for change c: its canaries roll
// or bake, or it halted. The held workloads send no alert: the config's
// own RolloutHalted does, once.
func canaryNotice(c canary.State, told string) Notice {
	what := fmt.Sprintf("%s %q%s", c.Config.Kind, c.Config.Name, DigestOf(c.Config, c.Digest))
	var n Notice
	if c.Phase == canary.Halted {
		n = notice(reason.RolloutHalted, []refs.Ref{c.Config}, "Reload halted: the change of %s failed on its canary: %s; no other workload rolls it. "+
			"Change the config again (the fix), or continue with `ripple resume %s/%s -n %s`",
			what, c.Why, strings.ToLower(string(c.Config.Kind)), c.Config.Name, c.Namespace)
		n.Alert = reason.None
	} else {
		n = notice(reason.WaitingForCanary, []refs.Ref{c.Config}, "Reload for %s waits for its canary %s: %s",
			what, c.MemberNames(), canary.Stage(c))
	}
	n.Once = string(n.Reason) + "/" + c.Config.String() + "=" + c.Digest
	n.Told = slices.Contains(strings.Split(told, ";"), n.Once)
	return n
}

// unkeptNotice tells that a canaried change of config is held because no
// canary can be kept for it (why, which says what to do): on each held
// workload once per change, without an alert; on the config, with one
// (ConfigNotice).
func unkeptNotice(config refs.Ref, digest, key, why, told string) Notice {
	n := notice(reason.CanaryUnkept, []refs.Ref{config}, "Reload held: the change of %s %q%s is canaried (annotation %q, or --canary), but %s. "+
		"No workload rolls it until a canary can be kept; then it rolls with its canary. To roll canaried changes without a canary instead, set --canary-unkept=roll",
		config.Kind, config.Name, DigestOf(config, digest), key, why)
	n.Alert = reason.None
	n.Once = string(n.Reason) + "/" + config.String() + "=" + digest
	n.Told = slices.Contains(strings.Split(told, ";"), n.Once)
	return n
}

// ConfigNotice is the notice to tell on the config of a workload's notice
// n that is about the config's change rather than the workload (a change
// held for want of a canary), with the config's alert; false for any
// other. The teller tells it once per change (its Once key).
func ConfigNotice(n Notice) (Notice, bool) {
	if n.Reason != reason.CanaryUnkept {
		return Notice{}, false
	}
	n.Alert, n.Told = reason.Of(n.Reason).Alert, false
	return n, true
}

// choosingNotice tells that a change waits for its canaries to be chosen:
// the change controller chooses them within about a second, on the
// change's ConfigRollout, so it is not emitted (Told); explain shows it.
func choosingNotice(config refs.Ref, digest string) Notice {
	n := notice(reason.WaitingForCanary, []refs.Ref{config}, "Reload for %s %q%s waits for its canaries: Ripple chooses them on the change's ConfigRollout",
		config.Kind, config.Name, DigestOf(config, digest))
	n.Told = true
	return n
}

// canaryTold is what the memory keeps of p's canary notices, so that each
// is told once.
func canaryTold(p Plan) string {
	var once []string
	for _, n := range p.Notices {
		if n.Reason == reason.WaitingForCanary || n.Reason == reason.RolloutHalted || n.Reason == reason.CanaryUnkept {
			once = append(once, n.Once)
		}
	}
	return strings.Join(once, ";")
}

// CanaryOutcome is the notice on the config of a change that halted or
// passed (waiting workloads hold it); false for another phase. The
// config's RolloutHalted alerts, once for the whole change.
func CanaryOutcome(c canary.State, waiting int) (Notice, bool) {
	what := fmt.Sprintf("%s %q", c.Config.Kind, c.Config.Name)
	switch {
	case c.Phase == canary.Halted:
		return notice(reason.RolloutHalted, []refs.Ref{c.Config},
			"Change%s of %s halted by its canary: %s; %d other workloads hold it. Change the config again (the fix), or continue with `ripple resume %s/%s -n %s`",
			DigestOf(c.Config, c.Digest), what, c.Why, waiting, strings.ToLower(string(c.Config.Kind)), c.Config.Name, c.Namespace), true
	case c.Phase == canary.Passed && c.Resumed:
		return notice(reason.CanaryPassed, []refs.Ref{c.Config}, "Change%s of %s continued after its halt (ripple resume): the other workloads roll it",
			DigestOf(c.Config, c.Digest), what), true
	case c.Phase == canary.Passed:
		return notice(reason.CanaryPassed, []refs.Ref{c.Config}, "Change%s of %s passed its canary %s (healthy for %s): the other workloads roll it",
			DigestOf(c.Config, c.Digest), what, c.MemberNames(), c.Bake), true
	}
	return Notice{}, false
}
