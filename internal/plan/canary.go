package plan

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// A canaried change: a config marked with the canary annotation (or its
// Namespace, or --canary) changes; of the workloads the change rolls, the
// canaries roll first (Canary.Members, chosen by StartCanary), and the
// others wait until every canary's rollout completed and stayed healthy
// for the bake time. A canary that stalls or turns unhealthy halts the
// change: nothing else of it rolls until the config changes again or an
// operator resumes it.
//
//	Rolling ──every canary complete──> Baking ──healthy for the bake──> Passed
//	   │                                  │
//	   └──stalled, timed out──> Halted <──┘ unhealthy
//	                              └──resumed──> Passed
//
// The controller keeps a Canary per config (its records survive restarts)
// and drives it with Applied, Check and Resume; the canary stage of For
// reads it.

// DefaultCanaryBake is the bake time when none is set.
const DefaultCanaryBake = 30 * time.Second

// maxCanaryBake bounds the bake an annotation may ask for.
const maxCanaryBake = 24 * time.Hour

// CanarySpec is how a change of a config is canaried: Count workloads, or
// Percent of them (rounded up), roll first and stay healthy for Bake.
type CanarySpec struct {
	Count, Percent int
	Bake           time.Duration
}

// On reports whether changes are canaried.
func (c CanarySpec) On() bool { return c.Count > 0 || c.Percent > 0 }

// MaxCanaries bounds the canaries of one change: its ConfigRollout lists
// them all.
const MaxCanaries = 100

// Of is how many of n workloads are canaries: at least one, at most n and
// MaxCanaries. A spec with both a count and a percentage (a config's and
// its floor's under tighten-only) takes the larger.
func (c CanarySpec) Of(n int) int {
	k := max(c.Count, int(math.Ceil(float64(n)*float64(c.Percent)/100)))
	return min(max(k, 1), n, MaxCanaries)
}

// ParseCanary reads a canary value: a whole number of workloads ("1"; "0"
// is none) or a percentage of them ("10%", 1 to 100).
func ParseCanary(v string) (CanarySpec, error) {
	s := strings.TrimSpace(v)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 100 {
			return CanarySpec{}, fmt.Errorf("%q is not a percentage from 1%% to 100%%", v)
		}
		return CanarySpec{Percent: n}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return CanarySpec{}, fmt.Errorf("%q is not a number of workloads (such as 1) or a percentage (such as 10%%)", v)
	}
	return CanarySpec{Count: n}, nil
}

// ParseCanaryBake reads a bake time: a duration from 0 to 24h.
func ParseCanaryBake(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 || d > maxCanaryBake {
		return 0, fmt.Errorf("%q is not a duration from 0s to 24h", v)
	}
	return d, nil
}

// CanaryOf resolves how a change of src is canaried: the config's canary
// annotations, else its Namespace's (ns, read with --namespace-defaults),
// else --canary and --canary-bake. An invalid value is a problem naming
// the annotation, and the next level applies. With --tighten-only, the
// config's own values may only tighten its floor (the Namespace's, else
// the flags'): it cannot turn a canary off, the larger of the two canaries
// is taken, and a shorter bake is not.
func CanaryOf(src Source, ns map[string]string, s Settings) (CanarySpec, []string) {
	var problems []string
	bad := func(key, where string, err error, using string) {
		problems = append(problems, fmt.Sprintf("annotation %q%s: %v; using %s", key, where, err, using))
	}
	floor := s.Canary
	if v, ok := ns[s.Keys.Canary]; ok {
		if c, err := ParseCanary(v); err != nil {
			bad(s.Keys.Canary, " on the namespace", err, canaryText(floor))
		} else {
			floor.Count, floor.Percent = c.Count, c.Percent
		}
	}
	if v, ok := ns[s.Keys.CanaryBake]; ok {
		if d, err := ParseCanaryBake(v); err != nil {
			bad(s.Keys.CanaryBake, " on the namespace", err, floor.Bake.String())
		} else {
			floor.Bake = d
		}
	}
	spec, where := floor, " on "+src.Ref.String()
	if v, ok := src.Annotations[s.Keys.Canary]; ok {
		if c, err := ParseCanary(v); err != nil {
			bad(s.Keys.Canary, where, err, canaryText(floor))
		} else if problem := spec.take(c, floor, s.TightenOnly); problem != "" {
			problems = append(problems, fmt.Sprintf("annotation %q%s: %q %s", s.Keys.Canary, where, v, problem))
		}
	}
	if v, ok := src.Annotations[s.Keys.CanaryBake]; ok {
		d, err := ParseCanaryBake(v)
		switch {
		case err != nil:
			bad(s.Keys.CanaryBake, where, err, floor.Bake.String())
		case s.TightenOnly && d < floor.Bake:
			problems = append(problems, fmt.Sprintf("annotation %q%s: %q would shorten the bake %s of the Namespace or --canary-bake (--tighten-only: a config may only lengthen it); using %s",
				s.Keys.CanaryBake, where, v, floor.Bake, floor.Bake))
		default:
			spec.Bake = d
		}
	}
	return spec, problems
}

