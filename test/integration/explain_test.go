package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/standing"
)

// explainRun is one run of `ripple explain`.
type explainRun struct {
	stdout, stderr string
	code           int
}

// explain runs the ripple binary's explain command against the test API
// server, on e's namespace, with Ripple's settings read from e's namespace.
func (e *env) explain(t *testing.T, args ...string) explainRun {
	t.Helper()
	bin := os.Getenv("RIPPLE_BINARY")
	if bin == "" {
		t.Fatal("RIPPLE_BINARY is not set: run `make test-integration`, or `make build` and then `RIPPLE_BINARY=$PWD/bin/ripple go test ./test/integration/`")
	}
	base := []string{"explain", "--kubeconfig=" + api.Kubeconfig, "-n", e.ns, "--ripple-namespace=" + e.ns}
	cmd := exec.CommandContext(t.Context(), bin, append(base, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir()} // no kubeconfig but the test's
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	run := explainRun{}
	var exit *exec.ExitError
	if err := cmd.Run(); errors.As(err, &exit) {
		run.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", bin, err)
	}
	run.stdout, run.stderr = stdout.String(), stderr.String()
	return run
}

// explainJSON explains target with -o json and decodes the report.
func (e *env) explainJSON(t *testing.T, target string, args ...string) explain.Report {
	t.Helper()
	run := e.explain(t, append([]string{target, "-o", "json"}, args...)...)
	if run.code != 0 {
		t.Fatalf("explain %s: exit code %d; stderr:\n%s", target, run.code, run.stderr)
	}
	var r explain.Report
	if err := json.Unmarshal([]byte(run.stdout), &r); err != nil {
		t.Fatalf("explain %s -o json: %v\n%s", target, err, run.stdout)
	}
	return r
}

// reportSource returns the report's source ref.
func reportSource(t *testing.T, r explain.Report, ref refs.Ref) explain.Source {
	t.Helper()
	for _, s := range r.Sources {
		if s.Kind == string(ref.Kind) && s.Name == ref.Name {
			return s
		}
	}
	t.Fatalf("the report has no source %s: %+v", ref, r.Sources)
	return explain.Source{}
}

// want is what a report must say: its state and reason, and the
// annotation or flag its verdict (and the decision of source, when set)
// names.
type want struct {
	state  standing.State
	reason string
	// names must appear in the verdict.
	names string
	// source, when set, must have decision reason sourceReason, and a
	// decision message with sourceMessage.
	source                      refs.Ref
	sourceReason, sourceMessage string
}

func (w want) check(t *testing.T, r explain.Report) {
	t.Helper()
	if r.State != w.state || string(r.Reason) != w.reason {
		t.Errorf("state %s (%s), want %s (%s); verdict: %s", r.State, r.Reason, w.state, w.reason, r.Verdict)
	}
	if !strings.Contains(r.Verdict, w.names) {
		t.Errorf("verdict %q does not name %q", r.Verdict, w.names)
	}
	if w.source.Name != "" {
		if s := reportSource(t, r, w.source); s.Reason != w.sourceReason || !strings.Contains(s.Message, w.sourceMessage) {
			t.Errorf("%s: decision %s (%s), want %s (%s)", w.source, s.Reason, s.Message, w.sourceReason, w.sourceMessage)
		}
	}
}

var appConfig = refs.Ref{Kind: refs.ConfigMap, Name: "app"}

// One test per reason a workload does or does not reload that explain
// reads from cluster state alone, without a running Ripple: each names the
// annotation or flag at play.
func TestExplainReasons(t *testing.T) {
	t.Parallel()
	auto := map[string]string{autoKey: "true"}
	tests := map[string]struct {
		meta       map[string]string
		tplMeta    map[string]string
		configMeta map[string]string
		kind       *kit.WorkloadKind
		target     string
		uses       []use
		args       []string
		want       want
	}{
		"not opted in": {
			want: want{state: standing.Stale, reason: "NotOptedIn", names: autoKey, source: appConfig, sourceReason: "NotOptedIn"},
		},
		"auto false": {
			meta: map[string]string{autoKey: "false"}, args: []string{"--auto-reload-all"},
			want: want{state: standing.Stale, reason: "NotOptedIn", names: `"reloader.stakater.com/auto" is "false"`, source: appConfig, sourceReason: "NotOptedIn"},
		},
		"excluded": {
			meta: map[string]string{autoKey: "true", cmExcludeKey: "app"},
			want: want{state: standing.Excluded, reason: "Excluded", names: cmExcludeKey, source: appConfig, sourceReason: "Excluded"},
		},
		"ignored config": {
			meta: auto, configMeta: map[string]string{ignoreKey: "true"},
			want: want{state: standing.Excluded, reason: "Ignored", names: ignoreKey, source: appConfig, sourceReason: "Ignored"},
		},
		"search without match": {
			meta: map[string]string{searchKey: "true"},
			want: want{state: standing.Stale, reason: "NotOptedIn", names: matchKey, source: appConfig, sourceReason: "NotOptedIn"},
		},
		"typed auto of the other type": {
			meta: map[string]string{secretAutoKey: "true"},
			want: want{state: standing.Stale, reason: "NotOptedIn", names: `"secret.reloader.stakater.com/auto" applies to Secrets only`, source: appConfig, sourceReason: "NotOptedIn"},
		},
		"namespace out of scope": {
			meta: auto, args: []string{"--namespace-selector=team=a"},
			want: want{state: standing.Stale, reason: "NamespaceOutOfScope", names: "--namespace-selector=team=a (given as a flag)", source: appConfig, sourceReason: "AutoMatch"},
		},
		"kind ignored": {
			meta: auto, kind: kit.CronJob, target: "cj/w", args: []string{"--ignored-workload-types=cronjobs"},
			want: want{state: standing.Stale, reason: "KindIgnored", names: "--ignored-workload-types=cronjobs", source: appConfig, sourceReason: "AutoMatch"},
		},
		"config not referenced": {
			// Ripple recorded ConfigMap "app" when the template still used
			// it; the reference has been removed since.
			meta: map[string]string{autoKey: "true", appliedKey: `{"ConfigMap/app":"0000000000000000000000000000000000000000"}`},
			uses: []use{},
			want: want{state: standing.Complete, reason: "NotReferenced", names: autoKey, source: appConfig, sourceReason: "NotReferenced"},
		},
		"config outside the resource label selector": {
			meta: auto, args: []string{"--resource-label-selector=team=a"},
			want: want{state: standing.Stale, reason: "NotSelected", names: "--resource-label-selector=team=a (given as a flag)", source: appConfig, sourceReason: "NotSelected"},
		},
		"webhook mode": {
			meta: auto, args: []string{"--webhook-url=https://hooks.example/x"},
			want: want{state: standing.Stale, reason: "WebhookMode", names: "--webhook-url", source: appConfig, sourceReason: "AutoMatch"},
		},
		"renamed key on the pod template": {
			tplMeta: map[string]string{"example.com/auto": "true"}, args: []string{"--auto-annotation=example.com/auto"},
			want: want{state: standing.Complete, reason: "Applied", names: `ConfigMap "app" (AutoMatch)`,
				source: appConfig, sourceReason: "AutoMatch", sourceMessage: `"example.com/auto" set to true on the pod template`},
		},
		"invalid pattern": {
			meta: map[string]string{cmReloadKey: "app-["},
			want: want{state: standing.Stale, reason: "NotOptedIn", names: "invalid annotation: annotation \"" + cmReloadKey + "\": invalid pattern"},
		},
		"named reload": {
			meta: map[string]string{cmReloadKey: "ap.*"}, uses: []use{},
			want: want{state: standing.Complete, reason: "Applied", names: `ConfigMap "app" (NamedMatch)`, source: appConfig, sourceReason: "NamedMatch"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if err := e.c.Create(t.Context(), configObject(e.ns, appConfig, tc.configMeta, "v1")); err != nil {
				t.Fatal(err)
			}
			kind, target, uses := kit.Deployment, "deployment/w", []use{envFrom(refs.ConfigMap, "app")}
			if tc.kind != nil {
				kind, target = tc.kind, tc.target
			}
			if tc.uses != nil {
				uses = tc.uses
			}
			w := kind.New(metav1.ObjectMeta{Name: "w", Namespace: e.ns, Annotations: tc.meta},
				corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: tc.tplMeta}, Spec: podSpec(uses...)})
			if err := e.c.Create(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			if d, ok := w.(*appsv1.Deployment); ok {
				e.completeRollout(t, d) // no Deployment controller runs here: as it would report
			}
			r := e.explainJSON(t, target, tc.args...)
			tc.want.check(t, r)
			for key := range tc.tplMeta {
				if !slices.Contains(r.Policy, explain.PolicyEntry{Key: key, Value: tc.tplMeta[key], From: "podTemplate"}) {
					t.Errorf("policy %+v lacks %s from the pod template", r.Policy, key)
				}
			}
		})
	}
}

