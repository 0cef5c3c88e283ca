package impact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

var keys = annotation.DefaultKeys("")

// saturday is a time when a Mon-Fri window is closed; monday02 its next
// opening.
var (
	saturday = time.Date(2026, 1, 3, 12, 0, 0, 0, time.UTC)
	monday02 = time.Date(2026, 1, 5, 2, 0, 0, 0, time.UTC)
)

// settings are Ripple's settings with flags args, as `ripple plan` reads
// them.
func settings(t *testing.T, args ...string) plan.Settings {
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
	return s.Plan
}

func configMap(data map[string]string, ann map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", Annotations: ann}, Data: data}
}

// deployment is an auto-reloaded Deployment with annotations ann whose
// container reads ConfigMap app: every key, or the keys given (as env
// vars).
func deployment(name string, ann map[string]string, keys ...string) *appsv1.Deployment {
	a := map[string]string{"reloader.stakater.com/auto": "true"}
	for k, v := range ann {
		a[k] = v
	}
	c := corev1.Container{Name: "app", Image: "example.com/app:1"}
	if len(keys) == 0 {
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
	}
	for _, k := range keys {
		c.Env = append(c.Env, corev1.EnvVar{Name: strings.ToUpper(k), ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: k}}})
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: a},
		Spec:       appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}},
	}
}

// assessor reads objs as `ripple plan` reads the new manifests.
func assessor(s plan.Settings, objs ...client.Object) Assessor {
	r := manifest.NewReader(objs)
	return Assessor{Reader: r, Settings: s, Kinds: []workload.Kind{workload.Deployment, workload.StatefulSet}, Find: Listed(r)}
}

// assess is the verdict of writing cur over old, with the workloads ws.
func assess(t *testing.T, s plan.Settings, now time.Time, old, cur client.Object, ws ...client.Object) Verdict {
	t.Helper()
	a := assessor(s, append(ws, cur)...)
	v, err := a.Assess(t.Context(), old, cur, now)
	if err != nil {
		t.Fatal(err)
	}
	sameAsOf(t, a, old, cur, now, v)
	return v
}

// sameAsOf fails unless v, Assess's verdict (made a chunk of readers at
// a time), is Of's of every consumer at once, and Assess's with chunks of
// one and two readers.
func sameAsOf(t *testing.T, a Assessor, old, cur client.Object, now time.Time, v Verdict) {
	t.Helper()
	ch, cs, err := a.Consumers(t.Context(), old, cur)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Of(t.Context(), ch, cs, now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v, whole) {
		t.Errorf("Assess's verdict\n%+v\nis not Of's\n%+v", v, whole)
	}
	defer func(n int) { chunk = n }(chunk)
	for _, chunk = range []int{1, 2} {
		small, err := a.Assess(t.Context(), old, cur, now)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(small, whole) {
			t.Errorf("Assess's verdict with chunks of %d\n%+v\nis not Of's\n%+v", chunk, small, whole)
		}
	}
}

// outcomes are where the verdict leaves each workload: "State/Reason",
// after "canary " for a canary.
func outcomes(v Verdict) map[string]string {
	out := map[string]string{}
	for _, w := range v.Workloads {
		out[w.Name] = string(w.State) + "/" + string(w.Reason)
		if w.Canary {
			out[w.Name] = "canary " + out[w.Name]
		}
	}
	return out
}

var (
	before = map[string]string{"db.url": "postgres://old", "log.level": "info"}
	after  = map[string]string{"db.url": "postgres://new", "log.level": "info"}
)