// take sets c's canary to a config's own one over its floor; with
// tighten, own may not turn the floor's canary off, and the larger of the
// two is taken. It says why own was not taken.
func (c *CanarySpec) take(own, floor CanarySpec, tighten bool) string {
	switch {
	case tighten && floor.On() && !own.On():
		return fmt.Sprintf("would turn off the canary %s of the Namespace or --canary (--tighten-only: a config may only tighten it); using %s",
			canaryText(floor), canaryText(floor))
	case tighten && floor.On():
		c.Count, c.Percent = max(own.Count, floor.Count), max(own.Percent, floor.Percent) // the larger canary, whatever the fleet's size
	default:
		c.Count, c.Percent = own.Count, own.Percent
	}
	return ""
}

func canaryText(c CanarySpec) string {
	switch {
	case c.Percent > 0 && c.Count > 0:
		return fmt.Sprintf("the larger of %d and %d%%", c.Count, c.Percent)
	case c.Percent > 0:
		return strconv.Itoa(c.Percent) + "%"
	case c.Count > 0:
		return strconv.Itoa(c.Count)
	}
	return "no canary"
}

// CanaryPhase is where a canaried change stands.
type CanaryPhase string

// The phases of a canaried change.
const (
	CanaryRolling = CanaryPhase("Rolling")
	CanaryBaking  = CanaryPhase("Baking")
	CanaryPassed  = CanaryPhase("Passed")
	CanaryHalted  = CanaryPhase("Halted")
)

// CanaryMember is one canary of a change, and when Ripple saw it apply
// the change (zero: not yet).
type CanaryMember struct {
	Ref     workload.Ref `json:"ref"`
	Applied time.Time    `json:"applied,omitzero"`
}

// Canary is a canaried change of one config: which data (Digest), its
// canaries, its phase since when, and why it halted.
type Canary struct {
	Namespace string         `json:"namespace"`
	Config    refs.Ref       `json:"config"`
	Digest    string         `json:"digest"`
	Members   []CanaryMember `json:"canaries"`
	Bake      time.Duration  `json:"bake"`
	Phase     CanaryPhase    `json:"phase"`
	Since     time.Time      `json:"since"`
	Why       string         `json:"why,omitempty"`
	// Gate is the gate that halted it (GateStatus when empty).
	Gate Gate `json:"gate,omitempty"`
	// Resumed is set on a halted change an operator continued.
	Resumed bool `json:"resumed,omitempty"`
}

// Gate is one of the judges of a canaried change's canaries: their
// rollout status (Check, always) and their pods during the bake
// (Verdict). Another gate is one more entry.
type Gate string

// The gates.
const (
	GateStatus = Gate("status")
	GatePods   = Gate("pods")
	GateQuery  = Gate("query")
)

// Verdict is what a gate other than the status says of a baking change's
// canaries now: Fail says why they failed it (the change halts), Hold why
// it cannot tell yet (the bake may not pass).
type Verdict struct {
	Gate       Gate
	Fail, Hold string
}