// A changed config waits for the settle window of the running Ripple,
// which explain reads from its reloader-meta-info ConfigMap: until the
// config's last write plus the window.
func TestExplainWaitingInTheSettleWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.environ = map[string]string{"RELOADER_NAMESPACE": e.ns}
	e.newConfig(t, appConfig)
	w := e.newWorkload(t, kit.Deployment, "w", map[string]string{autoKey: "true"}, envFrom(refs.ConfigMap, "app"))
	e.run(t, "--settle-window=1h")
	e.waitFor(t, w, "the baseline", hasBaseline)
	e.waitMetaInfo(t)
	// The write happens between these two: managedFields record it to the
	// second, truncated.
	sent := time.Now()
	e.setConfig(t, appConfig, "v2")
	acked := time.Now()

	r := e.explainJSON(t, "deploy/w")
	want{state: standing.Pending, reason: "SettleWindow", names: "wait for the settle window of 1h0m0s, set by --settle-window"}.check(t, r)
	if len(r.Waiting) != 1 || r.Waiting[0].Until == nil {
		t.Fatalf("waiting %+v, want the settle window", r.Waiting)
	}
	if got, want := r.Waiting[0].Setting, "--settle-window=1h0m0s (from ConfigMap "+e.ns+"/reloader-meta-info)"; got != want {
		t.Errorf("the settle window's setting is %q, want %q", got, want)
	}
	if until := *r.Waiting[0].Until; until.Before(sent.Truncate(time.Second).Add(time.Hour)) || until.After(acked.Add(time.Hour)) {
		t.Errorf("waiting until %s, want the change (written between %s and %s) plus 1h", until, sent, acked)
	}
	if s := reportSource(t, r, appConfig); s.State != "Changed" || s.Digest == s.Applied {
		t.Errorf("source %+v, want Changed with a new digest", s)
	}
}

