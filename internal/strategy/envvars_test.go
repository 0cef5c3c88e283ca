package strategy

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/refs"
)

func TestEnvVarName(t *testing.T) {
	tests := map[string]struct {
		ref  refs.Ref
		want string
	}{
		"example":             {ref: ref(refs.ConfigMap, "my-app.config"), want: "STAKATER_MY_APP_CONFIG_CONFIGMAP"},
		"secret":              {ref: ref(refs.Secret, "db-creds"), want: "STAKATER_DB_CREDS_SECRET"},
		"secretProviderClass": {ref: ref(refs.SecretProviderClass, "vault-spc"), want: "STAKATER_VAULT_SPC_SECRETPROVIDERCLASS"},
		"leading junk":        {ref: ref(refs.ConfigMap, "--a"), want: "STAKATER_A_CONFIGMAP"},
		"trailing junk":       {ref: ref(refs.ConfigMap, "a-"), want: "STAKATER_A__CONFIGMAP"},
		"run of junk":         {ref: ref(refs.ConfigMap, "a..b"), want: "STAKATER_A_B_CONFIGMAP"},
		"digits kept":         {ref: ref(refs.ConfigMap, "0app-v2"), want: "STAKATER_0APP_V2_CONFIGMAP"},
		"upper and lower":     {ref: ref(refs.ConfigMap, "MyApp"), want: "STAKATER_MYAPP_CONFIGMAP"},
		"only junk":           {ref: ref(refs.Secret, "-._"), want: "STAKATER__SECRET"},
		"non-ascii dropped":   {ref: ref(refs.ConfigMap, "café-x"), want: "STAKATER_CAF_X_CONFIGMAP"},
		"upper-cased first":   {ref: ref(refs.ConfigMap, "ı"), want: "STAKATER_I_CONFIGMAP"},
		"collision a-b":       {ref: ref(refs.ConfigMap, "a-b"), want: "STAKATER_A_B_CONFIGMAP"},
		"collision a.b":       {ref: ref(refs.ConfigMap, "a.b"), want: "STAKATER_A_B_CONFIGMAP"},
		"collision a--b":      {ref: ref(refs.ConfigMap, "a--b"), want: "STAKATER_A_B_CONFIGMAP"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := EnvVarName(tc.ref); got != tc.want {
				t.Errorf("EnvVarName(%s) = %q, want %q", tc.ref, got, tc.want)
			}
		})
	}
}

func template(containers ...corev1.Container) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: containers}}
}

func ctr(name string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Env: env}
}

