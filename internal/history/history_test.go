package history

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Digests of made-up data, 40 hex digits as Reloader's.
const (
	sumA = "aaaaaaaaaaaa1111111111111111111111111111"
	sumB = "bbbbbbbbbbbb2222222222222222222222222222"
	sumC = "cccccccccccc3333333333333333333333333333"
	sumS = "5555555555555555555555555555555555555555"
)

var (
	app    = refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	db     = refs.Ref{Kind: refs.Secret, Name: "db"}
	keys   = annotation.DefaultKeys("")
	appEnv = strategy.EnvVarName(app)
	t0     = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
)

// tplOpt changes a test pod template.
type tplOpt func(*corev1.PodTemplateSpec)

// tpl is a template whose container app uses ConfigMap app (envFrom).
func tpl(opts ...tplOpt) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "web:1",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
	}}}}
	for _, o := range opts {
		o(t)
	}
	return t
}

func image(i string) tplOpt {
	return func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = i }
}

func env(name, value string) tplOpt {
	return func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].Env = append(t.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: value})
	}
}

func tplAnnotation(k, v string) tplOpt {
	return func(t *corev1.PodTemplateSpec) {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[k] = v
	}
}

func usesSecret(name string) tplOpt {
	return func(t *corev1.PodTemplateSpec) {
		t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}})
	}
}

// rev is revision n, created n minutes after t0, with template t and the
// applied record rec (nil for none).
func rev(n int64, t *corev1.PodTemplateSpec, rec string) Revision {
	r := Revision{Number: n, Object: fmt.Sprintf("ReplicaSet/web-%d", n), Created: t0.Add(time.Duration(n) * time.Minute), Template: t}
	if rec != "" {
		r.Annotations = map[string]string{keys.Applied: rec}
	}
	return r
}

func reloaded(from string) string {
	return `{"type":"CONFIGMAP","name":"app","namespace":"shop","hash":"` + from + `","containerRefs":["app"],"observedAt":1}`
}

// row is what a test expects of one revision.
type row struct {
	by      StartedBy
	reason  string // a part of the reason
	configs string // configList
	changes string
}

