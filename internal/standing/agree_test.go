package standing_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/impact"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

var (
	config         = refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	written        = time.Date(2026, 1, 3, 12, 0, 0, 0, time.UTC) // a Saturday
	now            = written.Add(10 * time.Second)
	old, current   = strings.Repeat("a", 40), strings.Repeat("b", 40)
	canaryWorkload = workload.Ref{Kind: "Deployment", Namespace: "shop", Name: "canary"}
)

// state is one state of a workload in a change of its config: what the
// workload, the config and Ripple's settings hold, and the word every
// reporter must say of it.
type state struct {
	name string
	// meta are the workload's annotations beside auto (nil: not opted in).
	meta map[string]string
	// applied is the digest the workload shows; "" none (a baseline).
	applied string
	// configMeta are the config's annotations.
	configMeta map[string]string
	args       []string
	// rollout is how the workload's rollout stands.
	rollout rollout.State
	// edit makes what the annotations cannot: a rollback, a canary, a
	// storm, a pause.
	edit func(d *appsv1.Deployment, in *plan.Input)
	want standing.State
}

var auto = map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "0s"}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func states() []state {
	canaried := func(phase canary.Phase) func(*appsv1.Deployment, *plan.Input) {
		return func(_ *appsv1.Deployment, in *plan.Input) {
			in.Canaries = map[refs.Ref]canary.State{config: {Namespace: "shop", Config: config, Digest: current, Phase: phase,
				Members: []canary.Member{{Ref: canaryWorkload}}, Bake: time.Minute, Since: written, Why: "its rollout stalled"}}
		}
	}
	return []state{
		{name: "up to date (a baseline)", meta: auto, rollout: rollout.Complete, want: standing.Complete},
		{name: "settle-window wait", meta: with(auto, "ripple.dev/settle-window", "1m"), applied: old, rollout: rollout.Complete, want: standing.Pending},
		{name: "storm hold", meta: auto, applied: old, rollout: rollout.Complete, want: standing.Waiting,
			args: []string{"--flap-threshold=1", "--flap-window=1h", "--flap-quiet-period=10m"},
			edit: func(_ *appsv1.Deployment, in *plan.Input) {
				in.Storm = plan.Storm{ID: "an earlier change", Seen: []time.Time{now.Add(-time.Minute)}}
			}},
		{name: "deferred by its window", meta: with(auto, "ripple.dev/reload-window", "Mon-Fri 02:00-04:00 UTC"), applied: old, rollout: rollout.Complete, want: standing.Waiting},
		{name: "pending approval", meta: with(auto, "ripple.dev/reload-policy", "manual"), applied: old, rollout: rollout.Complete, want: standing.Waiting},
		{name: "waiting for the canary", meta: auto, applied: old, configMeta: map[string]string{"ripple.dev/canary": "1"}, rollout: rollout.Complete,
			edit: canaried(canary.Baking), want: standing.Waiting},
		{name: "halted canary", meta: auto, applied: old, configMeta: map[string]string{"ripple.dev/canary": "1"}, rollout: rollout.Complete,
			edit: canaried(canary.Halted), want: standing.Halted},
		{name: "rolls now", meta: auto, applied: old, rollout: rollout.Complete, want: standing.Pending},
		{name: "rolling", meta: auto, applied: current, rollout: rollout.Progressing, want: standing.Rolling},
		{name: "stalled", meta: auto, applied: current, rollout: rollout.Stalled, want: standing.Stalled},
		{name: "complete", meta: auto, applied: current, rollout: rollout.Complete, want: standing.Complete},
		{name: "not opted in: stale", meta: map[string]string{}, applied: old, rollout: rollout.Complete, want: standing.Stale},
		{name: "notify policy", meta: with(auto, "ripple.dev/reload-policy", "notify"), applied: old, rollout: rollout.Complete, want: standing.NotifyOnly},
		{name: "dry run", meta: auto, applied: old, args: []string{"--dry-run"}, rollout: rollout.Complete, want: standing.NotifyOnly},
		{name: "excluded", meta: with(auto, "configmaps.exclude.reloader.stakater.com/reload", "app"), applied: old, rollout: rollout.Complete, want: standing.Excluded},
		{name: "ignored", meta: auto, applied: old, configMeta: map[string]string{"reloader.stakater.com/ignore": "true"}, rollout: rollout.Complete, want: standing.Excluded},
		{name: "rolled back", meta: auto, applied: current, rollout: rollout.Complete, want: standing.Excluded,
			edit: func(d *appsv1.Deployment, in *plan.Input) {
				d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_APP_CONFIGMAP", Value: old}}
				in.Workload.Template = &d.Spec.Template
			}},
		{name: "invalid annotation: an invalid window defers", meta: with(auto, "ripple.dev/reload-window", "Mon-Fri 25:00-26:00"), applied: old,
			rollout: rollout.Complete, want: standing.Waiting},
		{name: "invalid annotation, up to date", meta: with(auto, "ripple.dev/settle-window", "soon"), applied: current, rollout: rollout.Complete, want: standing.Complete},
		{name: "paused by Ripple for its pause period", applied: current, rollout: rollout.Progressing, want: standing.Rolling,
			meta: with(auto, "deployment.reloader.stakater.com/pause-period", "10m", "deployment.reloader.stakater.com/paused-at", written.Format(time.RFC3339)),
			edit: func(d *appsv1.Deployment, in *plan.Input) {
				d.Spec.Paused = true
				in.Workload.Paused = true
			}},
	}
}