// Twelve workloads read the config: all roll, and the summary names two.
func TestVerdictCountsEveryWorkloadThatRolls(t *testing.T) {
	var ws []client.Object
	for i := range 12 {
		ws = append(ws, deployment(fmt.Sprintf("w%02d", i), nil))
	}
	// A workload that does not read the config is not in the verdict.
	other := deployment("other", nil)
	other.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name = "unrelated"
	v := assess(t, settings(t), saturday, configMap(before, nil), configMap(after, nil), append(ws, other)...)
	if v.Rolls != 12 || len(v.Workloads) != 12 || v.Canary != nil {
		t.Fatalf("rolls %d of %d listed, canary %v; want 12 of 12, none", v.Rolls, len(v.Workloads), v.Canary)
	}
	want := "ripple: this change rolls 12 workloads in shop (w00, w01, +10): keys changed: db.url (read by 12)"
	if got := Line(v); got != want {
		t.Errorf("line:\n %s\nwant\n %s", got, want)
	}
	// The same data: nothing rolls.
	if v := assess(t, settings(t), saturday, configMap(after, nil), configMap(after, nil), ws...); v.Rolls != 0 || len(v.Keys) != 0 {
		t.Errorf("unchanged data: rolls %d, keys %v; want 0, none", v.Rolls, v.Keys)
	}
}

// A canaried config: the canary-first workload is the canary, the others
// roll after it; one scaled to zero is never the canary while others run
// pods, as the change controller chooses, and stands Complete: no pod of
// it runs the old data.
func TestVerdictCanary(t *testing.T) {
	ann := map[string]string{keys.Canary: "1", keys.CanaryBake: "45s"}
	idle := deployment("aaa-idle", map[string]string{keys.CanaryFirst: "true"})
	idle.Spec.Replicas = new(int32)
	ws := []client.Object{deployment("api", nil), deployment("web", map[string]string{keys.CanaryFirst: "true"}), idle}
	v := assess(t, settings(t), saturday, configMap(before, ann), configMap(after, ann), ws...)
	if v.Canary == nil || len(v.Canary.Workloads) != 1 || v.Canary.Workloads[0].Name != "web" || v.Canary.Bake != "45s" {
		t.Fatalf("canary %+v; want web, bake 45s", v.Canary)
	}
	want := map[string]string{"web": "canary Pending/ReloadDue", "api": "Waiting/WaitingForCanary", "aaa-idle": "Complete/ScaledToZero"}
	if got := outcomes(v); !mapsEqual(got, want) || v.Rolls != 2 {
		t.Errorf("outcomes %v, rolls %d; want %v, 2", got, v.Rolls, want)
	}
	if !strings.Contains(v.Summary, "rolls 2 workloads in shop (web, api): canary web first, bake 45s") {
		t.Errorf("summary %q", v.Summary)
	}
	// Not canaried: no canary.
	if v := assess(t, settings(t), saturday, configMap(before, nil), configMap(after, nil), ws...); v.Canary != nil {
		t.Errorf("canary %+v without the annotation", v.Canary)
	}
	// --canary sets it for every config.
	if v := assess(t, settings(t, "--canary=2"), saturday, configMap(before, nil), configMap(after, nil), ws...); v.Canary == nil || len(v.Canary.Workloads) != 2 {
		t.Errorf("--canary=2: canary %+v; want 2 workloads", v.Canary)
	}
}

// unkept answers, for every canaried change, that no canary can be kept.
type unkept struct{}

func (unkept) Canary(context.Context, string, plan.Source) (canary.State, bool, error) {
	return canary.State{}, false, gather.UnkeptNotServed
}

// Where no canary can be kept (the admission webhook of a Ripple without
// the ConfigRollout CRD), a canaried change is held on every workload, as
// the controller holds it, and the warning says so rather than "canary
// first"; with --canary-unkept=roll everything rolls at once.
func TestVerdictCanaryUnkept(t *testing.T) {
	ann := map[string]string{keys.Canary: "1"}
	ws := []client.Object{deployment("api", nil), deployment("web", nil)}
	for _, tc := range []struct {
		args     []string
		want     map[string]string
		contains string
	}{
		{nil, map[string]string{"api": "Waiting/CanaryUnkept", "web": "Waiting/CanaryUnkept"},
			"rolls 2 workloads in shop (api, web): 2 wait until a canary can be kept"},
		{[]string{"--canary-unkept=roll"}, map[string]string{"api": "Pending/ReloadDue", "web": "Pending/ReloadDue"},
			"rolls 2 workloads in shop (api, web): keys changed"},
	} {
		a := assessor(settings(t, tc.args...), append(ws, configMap(after, ann))...)
		a.Canaries = unkept{}
		v, err := a.Assess(t.Context(), configMap(before, ann), configMap(after, ann), saturday)
		if err != nil {
			t.Fatal(err)
		}
		sameAsOf(t, a, configMap(before, ann), configMap(after, ann), saturday, v)
		if got := outcomes(v); !mapsEqual(got, tc.want) || v.Canary != nil || !strings.Contains(v.Summary, tc.contains) {
			t.Errorf("%v: outcomes %v, canary %+v, summary %q; want %v, no canary, %q", tc.args, got, v.Canary, v.Summary, tc.want, tc.contains)
		}
	}
}