func TestBuild(t *testing.T) {
	baseline := `{"ConfigMap/app":"` + sumA + `"}`
	tests := map[string]struct {
		revs     []Revision
		strategy strategy.Strategy
		configs  []refs.Ref
		now      map[refs.Ref]Now
		want     []row
		changed  []Changed
		unknown  []string
	}{
		"created, reloaded, image changed, reloaded": {
			revs: []Revision{
				rev(1, tpl(), baseline),
				rev(2, tpl(env(appEnv, sumB)), baseline),
				rev(3, tpl(env(appEnv, sumB), image("web:2")), baseline),
				rev(4, tpl(env(appEnv, sumC), image("web:2")), baseline),
			},
			now: map[refs.Ref]Now{app: {Found: true, Digest: sumC}},
			want: []row{
				{ByOther, "first revision", "ConfigMap/app=aaaaaaaaaaaa (record)", "-"},
				{ByRipple, "only what a reload writes changed", "ConfigMap/app=bbbbbbbbbbbb (env)", "ConfigMap/app"},
				{ByOther, "the template changed", "ConfigMap/app=bbbbbbbbbbbb (env)", "image of app"},
				{ByRipple, "only what a reload writes changed", "ConfigMap/app=cccccccccccc (env)", "ConfigMap/app"},
			},
		},
		"template changed with the configs (helm upgrade)": {
			revs: []Revision{
				rev(1, tpl(env(appEnv, sumA)), ""),
				rev(2, tpl(env(appEnv, sumB), image("web:2")), ""),
			},
			now: map[refs.Ref]Now{app: {Found: true, Digest: sumB}},
			want: []row{
				{ByOther, "first revision", "ConfigMap/app=aaaaaaaaaaaa (env)", "-"},
				{ByOther, "the template changed with the configs", "ConfigMap/app=bbbbbbbbbbbb (env)", "ConfigMap/app, image of app"},
			},
		},
		"rollback to an older image": {
			revs: []Revision{
				rev(1, tpl(), baseline),
				rev(3, tpl(image("web:2")), baseline),
				func() Revision { r := rev(4, tpl(), baseline); r.Earlier = []int64{2}; r.Created = t0; return r }(),
			},
			now: map[refs.Ref]Now{app: {Found: true, Digest: sumA}},
			want: []row{
				{ByOther, "first revision", "ConfigMap/app=aaaaaaaaaaaa (record)", "-"},
				// Revision 2's template is kept: revision 4 is it again.
				{ByOther, "the template changed", "ConfigMap/app=aaaaaaaaaaaa (record)", "image of app"},
				{ByOther, "the template of revision 2 again: a rollback", "ConfigMap/app=aaaaaaaaaaaa (record)", "image of app"},
			},
		},
		"undo of a reload: the data is newer than the revision": {
			revs: []Revision{
				rev(1, tpl(), baseline),
				rev(3, tpl(env(appEnv, sumB)), baseline),
				func() Revision {
					r := rev(4, tpl(env(appEnv, sumA)), baseline)
					r.Earlier, r.Created = []int64{2}, t0.Add(90*time.Second)
					return r
				}(),
			},
			now: map[refs.Ref]Now{app: {Found: true, Digest: sumB}},
			want: []row{
				{ByOther, "first revision", "ConfigMap/app=aaaaaaaaaaaa (record)", "-"},
				{ByRipple, "only what a reload writes", "ConfigMap/app=bbbbbbbbbbbb (env)", "ConfigMap/app"},
				{ByUnknown, "revision 2 again, changed only where a reload writes", "ConfigMap/app=aaaaaaaaaaaa (env)", "ConfigMap/app"},
			},
			changed: []Changed{{Config: "ConfigMap/app", BuiltFor: "aaaaaaaaaaaa", Now: "bbbbbbbbbbbb"}},
		},
		"a ControllerRevision reused without numbers": {
			revs: []Revision{
				rev(1, tpl(), ""),
				func() Revision { r := rev(3, tpl(image("web:2")), ""); r.Created = t0; return r }(),
				rev(2, tpl(image("web:3")), ""),
			},
			want: []row{
				{ByOther, "first revision", "ConfigMap/app=? (not recorded)", "-"},
				{ByOther, "the template changed", "ConfigMap/app=? (not recorded)", "image of app"},
				{ByOther, "the template of an earlier revision again: a rollback", "ConfigMap/app=? (not recorded)", "image of app"},
			},
		},
		"previous revision no longer kept": {
			revs: []Revision{rev(3, tpl(), ""), rev(4, tpl(image("web:2")), "")},
			want: []row{
				{ByUnknown, "revision 2 is no longer kept", "ConfigMap/app=? (not recorded)", "-"},
				{ByOther, "the template changed", "ConfigMap/app=? (not recorded)", "image of app"},
			},
		},
		"rollout restart": {
			revs: []Revision{
				rev(1, tpl(), ""),
				rev(2, tpl(tplAnnotation(restartedAt, "2026-11-25T10:00:00Z")), ""),
			},
			want: []row{
				{ByOther, "first revision", "ConfigMap/app=? (not recorded)", "-"},
				{ByOther, "the template changed", "ConfigMap/app=? (not recorded)", "rollout restart"},
			},
		},
		"annotations strategy: the annotation, else the record": {
			strategy: strategy.Annotations{},
			revs: []Revision{
				rev(1, tpl(usesSecret("db")), `{"ConfigMap/app":"`+sumA+`","Secret/db":"`+sumS+`"}`),
				rev(2, tpl(usesSecret("db"), tplAnnotation(annotation.LastReloadedFrom, reloaded(sumB))), `{"ConfigMap/app":"`+sumA+`","Secret/db":"`+sumS+`"}`),
			},
			configs: []refs.Ref{app, db},
			now:     map[refs.Ref]Now{app: {Found: true, Digest: sumB}, db: {Found: false}},
			want: []row{
				{ByOther, "first revision", "ConfigMap/app=aaaaaaaaaaaa (record), Secret/db=555555555555 (record)", "-"},
				{ByRipple, "only what a reload writes", "ConfigMap/app=bbbbbbbbbbbb (annotation), Secret/db=555555555555 (record)", "ConfigMap/app"},
			},
			changed: []Changed{{Config: "Secret/db", BuiltFor: "555555555555", Deleted: true}},
		},
		"env var of a config no longer used, and a deleted one": {
			revs: []Revision{
				rev(1, tpl(env("STAKATER_OLD_CFG_CONFIGMAP", sumC), env(strategy.EnvVarName(db), digest.DeleteMarker)), ""),
			},
			configs: []refs.Ref{app, db},
			now:     map[refs.Ref]Now{app: {Found: true, Digest: sumA}, db: {Found: false}},
			want: []row{
				{ByOther, "first revision", "ConfigMap/app=? (not recorded), Secret/db deleted, ConfigMap/?STAKATER_OLD_CFG_CONFIGMAP=cccccccccccc (env)", "-"},
			},
			unknown: []string{"ConfigMap/app"},
		},
		"colliding env var names are read from the record": {
			revs: []Revision{
				rev(1, tpl(env("STAKATER_A_B_CONFIGMAP", sumB)), `{"ConfigMap/a-b":"`+sumA+`"}`),
			},
			configs: []refs.Ref{{Kind: refs.ConfigMap, Name: "a-b"}, {Kind: refs.ConfigMap, Name: "a.b"}},
			want: []row{
				{ByOther, "first revision", "ConfigMap/a-b=aaaaaaaaaaaa (record), ConfigMap/app=? (not recorded), ConfigMap/?STAKATER_A_B_CONFIGMAP=bbbbbbbbbbbb (env)", "-"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := tc.strategy
			if s == nil {
				s = strategy.EnvVars{}
			}
			h := Build(Input{Workload: Workload{Kind: "Deployment", Namespace: "shop", Name: "web"},
				Revisions: tc.revs, Keys: keys, Strategy: s, Configs: tc.configs, Now: tc.now})
			if len(h.Revisions) != len(tc.want) {
				t.Fatalf("%d revisions, want %d: %+v", len(h.Revisions), len(tc.want), h.Revisions)
			}
			for i, w := range tc.want {
				r := h.Revisions[i]
				if r.StartedBy != w.by || !strings.Contains(r.Reason, w.reason) {
					t.Errorf("revision %d: started by %s (%s), want %s (%s)", r.Revision, r.StartedBy, r.Reason, w.by, w.reason)
				}
				if got := configList(r.Configs); got != w.configs {
					t.Errorf("revision %d: configs\n got %s\nwant %s", r.Revision, got, w.configs)
				}
				if got := dash(strings.Join(r.Changes, ", ")); got != w.changes {
					t.Errorf("revision %d: changes %q, want %q", r.Revision, got, w.changes)
				}
				if r.Current != (i == len(tc.want)-1) {
					t.Errorf("revision %d: current %t", r.Revision, r.Current)
				}
			}
			want := tc.changed
			if want == nil {
				want = []Changed{}
			}
			if !slices.Equal(h.Current.Changed, want) || !slices.Equal(h.Current.Unknown, tc.unknown) {
				t.Errorf("current: changed %+v unknown %v, want %+v %v", h.Current.Changed, h.Current.Unknown, want, tc.unknown)
			}
		})
	}
}

func TestBuildNoRevisions(t *testing.T) {
	h := Build(Input{Workload: Workload{Kind: "Deployment", Namespace: "shop", Name: "web"}, Strategy: strategy.EnvVars{}})
	if len(h.Revisions) != 0 || h.Current != nil {
		t.Errorf("history of nothing: %+v", h)
	}
	var b strings.Builder
	if err := Print(&b, FormatTable, h); err != nil || !strings.Contains(b.String(), "No revisions kept.") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// Under --digest=hmac-sha256 a history hides the digests of Secrets, and
// still tells a Secret changed; a ConfigMap's digests stay.
func TestWithoutSecretDigests(t *testing.T) {
	h := History{
		Revisions: []Row{{Configs: []Config{{Kind: "Secret", Name: "db", Digest: "0123456789ab", From: fromEnv}, {Kind: "ConfigMap", Name: "app", Digest: "ba9876543210", From: fromEnv}}}},
		Current:   &Current{Changed: []Changed{{Config: "Secret/db", BuiltFor: "0123456789ab", Now: "fedcba987654"}, {Config: "Secret/gone", BuiltFor: "0123456789ab", Deleted: true}}},
	}
	h.withoutSecretDigests()
	cs, ch := h.Revisions[0].Configs, h.Current.Changed
	if cs[0].Digest != hiddenDigest || cs[1].Digest != "ba9876543210" {
		t.Errorf("configs %+v", cs)
	}
	if ch[0].BuiltFor != hiddenDigest || ch[0].Now != hiddenDigest || ch[1].BuiltFor != hiddenDigest || ch[1].Now != "" || !ch[1].Deleted {
		t.Errorf("changed %+v", ch)
	}
}
