package explain

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

func TestParseKindAcceptsKubectlNames(t *testing.T) {
	for name, want := range map[string]string{
		"deployment": "Deployment", "Deployments": "Deployment", "deploy": "Deployment",
		"sts": "StatefulSet", "DS": "DaemonSet", "cj": "CronJob", "jobs": "Job",
		"rollout": "Rollout", "ro": "Rollout", "dc": "DeploymentConfig", "DeploymentConfig": "DeploymentConfig",
	} {
		if got, err := ParseKind(name); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := ParseKind("pod"); err == nil || !strings.Contains(err.Error(), `unknown workload kind "pod"`) {
		t.Errorf("ParseKind(pod): %v", err)
	}
}

// facts plans a Deployment using ConfigMap "app" as the controller would.
func facts(t *testing.T, meta map[string]string, applied, now string, written time.Time, settings metainfo.Settings) Facts {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: meta}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
	}}}
	if applied != "" {
		d.Annotations[settings.Plan.Keys.Applied] = `{"ConfigMap/app":"` + applied + `"}`
	}
	tpl := &d.Spec.Template
	ref := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	in := plan.Input{Settings: settings.Plan, Workload: gather.Workload(workload.WithRestarts(workload.Deployment), d, tpl),
		Sources: []plan.Source{{Ref: ref, Found: true, Digest: now}}, Now: written.Add(10 * time.Second)}
	var problems []string // as gather.Gatherer.Input resolves them
	in.Workload.Restart, problems = plan.RestartOf(in.Workload, settings.Plan)
	in.Workload.Invalid = append(in.Workload.Invalid, problems...)
	in.Pending = plan.Pending{}.Notice(written)
	return Facts{Kind: Kind{Kind: workload.Deployment}, Object: d, Template: tpl, Input: in, Plan: plan.For(in),
		Written: map[refs.Ref]time.Time{ref: written}, Settings: settings, Now: in.Now}
}

func defaults(t *testing.T) metainfo.Settings {
	t.Helper()
	s, err := metainfo.BindFlags(pflag.NewFlagSet("x", pflag.ContinueOnError)).Resolve(metainfo.Info{Searched: "the cluster"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuildStates(t *testing.T) {
	written := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	tests := map[string]struct {
		meta            map[string]string
		applied         string
		state           standing.State
		reason, verdict string
	}{
		"applied":      {map[string]string{"reloader.stakater.com/auto": "true"}, current, standing.Complete, "Applied", `ConfigMap "app" (AutoMatch)`},
		"changed":      {map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "0s"}, old, standing.Pending, "ReloadDue", `changes in ConfigMap "app"`},
		"settle":       {map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "1m"}, old, standing.Pending, "SettleWindow", `annotation "ripple.dev/settle-window"`},
		"not opted in": {map[string]string{}, "", standing.Stale, "NotOptedIn", `"reloader.stakater.com/auto"`},
		"bad window":   {map[string]string{"configmap.reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "soon"}, current, standing.Complete, "Applied", `invalid annotation: annotation "ripple.dev/settle-window"`},
		// The plan's first notice is the verdict: the approval, then the window.
		"manual, window closed": {map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "0s", "ripple.dev/reload-policy": "manual",
			"ripple.dev/reload-window": "Sat 00:00-00:01 UTC"}, old, standing.Waiting, "ReloadPending", "Reload pending approval (reload policy manual, from the workload)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := Build(facts(t, tc.meta, tc.applied, current, written, defaults(t)))
			if r.State != tc.state || string(r.Reason) != tc.reason || !strings.Contains(r.Verdict, tc.verdict) {
				t.Errorf("%s (%s): %s; want %s (%s) naming %s", r.State, r.Reason, r.Verdict, tc.state, tc.reason, tc.verdict)
			}
			if s := r.Sources[0]; s.Digest != current[:digestLen] || (tc.applied != "" && s.Applied != tc.applied[:digestLen]) {
				t.Errorf("digests %s applied %s, want short prefixes", s.Digest, s.Applied)
			}
		})
	}
	r := Build(facts(t, tests["settle"].meta, old, current, written, defaults(t)))
	if until := r.Waiting[0].Until; until == nil || !until.Equal(written.Add(time.Minute)) {
		t.Errorf("settle until %v, want %s", until, written.Add(time.Minute))
	}
}

// A template rolled back to older data than the record, which is the
// current data: Excluded (it keeps the older data), reason RolledBack,
// naming both digests.
func TestBuildRolledBack(t *testing.T) {
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	f := facts(t, map[string]string{"reloader.stakater.com/auto": "true"}, current, current, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), defaults(t))
	f.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_APP_CONFIGMAP", Value: old}}
	f.Input.Workload.Template = f.Template
	f.Plan = plan.For(f.Input)
	r := Build(f)
	if r.State != standing.Excluded || r.Reason != "RolledBack" || !strings.Contains(r.Verdict, `ConfigMap "app" `+old[:digestLen]) ||
		!strings.Contains(r.Verdict, `ConfigMap "app" `+current[:digestLen]) {
		t.Errorf("%s (%s): %s", r.State, r.Reason, r.Verdict)
	}
	if s := r.Sources[0]; s.State != "RolledBack" || s.Applied != old[:digestLen] || s.Digest != current[:digestLen] {
		t.Errorf("source %+v", s)
	}
}

