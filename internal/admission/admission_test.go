package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/impact"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

var keys = annotation.DefaultKeys("")

// handler answers for a cluster holding objs, with Ripple's flags args.
func handler(t testing.TB, objs []client.Object, args ...string) *Handler {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := metainfo.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, err := f.Resolve(metainfo.Info{})
	if err != nil {
		t.Fatal(err)
	}
	r := manifest.NewReader(objs)
	return &Handler{
		Assessor: func() impact.Assessor {
			return impact.Assessor{Reader: r, Settings: s.Plan, Kinds: []workload.Kind{workload.Deployment}, Find: impact.Listed(r)}
		},
		Keys: keys, Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 3, 12, 0, 0, 0, time.UTC)), Log: logr.Discard(),
	}
}

func configMap(ns string, data, ann map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Annotations: ann}, Data: data}
}

// readers are n auto-reloaded Deployments of ns that read ConfigMap app
// (or Secret app).
func readers(ns string, n int, kind refs.Kind) []client.Object {
	var out []client.Object
	for i := range n {
		c := corev1.Container{Name: "app", Image: "example.com/app:1"}
		if kind == refs.Secret {
			c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
		} else {
			c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
		}
		out = append(out, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%02d", i), Annotations: map[string]string{keys.Auto: "true"}},
			Spec:       appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}},
		})
	}
	return out
}

func review(t testing.TB, op admissionv1.Operation, old, cur client.Object) admission.Request {
	t.Helper()
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
	either := cur
	if either == nil {
		either = old
	}
	kind := "ConfigMap"
	if _, ok := either.(*corev1.Secret); ok {
		kind = "Secret"
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Kind: metav1.GroupVersionKind{Version: "v1", Kind: kind}, Namespace: either.GetNamespace(), Name: either.GetName(),
		OldObject: raw(old), Object: raw(cur),
	}}
}

var (
	before = map[string]string{"db.url": "postgres://old"}
	after  = map[string]string{"db.url": "postgres://new"}
)

// A change read by three workloads is let through with the verdict as its
// one warning; a write of the same data, or of a config nobody reads, has
// nothing to say.
func TestWarnsWhatAChangeRolls(t *testing.T) {
	h := handler(t, readers("shop", 3, refs.ConfigMap))
	resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil)))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "ripple: this change rolls 3 workloads in shop (web-00, web-01, +1)") ||
		!strings.Contains(resp.Warnings[0], "db.url (read by 3)") {
		t.Errorf("a change read by 3: allowed %v, warnings %q", resp.Allowed, resp.Warnings)
	}
	same := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", before, map[string]string{"note": "x"})))
	if !same.Allowed || len(same.Warnings) != 0 {
		t.Errorf("an annotation change: allowed %v, warnings %q; want allowed, silent", same.Allowed, same.Warnings)
	}
	other := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("other", before, nil), configMap("other", after, nil)))
	if !other.Allowed || len(other.Warnings) != 0 {
		t.Errorf("a config nobody reads: allowed %v, warnings %q; want allowed, silent", other.Allowed, other.Warnings)
	}
}

// A create or a delete gets a verdict only where Ripple reloads on it.
func TestCreateAndDeleteNeedTheirFlags(t *testing.T) {
	ws := readers("shop", 2, refs.ConfigMap)
	for _, tt := range []struct {
		name      string
		args      []string
		op        admissionv1.Operation
		old, cur  client.Object
		wantRolls string
	}{
		{"create", nil, admissionv1.Create, nil, configMap("shop", after, nil), ""},
		{"create --reload-on-create", []string{"--reload-on-create"}, admissionv1.Create, nil, configMap("shop", after, nil), "rolls 2 workloads"},
		{"delete", nil, admissionv1.Delete, configMap("shop", before, nil), nil, ""},
		{"delete --reload-on-delete", []string{"--reload-on-delete"}, admissionv1.Delete, configMap("shop", before, nil), nil, "rolls 2 workloads"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := handler(t, ws, tt.args...)
			h.ReloadOnCreate, h.ReloadOnDelete = len(tt.args) > 0 && tt.op == admissionv1.Create, len(tt.args) > 0 && tt.op == admissionv1.Delete
			resp := h.Handle(t.Context(), review(t, tt.op, tt.old, tt.cur))
			got := strings.Join(resp.Warnings, "\n")
			if !resp.Allowed || (tt.wantRolls == "") != (got == "") || !strings.Contains(got, tt.wantRolls) {
				t.Errorf("allowed %v, warnings %q; want %q", resp.Allowed, resp.Warnings, tt.wantRolls)
			}
		})
	}
}