// A Deployment Ripple paused (pause-period) waits until the period is
// over; its Reloaded event is shown.
func TestExplainPaused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.newConfig(t, appConfig)
	w := e.newWorkload(t, kit.Deployment, "w", map[string]string{autoKey: "true", pausePeriodKey: "1h"}, envFrom(refs.ConfigMap, "app"))
	e.run(t)
	e.waitFor(t, w, "the baseline", hasBaseline)
	at := e.pausedReload(t, w, appConfig, "v2")
	e.waitEvent(t, "w", corev1.EventTypeNormal, "Reloaded")

	r := e.explainJSON(t, "deployment/w")
	want{state: standing.Rolling, reason: "Paused", names: pausePeriodKey}.check(t, r)
	if len(r.Waiting) != 1 || r.Waiting[0].Until == nil || !r.Waiting[0].Until.Equal(at.Add(time.Hour)) {
		t.Errorf("waiting %+v, want the pause until %s", r.Waiting, at.Add(time.Hour))
	}
	if len(r.Events) == 0 || r.Events[0].Reason != "Reloaded" {
		t.Errorf("events %+v, want the Reloaded event first", r.Events)
	}
}

// A change applied by Ripple: the digest the workload shows is the
// config's, and the decision names the annotation that opted it in.
func TestExplainAlreadyApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.newConfig(t, appConfig)
	w := e.newWorkload(t, kit.Deployment, "w", map[string]string{autoKey: "true"}, envFrom(refs.ConfigMap, "app"))
	e.run(t)
	e.waitFor(t, w, "the baseline", hasBaseline)
	sum := e.setConfig(t, appConfig, "v2")
	e.waitApplied(t, kit.Deployment, w, appConfig, sum)
	e.completeRollout(t, w.(*appsv1.Deployment)) // no Deployment controller runs here: as it would report

	r := e.explainJSON(t, "deployment/w")
	want{state: standing.Complete, reason: "Applied", names: `ConfigMap "app" (AutoMatch)`, source: appConfig, sourceReason: "AutoMatch"}.check(t, r)
	s := reportSource(t, r, appConfig)
	if s.State != "Unchanged" || s.Digest != sum[:12] || s.Applied != s.Digest {
		t.Errorf("source %+v, want Unchanged with digest and applied %s", s, sum[:12])
	}
	if !strings.Contains(s.Message, autoKey) {
		t.Errorf("decision %q does not name %s", s.Message, autoKey)
	}
	if len(s.Uses) != 1 || s.Uses[0].Container != "app" || s.Uses[0].Via != "envFrom" {
		t.Errorf("uses %+v, want envFrom in container app", s.Uses)
	}
}

