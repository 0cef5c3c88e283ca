package strategy

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
)

func annotated(ann map[string]string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
}

func TestAnnotationsApply(t *testing.T) {
	now := time.Unix(1786300000, 0)
	cfg := ref(refs.ConfigMap, "app-cfg")

	tests := map[string]struct {
		strategy Annotations
		tpl      *corev1.PodTemplateSpec
		changes  []Change
		want     map[string]string
	}{
		"creates annotations": {
			strategy: Annotations{},
			tpl:      &corev1.PodTemplateSpec{},
			changes:  []Change{{Ref: cfg, Namespace: "team-a", Hash: "dc30e0fa", Container: "app"}},
			want: map[string]string{
				annotation.LastReloadedFrom: `{"type":"CONFIGMAP","name":"app-cfg","namespace":"team-a","hash":"dc30e0fa","containerRefs":["app"],"observedAt":1786300000}`,
			},
		},
		"keeps other annotations and overwrites own": {
			strategy: Annotations{},
			tpl:      annotated(map[string]string{"other": "x", annotation.LastReloadedFrom: "old"}),
			changes:  []Change{{Ref: ref(refs.Secret, "db"), Namespace: "ns", Hash: "h", Container: "sidecar"}},
			want: map[string]string{
				"other":                     "x",
				annotation.LastReloadedFrom: `{"type":"SECRET","name":"db","namespace":"ns","hash":"h","containerRefs":["sidecar"],"observedAt":1786300000}`,
			},
		},
		"last change wins": {
			strategy: Annotations{},
			tpl:      &corev1.PodTemplateSpec{},
			changes: []Change{
				{Ref: cfg, Namespace: "ns", Hash: "h1", Container: "app"},
				{Ref: ref(refs.SecretProviderClass, "vault"), Namespace: "ns", Hash: "h2", Container: "app"},
			},
			want: map[string]string{
				annotation.LastReloadedFrom: `{"type":"SECRETPROVIDERCLASS","name":"vault","namespace":"ns","hash":"h2","containerRefs":["app"],"observedAt":1786300000}`,
			},
		},
		"Reloader's key": {
			strategy: Annotations{},
			tpl:      &corev1.PodTemplateSpec{},
			changes:  []Change{{Ref: cfg, Namespace: "ns", Hash: "h", Container: "app"}},
			want: map[string]string{
				annotation.LastReloadedFrom: `{"type":"CONFIGMAP","name":"app-cfg","namespace":"ns","hash":"h","containerRefs":["app"],"observedAt":1786300000}`,
			},
		},
		"no container gives empty list, not null": {
			strategy: Annotations{},
			tpl:      &corev1.PodTemplateSpec{},
			changes:  []Change{{Ref: cfg, Namespace: "ns", Hash: "h"}},
			want: map[string]string{
				annotation.LastReloadedFrom: `{"type":"CONFIGMAP","name":"app-cfg","namespace":"ns","hash":"h","containerRefs":[],"observedAt":1786300000}`,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.strategy.Apply(tc.tpl, tc.changes, now)
			if !maps.Equal(tc.tpl.Annotations, tc.want) {
				t.Errorf("annotations after Apply:\n got %v\nwant %v", tc.tpl.Annotations, tc.want)
			}
			if len(tc.tpl.Spec.Containers) != 0 {
				t.Errorf("Apply touched containers: %v", tc.tpl.Spec.Containers)
			}
		})
	}
}

