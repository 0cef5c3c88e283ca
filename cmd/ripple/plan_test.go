package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ripple-dev/ripple/internal/admission"
	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/dependents/dependentstest"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/impact"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/source"
)

// The manifests of testdata/plan: app-config changes (canaried; read by
// workloads that roll, wait for a window or an approval, reload on a key
// that did not change, or are not opted in), a Secret's value changes,
// a ConfigMap is created and one deleted.
const planOld, planNew = "testdata/plan/old", "testdata/plan/new"

// planNow is the clock of the plan tests: a Friday noon, when the window
// Mon-Fri 02:00-04:00 is closed.
func planNow() time.Time { return time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC) }

// runPlanT runs `ripple plan` with args and stdin.
func runPlanT(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runPlan(t.Context(), "ripple", args, strings.NewReader(stdin), &out, &errb, planNow)
	return out.String(), errb.String(), code
}

func TestPlanGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"plan.txt", nil},
		{"plan.json", []string{"-o", "json"}},
		{"plan.md", []string{"--output=markdown"}},
		// Created and deleted configs roll their readers with
		// --reload-on-create and --reload-on-delete.
		{"plan-create-delete.txt", []string{"--reload-on-create", "--reload-on-delete"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			stdout, stderr, code := runPlanT(t, "", append([]string{"--old", planOld, "--new", planNew}, tt.args...)...)
			if code != 0 || stderr != "" {
				t.Errorf("exit code %d, stderr %q", code, stderr)
			}
			compareGoldenIn(t, "plan", tt.golden, stdout)
		})
	}
}

// docs/blast-radius.md shows the text output of testdata/plan as it is.
func TestPlanDocShowsTheOutput(t *testing.T) {
	doc, err := os.ReadFile("../../docs/blast-radius.md")
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, _ := runPlanT(t, "", "--old", planOld, "--new", planNew)
	if !strings.Contains(string(doc), "```text\n"+stdout+"```") {
		t.Errorf("docs/blast-radius.md does not show the output of ripple plan --old %s --new %s:\n%s", planOld, planNew, stdout)
	}
}