// A closed reload window makes a workload wait until it opens; the same
// workload in its window rolls.
func TestVerdictWindow(t *testing.T) {
	ws := []client.Object{deployment("web", nil), deployment("batch", map[string]string{keys.ReloadWindow: "Mon-Fri 02:00-04:00"})}
	v := assess(t, settings(t), saturday, configMap(before, nil), configMap(after, nil), ws...)
	i := slices.IndexFunc(v.Workloads, func(w Workload) bool { return w.Name == "batch" })
	if i < 0 || v.Workloads[i].State != standing.Waiting || v.Workloads[i].Reason != reason.ReloadDeferred || !v.Workloads[i].Until.Equal(monday02) {
		t.Fatalf("batch: %+v; want waits for the window until %s", v.Workloads, monday02)
	}
	if v.Rolls != 2 || !strings.Contains(v.Summary, "1 waits for the window Mon-Fri 02:00-04:00") {
		t.Errorf("rolls %d, summary %q", v.Rolls, v.Summary)
	}
	open := time.Date(2026, 1, 5, 2, 30, 0, 0, time.UTC)
	if v := assess(t, settings(t), open, configMap(before, nil), configMap(after, nil), ws...); outcomes(v)["batch"] != "Pending/ReloadDue" {
		t.Errorf("in its window: %+v; want batch to roll", v.Workloads)
	}
	// The window of --reload-window is the default of every workload.
	v = assess(t, settings(t, "--reload-window=Sat-Sun 20:00-21:00"), saturday, configMap(before, nil), configMap(after, nil), deployment("web", nil))
	if !strings.Contains(v.Summary, "1 waits for the window Sat-Sun 20:00-21:00") {
		t.Errorf("--reload-window: summary %q", v.Summary)
	}
}

// A manual reload policy waits for an approval; notify and dry-run tell
// and roll nothing; a workload that is not opted in does not reload.
func TestVerdictPolicies(t *testing.T) {
	notOptedIn := deployment("report", nil)
	delete(notOptedIn.Annotations, "reloader.stakater.com/auto")
	ws := []client.Object{
		deployment("ledger", map[string]string{keys.ReloadPolicy: "manual"}),
		deployment("audit", map[string]string{keys.ReloadPolicy: "notify"}),
		deployment("web", nil), notOptedIn,
	}
	v := assess(t, settings(t), saturday, configMap(before, nil), configMap(after, nil), ws...)
	want := map[string]string{"ledger": "Waiting/ReloadPending", "audit": "NotifyOnly/WouldReload", "web": "Pending/ReloadDue", "report": "Stale/NotOptedIn"}
	if got := outcomes(v); !mapsEqual(got, want) || v.Rolls != 2 {
		t.Errorf("outcomes %v, rolls %d; want %v, 2", got, v.Rolls, want)
	}
	for _, part := range []string{"rolls 2 workloads in shop (web, ledger)", "1 waits for an approval", "1 notify only (would reload)", "1 reads it without reloading"} {
		if !strings.Contains(v.Summary, part) {
			t.Errorf("summary %q does not say %q", v.Summary, part)
		}
	}
	if v := assess(t, settings(t, "--dry-run"), saturday, configMap(before, nil), configMap(after, nil), ws...); v.Rolls != 0 {
		t.Errorf("--dry-run: rolls %d; want 0", v.Rolls)
	}
}