// Every printer prints the report; none prints more than digests of data.
func TestPrinters(t *testing.T) {
	current := strings.Repeat("c", 40)
	r := Build(facts(t, map[string]string{"reloader.stakater.com/auto": "true"}, current, current, time.Now(), defaults(t)))
	for _, format := range Formats {
		var b bytes.Buffer
		if err := Print(&b, format, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), current[:digestLen]) || strings.Contains(b.String(), current) {
			t.Errorf("%s: want the short digest only:\n%s", format, b.String())
		}
	}
	var b bytes.Buffer
	if err := PrintList(&b, FormatJSON, List{Items: []Report{r}}, false); err != nil {
		t.Fatal(err)
	}
	var l List
	if err := json.Unmarshal(b.Bytes(), &l); err != nil || len(l.Items) != 1 || l.Items[0].State != standing.Complete {
		t.Errorf("list: %v %s", err, b.String())
	}
}

// With per-key reload, the report names the keys whose change counts.
func TestBuildShowsKeysThatCount(t *testing.T) {
	current := strings.Repeat("c", 40)
	meta := map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/reload-on-keys": "app[db.url,feature.*]"}
	r := Build(facts(t, meta, current, current, time.Now(), defaults(t)))
	if got := r.Sources[0].Keys; !slices.Equal(got, []string{"db.url", "feature.*"}) {
		t.Fatalf("keys %q, want the listed keys", got)
	}
	var b bytes.Buffer
	if err := Print(&b, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "only changes of db.url, feature.* count") {
		t.Errorf("table does not name the keys:\n%s", b.String())
	}
	r = Build(facts(t, map[string]string{"reloader.stakater.com/auto": "true"}, current, current, time.Now(), defaults(t)))
	if r.Sources[0].Keys != nil {
		t.Errorf("keys %q without the annotation, want none (every key)", r.Sources[0].Keys)
	}
}

// A hold of the storm breaker lives in Ripple's memory: explain reads it
// from the newest of Ripple's hold, resume and reload events. It holds a
// change that is due; a workload that has its configs' data has nothing
// held.
func TestBuildHoldFromEvents(t *testing.T) {
	old, current := strings.Repeat("a", 40), strings.Repeat("c", 40)
	held := Event{Type: "Warning", Reason: "ReloadHeld", Message: `ConfigMap "app" changed 11 times within 1m0s`}
	for name, tc := range map[string]struct {
		events  []Event
		applied string
		state   standing.State
	}{
		"held":             {[]Event{held}, old, standing.Waiting},
		"resumed since":    {[]Event{{Reason: "ReloadResumed"}, held}, old, standing.Pending},
		"reloaded since":   {[]Event{{Reason: "Reloaded"}, held}, old, standing.Pending},
		"no breaker event": {[]Event{{Reason: "RolloutComplete"}}, old, standing.Pending},
		"held, applied":    {[]Event{held}, current, standing.Complete},
	} {
		t.Run(name, func(t *testing.T) {
			meta := map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "0s"}
			f := facts(t, meta, tc.applied, current, time.Now(), defaults(t))
			f.Events = tc.events
			r := Build(f)
			if r.State != tc.state {
				t.Fatalf("state %s (%s), want %s", r.State, r.Verdict, tc.state)
			}
			if tc.state == standing.Waiting && (r.Reason != "ReloadHeld" || !strings.Contains(r.Verdict, "--flap-quiet-period") || r.Waiting[0].Setting != "--flap-threshold") {
				t.Errorf("reason %s, verdict %q, waiting %+v", r.Reason, r.Verdict, r.Waiting)
			}
		})
	}
}

// A wait for a rollout slot lives in Ripple's memory: explain reads it from
// the RolloutQueued event when the plan has changes to roll.
func TestBuildRolloutSlotFromEvents(t *testing.T) {
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	queued := Event{Reason: "RolloutQueued", Message: `Changes in ConfigMap "app" wait: waiting for a rollout slot: 50 of 50 in progress (--max-concurrent-rollouts)`}
	meta := map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "0s"}
	f := facts(t, meta, old, current, time.Now(), defaults(t))
	f.Events = []Event{queued}
	if r := Build(f); r.State != standing.Pending || r.Reason != "RolloutQueued" || !strings.Contains(r.Verdict, "--max-concurrent-rollouts") {
		t.Errorf("queued with a change: %s (%s) %q", r.State, r.Reason, r.Verdict)
	}
	f = facts(t, meta, current, current, time.Now(), defaults(t))
	f.Events = []Event{queued}
	if r := Build(f); r.State != standing.Complete {
		t.Errorf("queued, but nothing left to roll: %s (%s), want up to date", r.State, r.Reason)
	}
}