// Judged is c, baking, after the verdicts of its gates at now: the first
// that fails halts it, naming the gate; a hold keeps it from passing at
// the bake's end (held reports one), and one that lasts longer than
// timeout past the bake's end halts it too. It does not read the status:
// Check does.
func (c Canary) Judged(verdicts []Verdict, timeout time.Duration, now time.Time) (next Canary, held bool) {
	if c.Phase != CanaryBaking {
		return c, false
	}
	for _, v := range verdicts {
		if v.Fail != "" {
			return c.gateHalt(now, v.Gate, "%s", v.Fail), false
		}
	}
	for _, v := range verdicts {
		if v.Hold == "" {
			continue
		}
		if timeout > 0 && now.Sub(c.BakeUntil()) > timeout {
			return c.gateHalt(now, v.Gate, "could not tell for %s past the bake (--rollout-timeout): %s", timeout, v.Hold), false
		}
		return c, true
	}
	return c, false
}

func (c Canary) gateHalt(now time.Time, g Gate, format string, args ...any) Canary {
	c = c.halt(now, "the %s gate: "+format, append([]any{g}, args...)...)
	c.Gate = g
	return c
}

// CanaryCandidate is a workload the change would roll, whether it is
// marked to go first (the canary-first annotation), and whether it runs no
// pods that its health could be judged on (Idle: scaled to zero, a
// CronJob).
type CanaryCandidate struct {
	Ref         workload.Ref
	First, Idle bool
}

// CanaryAsk is a canaried change the plan needs the state of: the
// controller starts or reads it (StartCanary) and plans again.
type CanaryAsk struct {
	Config refs.Ref
	Digest string
	Spec   CanarySpec
}

// StartCanary is a canaried change of config in ns to the data digest,
// seen at now, among the workloads it rolls: the canaries are the first
// spec.Of(n) of them, those that run pods first (a workload without pods
// would pass at once, so it is a canary only when too few others run
// pods), then those marked canary-first, then by name and kind. With no
// workload to roll, it has passed.
func StartCanary(ns string, ask CanaryAsk, cands []CanaryCandidate, now time.Time) Canary {
	c := Canary{Namespace: ns, Config: ask.Config, Digest: ask.Digest, Bake: ask.Spec.Bake, Phase: CanaryRolling, Since: now}
	if len(cands) == 0 {
		c.Phase = CanaryPassed
		return c
	}
	cands = slices.Clone(cands)
	first := func(yes bool) int {
		if yes {
			return 0
		}
		return 1
	}
	slices.SortFunc(cands, func(a, b CanaryCandidate) int {
		return cmp.Or(cmp.Compare(first(!a.Idle), first(!b.Idle)), cmp.Compare(first(a.First), first(b.First)),
			cmp.Compare(a.Ref.Name, b.Ref.Name), cmp.Compare(a.Ref.Kind, b.Ref.Kind))
	})
	for _, w := range cands[:ask.Spec.Of(len(cands))] {
		c.Members = append(c.Members, CanaryMember{Ref: w.Ref})
	}
	return c
}

// IsCanary reports whether k is one of c's canaries.
func (c Canary) IsCanary(k workload.Ref) bool {
	return slices.ContainsFunc(c.Members, func(m CanaryMember) bool { return m.Ref == k })
}

// Active reports whether c still holds workloads back or may: it rolls,
// bakes or halted.
func (c Canary) Active() bool { return c.Phase != CanaryPassed && c.Phase != "" }

// BakeUntil is when the bake of a baking change ends.
func (c Canary) BakeUntil() time.Time { return c.Since.Add(c.Bake) }

// Applied is c after canary k was seen applying the change at t; changed
// reports whether it recorded something new.
func (c Canary) Applied(k workload.Ref, t time.Time) (Canary, bool) {
	i := slices.IndexFunc(c.Members, func(m CanaryMember) bool { return m.Ref == k })
	if i < 0 || !c.Members[i].Applied.IsZero() || c.Phase != CanaryRolling {
		return c, false
	}
	c.Members = slices.Clone(c.Members)
	c.Members[i].Applied = t
	return c, true
}