// --max-rollouts fails the run with its own code when one change rolls
// more, and names it; at the limit it passes.
func TestPlanMaxRollouts(t *testing.T) {
	args := []string{"--old", planOld, "--new", planNew}
	stdout, stderr, code := runPlanT(t, "", append(args, "--max-rollouts", "3")...)
	if code != exitOverLimit || stderr != "ripple plan: above --max-rollouts=3: ConfigMap shop/app-config rolls 4\n" || !strings.Contains(stdout, "app-config") {
		t.Errorf("above the limit: exit code %d, stderr %q; want %d and the config named, with the verdicts printed", code, stderr, exitOverLimit)
	}
	if _, stderr, code := runPlanT(t, "", append(args, "--max-rollouts=4")...); code != 0 || stderr != "" {
		t.Errorf("at the limit: exit code %d, stderr %q", code, stderr)
	}
	// The config acknowledges 4, as the admission guard takes it; 3 is
	// too few.
	configs, err := os.ReadFile(filepath.Join(planNew, "configs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := os.ReadFile(filepath.Join(planNew, "workloads.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const bake = "ripple.dev/canary-bake: 30s}"
	for ack, want := range map[string]int{"4": 0, "3": exitOverLimit} {
		acked := strings.Replace(string(configs), bake, `ripple.dev/canary-bake: 30s, ripple.dev/ack-rollouts: "`+ack+`"}`, 1)
		stdin := acked + "\n---\n" + string(workloads)
		if _, stderr, code := runPlanT(t, stdin, "--old", planOld, "--new", "-", "--max-rollouts", "3"); code != want {
			t.Errorf("acknowledging %s: exit code %d, stderr %q; want %d", ack, code, stderr, want)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(bad, []byte("kind: ConfigMap\nmetadata: [not, a, map\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked := t.TempDir()
	target, err := filepath.Abs(filepath.Join(planNew, "configs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(linked, "configs.yaml")); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args   []string
		code   int
		stderr string
	}{
		"a link in a tree":   {[]string{"--old", planOld, "--new", linked}, 1, "--new: " + filepath.Join(linked, "configs.yaml") + " is a symbolic link"},
		"unknown output":     {[]string{"--old", planOld, "--new", planNew, "-o", "yaml"}, 2, `--output: "yaml" is not a format; use text, json, markdown`},
		"no --new":           {[]string{"--old", planOld}, 2, "--old and --new are required"},
		"an argument":        {[]string{"--old", planOld, "--new", planNew, "extra"}, 2, `unexpected argument "extra"`},
		"negative limit":     {[]string{"--old", planOld, "--new", planNew, "--max-rollouts=-1"}, 2, "--max-rollouts: -1 is negative"},
		"both read stdin":    {[]string{"--old", "-", "--new", "-"}, 2, "only one of them can read stdin"},
		"unparseable --new":  {[]string{"--old", planOld, "--new", bad}, 1, "--new: " + bad},
		"missing --old":      {[]string{"--old", "testdata/plan/nothing-here", "--new", planNew}, 1, "--old: "},
		"bad Ripple setting": {[]string{"--old", planOld, "--new", planNew, "--reload-window=someday"}, 2, "--reload-window"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := runPlanT(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit code %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// The new manifests may come from stdin (kustomize build | ripple plan).
func TestPlanReadsStdin(t *testing.T) {
	var all []string
	for _, f := range []string{"configs.yaml", "workloads.yaml"} {
		raw, err := os.ReadFile(filepath.Clean(filepath.Join(planNew, f)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, string(raw))
	}
	piped, stderr, code := runPlanT(t, strings.Join(all, "\n---\n"), "--old", planOld, "--new", "-")
	want, _, _ := runPlanT(t, "", "--old", planOld, "--new", planNew)
	if code != 0 || stderr != "" || piped != want {
		t.Errorf("exit code %d, stderr %q, output:\n%s\nwant the output from the directory:\n%s", code, stderr, piped, want)
	}
}

func TestPlanHelp(t *testing.T) {
	stdout, _, code := runPlanT(t, "", "--help")
	for _, want := range []string{"plan --old <file|dir|-> --new <file|dir|->", "Examples:", "--max-rollouts 20", "3 a change rolls more than --max-rollouts", "no cluster is read", "--reload-window"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("--help (exit %d) does not say %q:\n%s", code, want, stdout)
		}
	}
}

// No output of `ripple plan` holds a value of the configs, nor a digest
// of the Secret's data.
func TestPlanHoldsNoValue(t *testing.T) {
	objs, err := manifest.Load([]string{planOld, planNew}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	d := digest.Digester{}
	for _, o := range objs {
		copied, _ := o.DeepCopyObject().(client.Object)
		if source.KindOf(copied) == "" {
			continue
		}
		secrets = append(secrets, configValues(copied)...)
		_, _ = source.Transform(d, copied)
		secrets = append(secrets, source.Digest(copied))
		for _, kd := range source.Keys(copied).All() {
			secrets = append(secrets, kd)
		}
	}
	for _, format := range impact.Formats {
		stdout, _, _ := runPlanT(t, "", "--old", planOld, "--new", planNew, "-o", format, "--reload-on-create", "--reload-on-delete")
		for _, s := range secrets {
			if len(s) > 3 && strings.Contains(stdout, s) {
				t.Errorf("-o %s holds %q:\n%s", format, s, stdout)
			}
		}
	}
}

// configValues are the values of a ConfigMap's or Secret's data.
func configValues(o client.Object) []string {
	var out []string
	switch c := o.(type) {
	case *corev1.ConfigMap:
		for _, v := range c.Data {
			out = append(out, v)
		}
	case *corev1.Secret:
		for _, v := range c.Data {
			out = append(out, string(v))
		}
		for _, v := range c.StringData {
			out = append(out, v)
		}
	}
	return out
}

// The verdict a live webhook would give, from the objects as the
// controller's cache holds them (the configs digested without their
// data, and the old version of each changed one; the workloads found by
// the cache's index), with the new config as the admission request
// brings it, counts what `ripple plan` counts for the same state: both
// are impact.Assessor.Assess. The admission webhook, answering the same
// write from that state, warns with plan's summary, word for word.
func TestPlanCountsEqualTheCacheVerdict(t *testing.T) {
	stdout, stderr, code := runPlanT(t, "", "--old", planOld, "--new", planNew, "-o", "json")
	var report impact.Report
	if err := json.Unmarshal([]byte(stdout), &report); err != nil || code != 0 || len(report.Configs) != 4 {
		t.Fatalf("plan: exit code %d, stderr %q, %d configs (%v)", code, stderr, len(report.Configs), err)
	}
	oldObjs, err := manifest.Load([]string{planOld}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	newObjs, err := manifest.Load([]string{planNew}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	// The cluster before the write: the workloads, and the configs as
	// they were, digested as the cache transform leaves them.
	var cached []client.Object
	for _, o := range newObjs {
		if source.KindOf(o) == "" {
			cached = append(cached, o)
		}
	}
	for _, o := range oldObjs {
		if c, _ := o.DeepCopyObject().(client.Object); source.KindOf(c) != "" {
			_, _ = source.Transform(digest.Digester{}, c)
			cached = append(cached, c)
		}
	}
	settings, err := metainfo.BindFlags(pflag.NewFlagSet("t", pflag.ContinueOnError)).Resolve(metainfo.Info{})
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme)
	index := dependents.Index{Keys: settings.Plan.Keys, SourceKinds: settings.Plan.SourceKinds}
	kinds := reloadedKinds(settings, nil)
	for _, k := range kinds {
		if err := index.Register(t.Context(), dependentstest.Indexer(b), k); err != nil {
			t.Fatal(err)
		}
	}
	cache := b.WithObjects(cached...).Build()
	index.Reader = cache
	a := impact.Assessor{Reader: cache, Settings: settings.Plan, Kinds: reloadedKinds(settings, cache), Find: index.Of}
	for _, want := range report.Configs {
		// The admission request: the new object (none for a delete), and
		// the old one (none for a create), as the cache holds it.
		cur := find(newObjs, want.Kind, want.Namespace, want.Name)
		old := find(append(newObjs, oldObjs...), want.Kind, want.Namespace, want.Name)
		old, _ = old.DeepCopyObject().(client.Object)
		err := cache.Get(t.Context(), client.ObjectKeyFromObject(old), old)
		switch {
		case apierrors.IsNotFound(err):
			old = nil
		case err != nil:
			t.Fatal(err)
		}
		got, err := a.Assess(t.Context(), old, cur, planNow())
		if err != nil {
			t.Fatal(err)
		}
		// The webhook is sent the old object whole, with its data.
		var sent client.Object
		if old != nil {
			sent = find(oldObjs, want.Kind, want.Namespace, want.Name)
		}
		warnedAsPlanned(t, a, sent, cur, want)
		if got.Rolls != want.Rolls || got.Summary != want.Summary || len(got.Workloads) != len(want.Workloads) {
			t.Errorf("%s %s: from the cache, rolls %d: %s\nfrom plan, rolls %d: %s", want.Kind, want.Name, got.Rolls, got.Summary, want.Rolls, want.Summary)
		}
		for i := range min(len(got.Workloads), len(want.Workloads)) {
			if g, w := got.Workloads[i], want.Workloads[i]; g.Ref != w.Ref || g.State != w.State || g.Reason != w.Reason || g.Canary != w.Canary {
				t.Errorf("%s %s: workload %d from the cache %+v; from plan %+v", want.Kind, want.Name, i, g, w)
			}
		}
	}
	if report.Rolls != 5 {
		t.Errorf("plan rolls %d workloads in all; want 5 (4 of app-config, 1 of db-creds)", report.Rolls)
	}
}

// warnedAsPlanned checks that the admission webhook, answering the
// write of cur over old from a's state, warns with plan's verdict want:
// its summary for an update; nothing for a create or a delete, which
// roll nothing without --reload-on-create or --reload-on-delete.
func warnedAsPlanned(t *testing.T, a impact.Assessor, old, cur client.Object, want impact.Verdict) {
	t.Helper()
	h := &admission.Handler{Assessor: func() impact.Assessor { return a }, Keys: a.Settings.Keys,
		Clock: clocktesting.NewFakePassiveClock(planNow()), Log: logr.Discard()}
	raw := func(obj client.Object) runtime.RawExtension {
		if obj == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	op := map[impact.Op]admissionv1.Operation{impact.Updated: admissionv1.Update, impact.Created: admissionv1.Create, impact.Deleted: admissionv1.Delete}[want.Op]
	resp := h.Handle(t.Context(), ctrladmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Kind: metav1.GroupVersionKind{Version: "v1", Kind: want.Kind}, Namespace: want.Namespace, Name: want.Name,
		OldObject: raw(old), Object: raw(cur)}})
	wantWarnings := []string{impact.Line(want)}
	if want.Op != impact.Updated {
		wantWarnings = nil
	}
	if !resp.Allowed || !slices.Equal(resp.Warnings, wantWarnings) {
		t.Errorf("%s %s: the webhook answers allowed %v, warnings %q; plan says %q", want.Kind, want.Name, resp.Allowed, resp.Warnings, wantWarnings)
	}
}

// find is the object of objs of kind (ConfigMap, Secret) ns/name.
func find(objs []client.Object, kind, ns, name string) client.Object {
	for _, o := range objs {
		if string(source.KindOf(o)) == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	return nil
}