// The storm breaker holds a workload whose configs flapped: the hold is
// in Ripple's memory, which a caller that has it passes in its inputs.
func TestVerdictBreaker(t *testing.T) {
	s := settings(t, "--flap-threshold=1", "--flap-window=1h", "--flap-quiet-period=10m")
	a := assessor(s, deployment("web", nil), deployment("api", nil), configMap(after, nil))
	ch, cs, err := a.Consumers(t.Context(), configMap(before, nil), configMap(after, nil))
	if err != nil || len(cs) != 2 {
		t.Fatalf("consumers %v, %v", cs, err)
	}
	for i := range cs {
		if cs[i].Ref.Name == "web" {
			cs[i].Input.Storm = plan.Storm{ID: "an earlier change", Seen: []time.Time{saturday.Add(-time.Minute)}}
		}
	}
	v, err := Of(t.Context(), ch, cs, saturday)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(v.Workloads, func(w Workload) bool { return w.Name == "web" })
	if i < 0 || v.Workloads[i].State != standing.Waiting || v.Workloads[i].Reason != reason.ReloadHeld || v.Rolls != 2 || !strings.Contains(v.Summary, "1 waits for the storm breaker") {
		t.Errorf("workloads %+v, summary %q; want web held by the breaker", v.Workloads, v.Summary)
	}
	if w := v.Workloads[slices.IndexFunc(v.Workloads, func(w Workload) bool { return w.Name == "api" })]; w.State != standing.Pending {
		t.Errorf("api: %+v; want it to roll", w)
	}
}