// The guard denies a change above its limit unless the config
// acknowledges at least the count, and says so: the limit, where it is
// set, and the annotation that lets the change through.
func TestGuard(t *testing.T) {
	h := handler(t, readers("shop", 3, refs.ConfigMap))
	h.MaxRollouts = 2
	for _, tt := range []struct {
		ack      string
		allowed  bool
		wantDeny string
	}{
		{"", false, `ripple: this change rolls 3 workloads in shop, above the limit of 2 (--admission-max-rollouts); to apply it, annotate the ConfigMap ripple.dev/ack-rollouts: "3"`},
		{"2", false, "(it acknowledges 2)"},
		{"many", false, `(its "many" is not a count)`},
		{"-5", false, `(its "-5" is not a count)`},
		{strings.Repeat("9", 1000), false, `(its "` + strings.Repeat("9", 32) + `…" is not a count)`},
		{"3", true, ""},
		{"10", true, ""},
	} {
		ann := map[string]string{}
		if tt.ack != "" {
			ann[keys.AckRollouts] = tt.ack
		}
		resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, ann)))
		msg := ""
		if resp.Result != nil {
			msg = resp.Result.Message
		}
		if resp.Allowed != tt.allowed || !strings.Contains(msg, tt.wantDeny) || len(resp.Warnings) != 1 {
			t.Errorf("ack %q: allowed %v, message %q, warnings %q; want allowed %v, a message with %q and the verdict", tt.ack, resp.Allowed, msg, resp.Warnings, tt.allowed, tt.wantDeny)
		}
	}
	h.MaxRollouts = 3
	if resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil))); !resp.Allowed {
		t.Errorf("3 rollouts under a limit of 3: denied %v", resp.Result)
	}
}

// With --namespace-defaults a Namespace sets its own limit, in place of
// the cluster's; one that is not a count is told, and the cluster's holds.
func TestNamespaceLimit(t *testing.T) {
	for _, tt := range []struct {
		limit, wantWarning string
		allowed            bool
		wantSource         string
	}{
		{"5", "", true, ""},
		{"1", "", false, "(the Namespace's ripple.dev/max-rollouts)"},
		{"lots", `the Namespace's ripple.dev/max-rollouts "lots" is not a count of workloads`, false, "(--admission-max-rollouts)"},
	} {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{keys.MaxRollouts: tt.limit}}}
		h := handler(t, append(readers("shop", 3, refs.ConfigMap), ns), "--namespace-defaults")
		h.MaxRollouts, h.NamespaceLimits = 2, true
		resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil)))
		msg := ""
		if resp.Result != nil {
			msg = resp.Result.Message
		}
		warnings := strings.Join(resp.Warnings, "\n")
		if resp.Allowed != tt.allowed || !strings.Contains(msg, tt.wantSource) || !strings.Contains(warnings, tt.wantWarning) {
			t.Errorf("Namespace limit %q: allowed %v, message %q, warnings %q", tt.limit, resp.Allowed, msg, resp.Warnings)
		}
	}
}

// Neither a warning nor a denial holds a value of a Secret, nor a digest
// of it.
func TestSecretsValuesStayOut(t *testing.T) {
	secret := func(v string) *corev1.Secret {
		return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app"}, Data: map[string][]byte{"password": []byte(v)}}
	}
	h := handler(t, readers("shop", 2, refs.Secret))
	h.MaxRollouts = 1
	old, cur := secret("hunter2-old-value"), secret("hunter2-new-value")
	resp := h.Handle(t.Context(), review(t, admissionv1.Update, old, cur))
	out, err := json.Marshal(resp.AdmissionResponse)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Allowed || !strings.Contains(string(out), "password") {
		t.Fatalf("response %s: want a denial naming the key", out)
	}
	a := h.Assessor()
	ch, _, err := a.Consumers(t.Context(), old, cur)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"hunter2", ch.Before.Digest, ch.After.Digest} {
		if strings.Contains(string(out), leak) {
			t.Errorf("response %s holds %q", out, leak)
		}
	}
}