func TestAnnotationsApplied(t *testing.T) {
	const value = `{"type":"CONFIGMAP","name":"app-cfg","namespace":"team-a","hash":"h1","containerRefs":["app"],"observedAt":1786300000}`
	tests := map[string]struct {
		strategy Annotations
		tpl      *corev1.PodTemplateSpec
		ref      refs.Ref
		wantHash string
		wantOK   bool
	}{
		"match": {
			tpl: annotated(map[string]string{annotation.LastReloadedFrom: value}),
			ref: ref(refs.ConfigMap, "app-cfg"), wantHash: "h1", wantOK: true,
		},
		"other name": {
			tpl: annotated(map[string]string{annotation.LastReloadedFrom: value}),
			ref: ref(refs.ConfigMap, "app-cfg-2"),
		},
		"other kind": {
			tpl: annotated(map[string]string{annotation.LastReloadedFrom: value}),
			ref: ref(refs.Secret, "app-cfg"),
		},
		"delete marker is reported as written": {
			tpl: annotated(map[string]string{annotation.LastReloadedFrom: `{"type":"SECRET","name":"db","namespace":"ns","hash":"aae45badef99284e4dae01d6046154ea9d99532f","containerRefs":["app"],"observedAt":1}`}),
			ref: ref(refs.Secret, "db"), wantHash: "aae45badef99284e4dae01d6046154ea9d99532f", wantOK: true,
		},
		"invalid json": {
			tpl: annotated(map[string]string{annotation.LastReloadedFrom: "{not json"}),
			ref: ref(refs.ConfigMap, "app-cfg"),
		},
		"no annotation": {
			tpl: annotated(map[string]string{"other": value}),
			ref: ref(refs.ConfigMap, "app-cfg"),
		},
		"nil annotations": {
			tpl: &corev1.PodTemplateSpec{},
			ref: ref(refs.ConfigMap, "app-cfg"),
		},
		"nil template": {
			tpl: nil,
			ref: ref(refs.ConfigMap, "app-cfg"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hash, ok := tc.strategy.Applied(tc.tpl, tc.ref)
			if hash != tc.wantHash || ok != tc.wantOK {
				t.Errorf("Applied() = (%q, %t), want (%q, %t)", hash, ok, tc.wantHash, tc.wantOK)
			}
		})
	}
}

func TestAnnotationsRoundTrip(t *testing.T) {
	tests := map[string]refs.Ref{
		"configMap":           ref(refs.ConfigMap, "app-cfg"),
		"secret":              ref(refs.Secret, "db-creds"),
		"secretProviderClass": ref(refs.SecretProviderClass, "vault"),
		"name needing escape": ref(refs.ConfigMap, `a"<b>&c`),
	}
	for name, r := range tests {
		t.Run(name, func(t *testing.T) {
			s := Annotations{}
			tpl := &corev1.PodTemplateSpec{}
			s.Apply(tpl, []Change{{Ref: r, Namespace: "ns", Hash: "abc123", Container: "app"}}, time.Now())
			if got, ok := s.Applied(tpl, r); !ok || got != "abc123" {
				t.Errorf("Applied() = (%q, %t), want (%q, true)", got, ok, "abc123")
			}
		})
	}
}

// A config of another namespace is recorded under its own namespace and
// its name "namespace/name", which no same-namespace config of that name
// reads back as its own.
func TestAnnotationsShared(t *testing.T) {
	tpl := &corev1.PodTemplateSpec{}
	shared := ref(refs.ConfigMap, "mesh/ca")
	Annotations{}.Apply(tpl, []Change{{Ref: shared, Namespace: "shop", Hash: "h1", Container: "app"}}, time.Unix(1786300000, 0))
	want := `{"type":"CONFIGMAP","name":"mesh/ca","namespace":"mesh","hash":"h1","containerRefs":["app"],"observedAt":1786300000}`
	if got := tpl.Annotations[annotation.LastReloadedFrom]; got != want {
		t.Errorf("annotation = %s, want %s", got, want)
	}
	if h, ok := (Annotations{}).Applied(tpl, shared); !ok || h != "h1" {
		t.Errorf("Applied(mesh/ca) = %q, %v", h, ok)
	}
	if _, ok := (Annotations{}).Applied(tpl, ref(refs.ConfigMap, "ca")); ok {
		t.Error("the same-namespace ConfigMap ca reads the shared one's hash")
	}
}