// A verdict whose context has ended plans nothing more and says why: an
// admission review nobody waits for must not keep the CPUs busy.
func TestVerdictStopsWithItsContext(t *testing.T) {
	a := assessor(settings(t), deployment("web", nil), deployment("api", nil), configMap(after, nil))
	ch, cs, err := a.Consumers(t.Context(), configMap(before, nil), configMap(after, nil))
	if err != nil || len(cs) != 2 {
		t.Fatalf("consumers %v, %v", cs, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if v, err := Of(ctx, ch, cs, saturday); !errors.Is(err, context.Canceled) || len(v.Workloads) != 0 {
		t.Errorf("an ended context: verdict %+v, error %v; want none, context.Canceled", v, err)
	}
	if _, err := a.Assess(ctx, configMap(before, nil), configMap(after, nil), saturday); !errors.Is(err, context.Canceled) {
		t.Errorf("Assess with an ended context: %v; want context.Canceled", err)
	}
}

// The keys that changed, by name, with how many workloads read each; a
// workload that reloads on keys that did not change does not roll.
func TestVerdictKeys(t *testing.T) {
	old := map[string]string{"a": "1", "c": "3", "d": "4"}
	cur := map[string]string{"a": "one", "b": "2", "d": "4"}
	ws := []client.Object{
		deployment("all", nil), // reads every key
		deployment("reads-a", nil, "a"),
		deployment("reads-d", nil, "d"),
		deployment("on-d", map[string]string{keys.ReloadOnKeys: "true"}, "d"),
	}
	v := assess(t, settings(t), saturday, configMap(old, nil), configMap(cur, nil), ws...)
	want := []KeyChange{{"a", "changed", 2}, {"b", "added", 1}, {"c", "removed", 1}}
	if !slices.Equal(v.Keys, want) {
		t.Errorf("keys %+v; want %+v", v.Keys, want)
	}
	wantOut := map[string]string{"all": "Pending/ReloadDue", "reads-a": "Pending/ReloadDue", "reads-d": "Pending/ReloadDue", "on-d": "Complete/Applied"}
	if got := outcomes(v); !mapsEqual(got, wantOut) {
		t.Errorf("outcomes %v; want %v", got, wantOut)
	}
	if !strings.HasSuffix(v.Summary, "keys changed: a (read by 2), b (read by 1), c (read by 1)") {
		t.Errorf("summary %q", v.Summary)
	}
}

// No rendering holds a value of the config, nor a digest of its data or of
// a key, be it a Secret's or a ConfigMap's.
func TestVerdictHoldsNoValueNorDigest(t *testing.T) {
	const oldValue, newValue = "s3cr3t-OLD-7f9e2a", "s3cr3t-NEW-c41b8d"
	sec := func(v string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Data: map[string][]byte{"password": []byte(v)}}
	}
	web := deployment("web", nil)
	web.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	v := assess(t, settings(t), saturday, sec(oldValue), sec(newValue), web)
	if v.Rolls != 1 || len(v.Keys) != 1 || v.Keys[0].Name != "password" {
		t.Fatalf("verdict %+v; want web rolled, key password", v)
	}
	cmv := assess(t, settings(t), saturday, configMap(before, nil), configMap(after, nil), deployment("api", nil))
	var secrets []string
	for _, s := range []*corev1.Secret{sec(oldValue), sec(newValue)} {
		d := digest.Digester{}.Secret(s)
		secrets = append(secrets, d.Digest, plan.ShortDigest(d.Digest))
		for _, kd := range d.Keys.All() {
			secrets = append(secrets, kd)
		}
	}
	for _, m := range []map[string]string{before, after} {
		d := digest.Digester{}.ConfigMap(configMap(m, nil))
		secrets = append(secrets, d.Digest, plan.ShortDigest(d.Digest), m["db.url"])
	}
	secrets = append(secrets, oldValue, newValue)
	for _, format := range Formats {
		var b bytes.Buffer
		if err := Print(&b, format, []Verdict{v, cmv}); err != nil {
			t.Fatal(err)
		}
		out := b.String() + Line(v) + Line(cmv)
		for _, s := range secrets {
			if s != "" && strings.Contains(out, s) {
				t.Errorf("%s output holds %q:\n%s", format, s, out)
			}
		}
	}
}

// A config deleted with --reload-on-delete rolls the workloads that name
// it; without it, nothing rolls.
func TestVerdictDeleted(t *testing.T) {
	web := deployment("web", nil)
	web.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Optional = new(bool)
	for _, tc := range []struct {
		args  []string
		rolls int
		want  string
	}{{[]string{"--reload-on-delete"}, 1, "Pending/ReloadDue"}, {nil, 0, "Complete/Applied"}} {
		a := assessor(settings(t, tc.args...), web)
		v, err := a.Assess(t.Context(), configMap(before, nil), nil, saturday)
		if err != nil {
			t.Fatal(err)
		}
		sameAsOf(t, a, configMap(before, nil), nil, saturday, v)
		if v.Op != Deleted || v.Rolls != tc.rolls || outcomes(v)["web"] != tc.want {
			t.Errorf("%v: %+v; want deleted, %d rolled, web %s", tc.args, v, tc.rolls, tc.want)
		}
		if want := []KeyChange{{"db.url", "removed", 1}, {"log.level", "removed", 1}}; !slices.Equal(v.Keys, want) {
			t.Errorf("%v: keys %+v; want %+v", tc.args, v.Keys, want)
		}
	}
}

// A config created with --reload-on-create rolls its readers; without
// it, it is their baseline.
func TestVerdictCreated(t *testing.T) {
	cur := configMap(after, nil)
	if v := assess(t, settings(t, "--reload-on-create"), saturday, nil, cur, deployment("web", nil)); v.Op != Created || v.Rolls != 1 {
		t.Errorf("--reload-on-create: %+v; want created, 1 rolled", v)
	}
	v := assess(t, settings(t), saturday, nil, cur, deployment("web", nil))
	if v.Rolls != 0 || outcomes(v)["web"] != "Complete/Applied" {
		t.Errorf("without --reload-on-create: %+v; want web unaffected", v)
	}
}

// A line with long key names is cut to MaxLine, keeping the counts.
func TestLineIsBounded(t *testing.T) {
	old, cur := map[string]string{}, map[string]string{}
	for i := range 8 {
		cur[fmt.Sprintf("%s-%d", strings.Repeat("k", 60), i)] = "v"
	}
	v := assess(t, settings(t), saturday, configMap(old, nil), configMap(cur, nil), deployment("web", nil))
	line := []rune(Line(v))
	if len(line) != MaxLine || line[MaxLine-1] != '…' || !strings.HasPrefix(string(line), "ripple: this change rolls 1 workload in shop (web): keys changed: ") {
		t.Errorf("line of %d characters: %s", len(line), string(line))
	}
}

func TestPrintRejectsAnUnknownFormat(t *testing.T) {
	if err := Print(&bytes.Buffer{}, "yaml", nil); err == nil || !strings.Contains(err.Error(), `"yaml" is not a format`) {
		t.Errorf("err %v", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