// Under a dry-run Ripple, a change would reload: the verdict names
// --dry-run and where it was read, and the WouldReload event is shown.
func TestExplainWouldReloadInDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.environ = map[string]string{"RELOADER_NAMESPACE": e.ns}
	e.newConfig(t, appConfig)
	w := e.newWorkload(t, kit.Deployment, "w", map[string]string{autoKey: "true"}, envFrom(refs.ConfigMap, "app"))
	e.run(t, "--dry-run")
	e.waitFor(t, w, "the baseline", hasBaseline)
	e.waitMetaInfo(t)
	e.setConfig(t, appConfig, "v2")
	e.waitEvent(t, "w", corev1.EventTypeNormal, "WouldReload")

	r := e.explainJSON(t, "deployment/w")
	want{state: standing.NotifyOnly, reason: "WouldReload", names: "--dry-run=true (from ConfigMap " + e.ns + "/reloader-meta-info)", source: appConfig, sourceReason: "AutoMatch"}.check(t, r)
	if len(r.Events) == 0 || r.Events[0].Reason != "WouldReload" || r.Events[0].Age == "" {
		t.Errorf("events %+v, want the WouldReload event first, with its age", r.Events)
	}
}

// waitMetaInfo waits until the Ripple on e's namespace has published its
// reloader-meta-info ConfigMap.
func (e *env) waitMetaInfo(t *testing.T) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reloader-meta-info", Namespace: e.ns}}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		return e.c.Get(ctx, client.ObjectKeyFromObject(cm), cm) == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for the meta-info ConfigMap: %v", err)
	}
}