// Check is c after the canaries' rollouts were read at now (health, by
// canary; a canary missing from it is still progressing; one that has not
// applied the change yet has a status that says why, or that it is gone):
// a canary that stalled, or that took longer than timeout (0: no limit) to
// apply the change or to complete its rollout, halts a rolling change; every canary complete starts the bake; a canary that is not
// complete during the bake halts it; a bake that ends healthy passes.
// changed reports a new phase.
func (c Canary) Check(health map[workload.Ref]rollout.Status, timeout time.Duration, now time.Time) (Canary, bool) {
	switch c.Phase {
	case CanaryRolling:
		return c.rolled(health, timeout, now)
	case CanaryBaking:
		for _, m := range c.Members {
			if st, ok := health[m.Ref]; ok && st.State != rollout.Complete {
				return c.halt(now, "%s %q turned unhealthy during the bake: %s", m.Ref.Kind, m.Ref.Name, st.Reason), true
			}
		}
		if !now.Before(c.BakeUntil()) {
			c.Phase, c.Since = CanaryPassed, now
			return c, true
		}
	}
	return c, false
}

// rolled is Check of a rolling change.
func (c Canary) rolled(health map[workload.Ref]rollout.Status, timeout time.Duration, now time.Time) (Canary, bool) {
	all := true
	for _, m := range c.Members {
		st, ok := health[m.Ref]
		switch {
		case ok && st.State == rollout.Stalled:
			return c.halt(now, "%s %q stalled: %s", m.Ref.Kind, m.Ref.Name, st.Reason), true
		case m.Applied.IsZero() && timeout > 0 && now.Sub(c.Since) > timeout:
			// A canary that never applies the change (a window that stays
			// closed, a status that cannot be read) must not hold it forever.
			return c.halt(now, "%s %q did not apply the change within %s (--rollout-timeout): %s", m.Ref.Kind, m.Ref.Name, timeout, cmp.Or(st.Reason, "its reload has not run")), true
		case m.Applied.IsZero() || !ok:
			all = false
		case st.State != rollout.Complete && timeout > 0 && now.Sub(m.Applied) > timeout:
			return c.halt(now, "%s %q did not complete its rollout within %s (--rollout-timeout): %s", m.Ref.Kind, m.Ref.Name, timeout, st.Reason), true
		case st.State != rollout.Complete:
			all = false
		}
	}
	if !all {
		return c, false
	}
	c.Phase, c.Since = CanaryBaking, now
	return c, true
}

func (c Canary) halt(now time.Time, format string, args ...any) Canary {
	c.Phase, c.Since, c.Why, c.Gate = CanaryHalted, now, fmt.Sprintf(format, args...), GateStatus
	return c
}

// Resume is a halted c continued by an operator at now: the rest roll.
func (c Canary) Resume(now time.Time) (Canary, bool) {
	if c.Phase != CanaryHalted {
		return c, false
	}
	c.Phase, c.Since, c.Resumed = CanaryPassed, now, true
	return c, true
}