func env(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func TestEnvVarsApply(t *testing.T) {
	cfg := ref(refs.ConfigMap, "app-cfg")
	sec := ref(refs.Secret, "app-secret")
	const cfgVar, secVar = "STAKATER_APP_CFG_CONFIGMAP", "STAKATER_APP_SECRET_SECRET"

	tests := map[string]struct {
		tpl     *corev1.PodTemplateSpec
		changes []Change
		want    *corev1.PodTemplateSpec
	}{
		"append keeps existing env in order": {
			tpl:     template(ctr("app", env("B", "1"), env("A", "2"))),
			changes: []Change{{Ref: cfg, Hash: "h1", Container: "app"}},
			want:    template(ctr("app", env("B", "1"), env("A", "2"), env(cfgVar, "h1"))),
		},
		"append to container without env": {
			tpl:     template(ctr("app")),
			changes: []Change{{Ref: cfg, Hash: "h1", Container: "app"}},
			want:    template(ctr("app", env(cfgVar, "h1"))),
		},
		"replace in place": {
			tpl:     template(ctr("app", env("A", "1"), env(cfgVar, "old"), env("Z", "2"))),
			changes: []Change{{Ref: cfg, Hash: "new", Container: "app"}},
			want:    template(ctr("app", env("A", "1"), env(cfgVar, "new"), env("Z", "2"))),
		},
		"replace clears a stray valueFrom": {
			tpl: template(ctr("app", corev1.EnvVar{Name: cfgVar, ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
			}})),
			changes: []Change{{Ref: cfg, Hash: "new", Container: "app"}},
			want:    template(ctr("app", env(cfgVar, "new"))),
		},
		"other containers untouched": {
			tpl:     template(ctr("app", env("A", "1")), ctr("sidecar", env(cfgVar, "old")), ctr("last")),
			changes: []Change{{Ref: cfg, Hash: "h1", Container: "last"}},
			want:    template(ctr("app", env("A", "1")), ctr("sidecar", env(cfgVar, "old")), ctr("last", env(cfgVar, "h1"))),
		},
		"several changes on several containers": {
			tpl: template(ctr("app"), ctr("sidecar")),
			changes: []Change{
				{Ref: cfg, Hash: "h1", Container: "app"},
				{Ref: sec, Hash: "h2", Container: "sidecar"},
				{Ref: sec, Hash: "h3", Container: "app"},
			},
			want: template(ctr("app", env(cfgVar, "h1"), env(secVar, "h3")), ctr("sidecar", env(secVar, "h2"))),
		},
		"unknown container is skipped": {
			tpl:     template(ctr("app", env("A", "1"))),
			changes: []Change{{Ref: cfg, Hash: "h1", Container: "gone"}},
			want:    template(ctr("app", env("A", "1"))),
		},
		"empty container is skipped": {
			tpl:     template(ctr("app")),
			changes: []Change{{Ref: cfg, Hash: "h1", Container: ""}},
			want:    template(ctr("app")),
		},
		"init containers are never written": {
			tpl: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("init")},
				Containers:     []corev1.Container{ctr("app")},
			}},
			changes: []Change{{Ref: cfg, Hash: "h1", Container: "init"}},
			want: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("init")},
				Containers:     []corev1.Container{ctr("app")},
			}},
		},
		"nil template": {
			tpl:     nil,
			changes: []Change{{Ref: cfg, Hash: "h1", Container: "app"}},
			want:    nil,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			EnvVars{}.Apply(tc.tpl, tc.changes, time.Unix(1786300000, 0))
			if !reflect.DeepEqual(tc.tpl, tc.want) {
				t.Errorf("after Apply:\n got %+v\nwant %+v", tc.tpl, tc.want)
			}
		})
	}
}

func TestEnvVarsApplied(t *testing.T) {
	cfg := ref(refs.ConfigMap, "app-cfg")
	tests := map[string]struct {
		tpl      *corev1.PodTemplateSpec
		ref      refs.Ref
		wantHash string
		wantOK   bool
	}{
		"nil template": {tpl: nil, ref: cfg},
		"absent":       {tpl: template(ctr("app", env("A", "1"))), ref: cfg},
		"in second container": {
			tpl: template(ctr("app"), ctr("sidecar", env("STAKATER_APP_CFG_CONFIGMAP", "h1"))),
			ref: cfg, wantHash: "h1", wantOK: true,
		},
		"first container wins": {
			tpl: template(ctr("app", env("STAKATER_APP_CFG_CONFIGMAP", "h1")), ctr("sidecar", env("STAKATER_APP_CFG_CONFIGMAP", "h2"))),
			ref: cfg, wantHash: "h1", wantOK: true,
		},
		"other kind of same name is not it": {
			tpl: template(ctr("app", env("STAKATER_APP_CFG_SECRET", "h1"))),
			ref: cfg,
		},
		"init container is not read": {
			tpl: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("init", env("STAKATER_APP_CFG_CONFIGMAP", "h1"))},
				Containers:     []corev1.Container{ctr("app")},
			}},
			ref: cfg,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hash, ok := EnvVars{}.Applied(tc.tpl, tc.ref)
			if hash != tc.wantHash || ok != tc.wantOK {
				t.Errorf("Applied() = (%q, %t), want (%q, %t)", hash, ok, tc.wantHash, tc.wantOK)
			}
		})
	}
}