// A namespace Ripple does not act in, a config the resource selector
// leaves out, and a kind other than a config get no verdict.
func TestOutOfScope(t *testing.T) {
	h := handler(t, readers("shop", 2, refs.ConfigMap))
	h.InScope = func(context.Context, string) (bool, error) { return false, nil }
	if resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil))); !resp.Allowed || len(resp.Warnings) > 0 {
		t.Errorf("out of scope: allowed %v, warnings %q", resp.Allowed, resp.Warnings)
	}
	h = handler(t, readers("shop", 2, refs.ConfigMap))
	h.Selector = labels.SelectorFromSet(labels.Set{"reload": "yes"})
	if resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil))); !resp.Allowed || len(resp.Warnings) > 0 {
		t.Errorf("not selected: allowed %v, warnings %q", resp.Allowed, resp.Warnings)
	}
	req := review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil))
	req.Kind.Kind = "Pod"
	if resp := h.Handle(t.Context(), req); !resp.Allowed || len(resp.Warnings) > 0 {
		t.Errorf("a Pod: allowed %v, warnings %q", resp.Allowed, resp.Warnings)
	}
}

// A verdict that fails, or takes longer than the budget, lets the write
// through with a warning that says it was not checked, in time.
func TestNoVerdictLetsTheWriteThrough(t *testing.T) {
	h := handler(t, readers("shop", 3, refs.ConfigMap))
	h.MaxRollouts = 1
	inner := h.Assessor
	h.Assessor = func() impact.Assessor {
		a := inner()
		a.Find = func(ctx context.Context, _ workload.Kind, _ string, _ refs.Ref) ([]client.Object, error) {
			<-ctx.Done()
			return nil, fmt.Errorf("the cache did not answer: %w", ctx.Err())
		}
		return a
	}
	h.Budget = 50 * time.Millisecond
	start := time.Now()
	resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil)))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "could not tell in time") {
		t.Errorf("allowed %v, warnings %q; want allowed with the warning", resp.Allowed, resp.Warnings)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s, want about the 50ms budget", took)
	}
	// A verdict that ends past its budget, the planner not watching the
	// clock, is not given either: the API server may have stopped waiting.
	h.Assessor = func() impact.Assessor {
		a := inner()
		find := a.Find
		a.Find = func(ctx context.Context, k workload.Kind, ns string, c refs.Ref) ([]client.Object, error) {
			<-ctx.Done()
			return find(context.WithoutCancel(ctx), k, ns, c)
		}
		return a
	}
	resp = h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil)))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "could not tell in time") {
		t.Errorf("a late verdict: allowed %v, warnings %q; want allowed with the warning", resp.Allowed, resp.Warnings)
	}
	// Any other failure is told without "in time".
	h.Assessor = func() impact.Assessor {
		a := inner()
		a.Find = func(context.Context, workload.Kind, string, refs.Ref) ([]client.Object, error) {
			return nil, errors.New("the index is missing")
		}
		return a
	}
	resp = h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil)))
	if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != "ripple: could not tell what this change rolls; it is not checked" {
		t.Errorf("a failed verdict: allowed %v, warnings %q", resp.Allowed, resp.Warnings)
	}
}

// A review that cannot be read is let through, told: an error answer
// would deny the write.
func TestMalformedReview(t *testing.T) {
	h := handler(t, nil)
	req := review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil))
	req.Object.Raw = []byte("{not json")
	if resp := h.Handle(t.Context(), req); !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "could not read this write") {
		t.Errorf("malformed: %+v", resp.AdmissionResponse)
	}
}