// IsCanaryFirst reports whether the workload's annotations mark it to be
// chosen as a canary first.
func IsCanaryFirst(annotations map[string]string, keys annotation.Keys) bool {
	return annotation.IsTrue(annotations[keys.CanaryFirst])
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
			p.CanaryAsks = append(p.CanaryAsks, CanaryAsk{Config: ch.Ref, Digest: src.Digest, Spec: spec})
			p.tell(choosingNotice(ch.Ref, src.Digest))
		case c.Phase == CanaryPassed, c.Phase != CanaryHalted && c.IsCanary(self):
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
func canaryNotice(c Canary, told string) Notice {
	what := fmt.Sprintf("%s %q%s", c.Config.Kind, c.Config.Name, DigestOf(c.Config, c.Digest))
	var n Notice
	if c.Phase == CanaryHalted {
		n = notice(reason.RolloutHalted, []refs.Ref{c.Config}, "Reload halted: the change of %s failed on its canary: %s; no other workload rolls it. "+
			"Change the config again (the fix), or continue with `ripple resume %s/%s -n %s`",
			what, c.Why, strings.ToLower(string(c.Config.Kind)), c.Config.Name, c.Namespace)
		n.Alert = reason.None
	} else {
		n = notice(reason.WaitingForCanary, []refs.Ref{c.Config}, "Reload for %s waits for its canary %s: %s",
			what, memberNames(c.Members), CanaryStage(c))
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

// CanaryStage says where a change waiting for its canaries stands, e.g.
// "baking until 10:31:05Z".
func CanaryStage(c Canary) string {
	switch c.Phase {
	case CanaryBaking:
		return "baking until " + c.BakeUntil().UTC().Format(time.RFC3339)
	case CanaryHalted:
		return "halted: " + c.Why
	case CanaryPassed:
		return "passed"
	}
	return "rolling since " + c.Since.UTC().Format(time.RFC3339)
}

func memberNames(ms []CanaryMember) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = fmt.Sprintf("%s %q", m.Ref.Kind, m.Ref.Name)
	}
	return strings.Join(names, ", ")
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
func CanaryOutcome(c Canary, waiting int) (Notice, bool) {
	what := fmt.Sprintf("%s %q", c.Config.Kind, c.Config.Name)
	switch {
	case c.Phase == CanaryHalted:
		return notice(reason.RolloutHalted, []refs.Ref{c.Config},
			"Change%s of %s halted by its canary: %s; %d other workloads hold it. Change the config again (the fix), or continue with `ripple resume %s/%s -n %s`",
			DigestOf(c.Config, c.Digest), what, c.Why, waiting, strings.ToLower(string(c.Config.Kind)), c.Config.Name, c.Namespace), true
	case c.Phase == CanaryPassed && c.Resumed:
		return notice(reason.CanaryPassed, []refs.Ref{c.Config}, "Change%s of %s continued after its halt (ripple resume): the other workloads roll it",
			DigestOf(c.Config, c.Digest), what), true
	case c.Phase == CanaryPassed:
		return notice(reason.CanaryPassed, []refs.Ref{c.Config}, "Change%s of %s passed its canary %s (healthy for %s): the other workloads roll it",
			DigestOf(c.Config, c.Digest), what, memberNames(c.Members), c.Bake), true
	}
	return Notice{}, false
}

// CanaryRecordKey is the data key of a canary record.
const CanaryRecordKey = "canary"

// CanaryRecordName is the name of the ConfigMap, in Ripple's namespace,
// that records the canaried change of config in ns: a hash, as a config's
// namespace and name together may be longer than a name.
func CanaryRecordName(ns string, config refs.Ref) string {
	sum := sha256.Sum256([]byte(ns + "/" + config.String()))
	return "ripple-canary-" + hex.EncodeToString(sum[:10])
}

// ParseCanaryRecord reads the canaried change a record holds, and checks
// that it is the change of config in ns: a record of another config (a
// name made to clash, an edited record) is an error, never acted on.
func ParseCanaryRecord(data, ns string, config refs.Ref) (Canary, error) {
	var c Canary
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return Canary{}, fmt.Errorf("not a canary record: %w", err)
	}
	if c.Namespace != ns || c.Config != config {
		return Canary{}, fmt.Errorf("a record of %s %s/%s, not of %s %s/%s", c.Config.Kind, c.Namespace, c.Config.Name, config.Kind, ns, config.Name)
	}
	switch c.Phase {
	case CanaryRolling, CanaryBaking, CanaryPassed, CanaryHalted:
	default:
		return Canary{}, fmt.Errorf("phase %q is not a canary phase", c.Phase)
	}
	// Its canaries are of the config's namespace, named, and at most as
	// many as a change has: a record that says otherwise is not acted on.
	if len(c.Members) > MaxCanaries {
		return Canary{}, fmt.Errorf("%d canaries, more than %d", len(c.Members), MaxCanaries)
	}
	for _, m := range c.Members {
		if m.Ref.Namespace != ns || m.Ref.Kind == "" || m.Ref.Name == "" {
			return Canary{}, fmt.Errorf("canary %s %s/%s is not a workload of namespace %s", m.Ref.Kind, m.Ref.Namespace, m.Ref.Name, ns)
		}
	}
	return c, nil
}