func TestEnvVarsRoundTrip(t *testing.T) {
	tests := map[string]struct {
		ref       refs.Ref
		container string
	}{
		"configMap on first":  {ref: ref(refs.ConfigMap, "my-app.config"), container: "app"},
		"secret on sidecar":   {ref: ref(refs.Secret, "db"), container: "sidecar"},
		"spc on first":        {ref: ref(refs.SecretProviderClass, "vault"), container: "app"},
		"collision-free name": {ref: ref(refs.ConfigMap, "x-1"), container: "sidecar"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tpl := template(ctr("app"), ctr("sidecar"))
			s := EnvVars{}
			if _, ok := s.Applied(tpl, tc.ref); ok {
				t.Fatal("Applied() found a hash before Apply")
			}
			for _, h := range []string{"first", "second"} {
				s.Apply(tpl, []Change{{Ref: tc.ref, Hash: h, Container: tc.container}}, time.Now())
				if got, ok := s.Applied(tpl, tc.ref); !ok || got != h {
					t.Errorf("Applied() after Apply(%q) = (%q, %t)", h, got, ok)
				}
			}
			total := 0
			for _, c := range tpl.Spec.Containers {
				total += len(c.Env)
			}
			if total != 1 {
				t.Errorf("template has %d env vars after two applies, want 1", total)
			}
		})
	}
}

func TestEnvVarsApplyDeleted(t *testing.T) {
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	other := corev1.EnvVar{Name: "KEEP", Value: "1"}
	tpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Env: []corev1.EnvVar{other, {Name: EnvVarName(cm), Value: "abc"}}},
		{Name: "side", Env: []corev1.EnvVar{{Name: EnvVarName(cm), Value: "abc"}}},
	}}}
	EnvVars{}.Apply(tpl, []Change{{Ref: cm, Hash: "aae45badef99284e4dae01d6046154ea9d99532f", Container: "app", Deleted: true}}, time.Time{})
	if _, ok := (EnvVars{}).Applied(tpl, cm); ok {
		t.Fatalf("env var still present after a delete: %+v", tpl.Spec.Containers)
	}
	if got := tpl.Spec.Containers[0].Env; len(got) != 1 || got[0] != other {
		t.Fatalf("other env vars changed: %+v", got)
	}
}

// A config of another namespace gets a name of its own: never a
// same-namespace config's (whose names stay Reloader's), nor another
// reference's that converts alike.
func TestSharedEnvVarName(t *testing.T) {
	shared := EnvVarName(refs.Ref{Kind: refs.ConfigMap, Name: "a/shared"})
	if want := "RIPPLE_SHARED_A_SHARED_"; !strings.HasPrefix(shared, want) || !strings.HasSuffix(shared, "_CONFIGMAP") {
		t.Errorf("EnvVarName(a/shared) = %q, want %s<hash>_CONFIGMAP", shared, want)
	}
	for _, local := range []string{"a-shared", "shared", "ripple-shared-a-shared", "a.shared"} {
		if n := EnvVarName(refs.Ref{Kind: refs.ConfigMap, Name: local}); n == shared || strings.HasPrefix(n, "RIPPLE_") {
			t.Errorf("same-namespace %q got %q, beside the shared %q", local, n, shared)
		}
	}
	if got := EnvVarName(refs.Ref{Kind: refs.ConfigMap, Name: "a-shared"}); got != "STAKATER_A_SHARED_CONFIGMAP" {
		t.Errorf("same-namespace name changed: %q", got)
	}
	alike := EnvVarName(refs.Ref{Kind: refs.ConfigMap, Name: "a-b/c"})
	if other := EnvVarName(refs.Ref{Kind: refs.ConfigMap, Name: "a/b-c"}); alike == other {
		t.Errorf("a-b/c and a/b-c share %q", alike)
	}
	if s := EnvVarName(refs.Ref{Kind: refs.Secret, Name: "a/shared"}); !strings.HasSuffix(s, "_SECRET") || s == shared {
		t.Errorf("the Secret a/shared got %q", s)
	}
}