// A tenant's warning names only its own namespace's workloads, though
// another namespace's read a config of the same name.
func TestWarnsOnlyOfTheNamespace(t *testing.T) {
	h := handler(t, append(readers("shop", 1, refs.ConfigMap), readers("bank", 3, refs.ConfigMap)...))
	resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil)))
	if len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "ripple: this change rolls 1 workload in shop (web-00)") || strings.Contains(resp.Warnings[0], "bank") {
		t.Errorf("warnings %q; want 1 workload of shop, nothing of bank", resp.Warnings)
	}
}

// A review of another namespace's Secret answers a guess of its data the
// same whether the guess is right or wrong, in both digest modes: the
// verdict is made from the write alone, never from what the readers run.
func TestVerdictIsNoOracle(t *testing.T) {
	secret := func(v string) *corev1.Secret {
		return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "app"}, Data: map[string][]byte{"pin": []byte(v)}}
	}
	for _, d := range []digest.Digester{{Mode: digest.SHA1}, {Mode: digest.HMACSHA256, Ring: digest.Ring{Current: []byte("install key")}}} {
		t.Run(string(d.Mode), func(t *testing.T) {
			// The reader runs the data "482913": its template shows that
			// data's digest, as Ripple's last rollout wrote it.
			objs := readers("prod", 1, refs.Secret)
			c := &objs[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
			c.Env = []corev1.EnvVar{{Name: strategy.EnvVarName(refs.Ref{Kind: refs.Secret, Name: "app"}), Value: d.Secret(secret("482913")).Digest}}
			h := handler(t, objs)
			assessor := h.Assessor
			h.Assessor = func() impact.Assessor { a := assessor(); a.Digester = d; return a }
			answer := func(guess string) string {
				resp := h.Handle(t.Context(), review(t, admissionv1.Update, secret("000000"), secret(guess)))
				out, err := json.Marshal(resp.AdmissionResponse)
				if err != nil {
					t.Fatal(err)
				}
				return string(out)
			}
			right, wrong := answer("482913"), answer("111111")
			if right != wrong {
				t.Errorf("the right guess is answered %s, a wrong one %s", right, wrong)
			}
			if !strings.Contains(right, "rolls 1 workload") {
				t.Errorf("answer %s: want the write told as rolling its reader", right)
			}
		})
	}
}

// At most MaxInFlight verdicts are made at once: a review past them is let
// through at once, told it is not checked, and logged once however many
// come; a review after they end gets its verdict.
func TestBusyReviewsAreNotChecked(t *testing.T) {
	h := handler(t, readers("shop", 3, refs.ConfigMap))
	var logged atomic.Int32
	h.Log = funcr.New(func(string, string) { logged.Add(1) }, funcr.Options{})
	inner := h.Assessor
	release, started := make(chan struct{}), make(chan struct{}, MaxInFlight)
	h.Assessor = func() impact.Assessor {
		a := inner()
		find := a.Find
		a.Find = func(ctx context.Context, k workload.Kind, ns string, c refs.Ref) ([]client.Object, error) {
			started <- struct{}{}
			<-release
			return find(ctx, k, ns, c)
		}
		return a
	}
	write := review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil))
	var wg sync.WaitGroup
	for range MaxInFlight {
		wg.Go(func() {
			if resp := h.Handle(t.Context(), write); len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "rolls 3 workloads") {
				t.Errorf("a verdict in flight: warnings %q", resp.Warnings)
			}
		})
	}
	for range MaxInFlight {
		<-started
	}
	for range 20 {
		resp := h.Handle(t.Context(), write)
		if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != "ripple: busy checking other writes; this one is not checked" {
			t.Fatalf("a review past the verdicts in flight: allowed %v, warnings %q", resp.Allowed, resp.Warnings)
		}
	}
	if n := logged.Load(); n != 1 {
		t.Errorf("20 reviews let through unchecked logged %d lines, want 1", n)
	}
	close(release)
	wg.Wait()
	if resp := h.Handle(t.Context(), write); len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "rolls 3 workloads") {
		t.Errorf("a review after the others ended: warnings %q", resp.Warnings)
	}
}