// settingsOf are Ripple's settings with flags args, as explain resolves
// them.
func settingsOf(t *testing.T, args []string) metainfo.Settings {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := metainfo.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, err := f.Resolve(metainfo.Info{Searched: "the test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// planned is the Deployment of state s and its plan input and plan, as
// the controller would gather and plan it.
func planned(t *testing.T, s state, settings metainfo.Settings) (*appsv1.Deployment, plan.Input, plan.Plan) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: with(s.meta),
		CreationTimestamp: metav1.NewTime(written.Add(-time.Hour))}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
	}}}
	if s.applied != "" {
		d.Annotations[settings.Plan.Keys.Applied] = `{"ConfigMap/app":"` + s.applied + `"}`
	}
	in := plan.Input{Settings: settings.Plan, Workload: gather.Workload(workload.WithRestarts(workload.Deployment), d, &d.Spec.Template),
		Sources: []plan.Source{{Ref: config, Found: true, Digest: current, Annotations: s.configMeta}}, Now: now}
	in.Workload.Restart, _ = plan.RestartOf(in.Workload, settings.Plan)
	if s.edit != nil {
		s.edit(d, &in)
	}
	in.Pending = plan.Pending{}.Notice(written)
	return d, in, plan.For(in)
}

// The same plans, given to `ripple explain`, to `ripple plan` and the
// admission warning (impact), and to a ConfigRollout's consumers (change),
// stand in the same words, with the same reasons where they read the same
// facts.
func TestOneVocabulary(t *testing.T) {
	for _, s := range states() {
		t.Run(s.name, func(t *testing.T) {
			settings := settingsOf(t, s.args)
			d, in, p := planned(t, s, settings)
			st := rollout.Status{State: s.rollout, Reason: "as the test says"}
			ref := workload.RefTo(workload.Deployment, d)

			r := explain.Build(explain.Facts{Kind: explain.Kind{Kind: workload.Deployment}, Object: d, Template: &d.Spec.Template,
				Input: in, Plan: p, Rollout: &st, Settings: settings, Now: now})
			w, ok := impact.Place(config, impact.Consumer{Ref: ref, Input: in, Rollout: &st}, in.DryRun, p)
			if !ok {
				t.Fatalf("impact lists no workload")
			}
			facts, found := standing.FactsOf(p, config, in.DryRun)
			facts.Rollout = st
			cs, why, ok := change.State(change.Consumer{Ref: ref, Facts: facts, Found: found, Since: d.CreationTimestamp.Time}, written)
			if !ok {
				t.Fatalf("the ConfigRollout lists no consumer")
			}

			if r.State != s.want || w.State != s.want || string(cs) != string(s.want) {
				t.Errorf("explain says %s (%s), impact %s (%s), the ConfigRollout %s (%s); want %s from all three",
					r.State, r.Reason, w.State, w.Reason, cs, why, s.want)
			}
			if w.Reason != reason.Reason(why) {
				t.Errorf("impact's reason %s, the ConfigRollout's %s: they read the same facts", w.Reason, why)
			}
			if _, ok := reason.Lookup(r.Reason); !ok {
				t.Errorf("explain's reason %q is not in the registry", r.Reason)
			}
		})
	}
}

// Every state word is said by some state of the table above: none of the
// three can say a word the others have no state for.
func TestEveryWordHasAState(t *testing.T) {
	var said []standing.State
	for _, s := range states() {
		said = append(said, s.want)
	}
	for _, w := range standing.States() {
		if !slices.Contains(said, w) {
			t.Errorf("no state of the table stands %s", w)
		}
	}
}

// The settle window a reader without Ripple's memory rebuilds opens at the
// write of the changed config (explain: its managedFields time; impact:
// the write it judges); Settled is the plan once the window closed.
func TestSettleWindowRebuilt(t *testing.T) {
	s := state{meta: with(auto, "ripple.dev/settle-window", "1m"), applied: old}
	_, in, _ := planned(t, s, settingsOf(t, nil))
	in.Pending = plan.Pending{}
	at := func(refs.Ref) time.Time { return written }
	if p := standing.Planned(in, at); p.Wait != 50*time.Second {
		t.Errorf("Planned at the write+10s waits %s; want 50s, the rest of the window", p.Wait)
	}
	if p := standing.Settled(in, at); p.Wait != 0 || !p.Reloads() {
		t.Errorf("Settled waits %s, reloads %v; want no wait, a reload", p.Wait, p.Reloads())
	}
	in.Now = written.Add(2 * time.Minute)
	if p := standing.Planned(in, func(refs.Ref) time.Time { return time.Time{} }); p.Wait != time.Minute {
		t.Errorf("a write of unknown time waits %s; want a whole window from now", p.Wait)
	}
}