// --all lists the opted-in workloads only, with their state; the table
// has one aligned line each.
func TestExplainAll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.newConfig(t, appConfig)
	auto := e.newWorkload(t, kit.Deployment, "auto", map[string]string{autoKey: "true"}, envFrom(refs.ConfigMap, "app"))
	e.completeRollout(t, auto.(*appsv1.Deployment)) // no Deployment controller runs here: as it would report
	e.newWorkload(t, kit.Deployment, "plain", nil, envFrom(refs.ConfigMap, "app"))
	e.newWorkload(t, kit.StatefulSet, "search", map[string]string{searchKey: "true"}, volume(refs.ConfigMap, "app"))

	run := e.explain(t, "--all", "-o", "json")
	if run.code != 0 {
		t.Fatalf("exit code %d: %s", run.code, run.stderr)
	}
	var list explain.List
	if err := json.Unmarshal([]byte(run.stdout), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]standing.State{}
	for _, r := range list.Items {
		got[r.Workload.Kind+"/"+r.Workload.Name] = r.State
	}
	wantStates := map[string]standing.State{"Deployment/auto": standing.Complete, "StatefulSet/search": standing.Stale}
	if len(got) != len(wantStates) || got["Deployment/auto"] != wantStates["Deployment/auto"] || got["StatefulSet/search"] != wantStates["StatefulSet/search"] {
		t.Errorf("--all: %v, want %v", got, wantStates)
	}

	run = e.explain(t, "--all")
	lines := strings.Split(strings.TrimSpace(run.stdout), "\n")
	if run.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "KIND") {
		t.Fatalf("--all table (exit %d):\n%s", run.code, run.stdout)
	}
	for _, want := range []string{"auto", "Complete", "ConfigMap/app", "search", "Stale", "NotOptedIn"} {
		if !strings.Contains(run.stdout, want) {
			t.Errorf("--all table lacks %q:\n%s", want, run.stdout)
		}
	}

	// In every namespace, the table says which.
	run = e.explain(t, "--all", "-A")
	found := false
	for _, line := range strings.Split(run.stdout, "\n") {
		f := strings.Fields(line)
		found = found || len(f) > 2 && f[0] == e.ns && f[1] == "Deployment" && f[2] == "auto"
	}
	if run.code != 0 || !strings.HasPrefix(run.stdout, "NAMESPACE") || !found {
		t.Errorf("--all -A (exit %d), want a line %s Deployment auto:\n%s", run.code, e.ns, run.stdout)
	}
}

// The table for people and YAML for tools say the same.
func TestExplainOutputFormats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.newConfig(t, appConfig)
	e.newWorkload(t, kit.Deployment, "w", map[string]string{searchKey: "true"}, initEnvFrom(refs.ConfigMap, "app"))

	run := e.explain(t, "deploy/w")
	if run.code != 0 {
		t.Fatalf("exit code %d: %s", run.code, run.stderr)
	}
	for _, want := range []string{
		"Workload:  Deployment " + e.ns + "/w", "State:     Stale", "Reason:    NotOptedIn",
		"SOURCES", "ConfigMap/app", "init (init) envFrom", "hint: the workload has \"reloader.stakater.com/search\"",
		"POLICY", searchKey + "  true", "SETTINGS", "--settle-window",
	} {
		if !strings.Contains(run.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, run.stdout)
		}
	}

	run = e.explain(t, "deployment/w", "-o", "yaml")
	var r explain.Report
	if err := yaml.Unmarshal([]byte(run.stdout), &r); err != nil || run.code != 0 {
		t.Fatalf("-o yaml (exit %d): %v\n%s", run.code, err, run.stdout)
	}
	if r.Workload.Name != "w" || r.Reason != "NotOptedIn" || reportSource(t, r, appConfig).Uses[0].Init != true {
		t.Errorf("-o yaml: %+v", r)
	}
}

// Bad arguments exit 2 naming the argument or flag; a workload that does
// not exist exits 1.
func TestExplainExitCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pods/w"}, 2, `argument "pods/w": unknown workload kind "pods"`},
		{[]string{"deployment/missing"}, 1, `"missing" not found`},
		{[]string{"deployment/w", "-o", "wide"}, 2, `--output: "wide" is not a format`},
		{[]string{"deployment/w", "--settle-window=-1s"}, 2, "--settle-window: -1s is negative"},
		{[]string{}, 2, "name a workload as <kind>/<name>, or use --all"},
	} {
		run := e.explain(t, tc.args...)
		if run.code != tc.code || !strings.Contains(run.stderr, tc.want) {
			t.Errorf("explain %v: exit %d, stderr %q; want exit %d and %q", tc.args, run.code, run.stderr, tc.code, tc.want)
		}
	}
}