// With shards, the report names the shard that acts in the workload's
// namespace, from the count the meta-info ConfigMap publishes; without,
// neither the shard nor the count is shown.
func TestShardNamed(t *testing.T) {
	written := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, count := range []int{1, 3} {
		s, err := metainfo.BindFlags(pflag.NewFlagSet("x", pflag.ContinueOnError)).Resolve(metainfo.Info{
			Origin: "ConfigMap ops/reloader-meta-info", Options: map[string]any{"shardCount": float64(count)}, // as JSON decodes it
		})
		if err != nil {
			t.Fatal(err)
		}
		r := Build(facts(t, map[string]string{"reloader.stakater.com/auto": "true"}, "", "sum", written, s))
		var out bytes.Buffer
		if err := printReport(&out, r); err != nil {
			t.Fatal(err)
		}
		shown := slices.ContainsFunc(r.Settings, func(st metainfo.Setting) bool { return st.Flag == "--shard-count" })
		if count == 1 {
			if r.Shard != nil || shown || strings.Contains(out.String(), "Shard:") {
				t.Errorf("one shard: shard %+v, --shard-count shown %v, output:\n%s", r.Shard, shown, out.String())
			}
			continue
		}
		// dependents.ShardOf("shop", 3) is 2; its values are pinned by its own test.
		if r.Shard == nil || *r.Shard != (Shard{Index: 2, Count: 3}) || !shown {
			t.Fatalf("three shards: shard %+v, --shard-count shown %v", r.Shard, shown)
		}
		if !strings.Contains(out.String(), "2 of 3 (the one run with --shard-index=2)") {
			t.Errorf("output does not name the shard:\n%s", out.String())
		}
	}
}

// A template changed after a config change, recorded so (the alias the
// plan writes): Complete, reason ReloadSkipped, naming the data read.
func TestBuildTemplateApplied(t *testing.T) {
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	meta := map[string]string{"reloader.stakater.com/auto": "true",
		"ripple.dev/applied-alias": `{"ConfigMap/app":{"shown":"` + old + `","means":"` + current + `","template":true}}`}
	f := facts(t, meta, old, current, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), defaults(t))
	r := Build(f)
	if r.State != standing.Complete || r.Reason != "ReloadSkipped" || !strings.Contains(r.Verdict, `ConfigMap "app" `+current[:digestLen]) ||
		!strings.Contains(r.Verdict, "the pod template was changed after the config") {
		t.Errorf("%s (%s): %s", r.State, r.Reason, r.Verdict)
	}
	if s := r.Sources[0]; s.State != "TemplateApplied" || s.Applied != old[:digestLen] || s.Digest != current[:digestLen] {
		t.Errorf("source %+v", s)
	}
}

// A workload that asks to pin is told whether its reloads pin and, when
// not, why: this Ripple runs without --pinning, or turned it off because
// the API server cannot point pods at copies (the controller's words).
// Settings published with pinning are read as the flag; a workload that
// does not ask has no pinning line.
func TestBuildPinning(t *testing.T) {
	current := strings.Repeat("c", 40)
	on, err := metainfo.BindFlags(pflag.NewFlagSet("x", pflag.ContinueOnError)).Resolve(metainfo.Info{
		Origin: "ConfigMap ops/reloader-meta-info", Options: map[string]any{"pinning": true}})
	if err != nil {
		t.Fatal(err)
	}
	refused := on
	refused.Plan.Pinning, refused.Plan.PinRefusal = false, "the API server does not serve MutatingAdmissionPolicy"
	asks := map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/pin": "true"}
	for name, tc := range map[string]struct {
		meta     map[string]string
		settings metainfo.Settings
		want     *Pinning
		line     string
	}{
		"on":               {asks, on, &Pinning{On: true}, "on: each reload copies"},
		"without the flag": {asks, defaults(t), &Pinning{Refused: "this Ripple runs without --pinning"}, "refused: this Ripple runs without --pinning; its pods read the configs live"},
		"refused": {asks, refused, &Pinning{Refused: "--pinning is off: the API server does not serve MutatingAdmissionPolicy"},
			"refused: --pinning is off: the API server does not serve MutatingAdmissionPolicy"},
		"not asked": {map[string]string{"reloader.stakater.com/auto": "true"}, on, nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			f := facts(t, tc.meta, current, current, time.Now(), tc.settings)
			f.Template.Annotations = map[string]string{"ripple.dev/pinned": "configmap/app=cccccccccccc"}
			r := Build(f)
			if tc.want != nil {
				tc.want.Copies = "configmap/app=cccccccccccc"
			}
			if !reflect.DeepEqual(r.Pinning, tc.want) {
				t.Errorf("pinning %+v, want %+v", r.Pinning, tc.want)
			}
			var b bytes.Buffer
			if err := Print(&b, FormatTable, r); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "Pinning:"); got != (tc.line != "") || !strings.Contains(b.String(), tc.line) {
				t.Errorf("want the line %q:\n%s", tc.line, b.String())
			}
		})
	}
}
