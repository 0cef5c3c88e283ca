package strategy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/ripple-dev/ripple/internal/refs"
)

func TestUnmarked(t *testing.T) {
	plain := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "web", Image: "web:1", Env: []corev1.EnvVar{{Name: "MODE", Value: "a"}, {Name: "STAKATER_MODE", Value: "b"}}},
		{Name: "side", Image: "side:1"},
	}}}
	marked := plain.DeepCopy()
	changes := []Change{
		{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "app-config"}, Container: "web", Hash: "c1"},
		{Ref: refs.Ref{Kind: refs.Secret, Name: "db"}, Container: "side", Hash: "s1"},
		{Ref: refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}, Container: "side", Hash: "v1"},
	}
	EnvVars{}.Apply(marked, changes, time.Unix(0, 0))
	Annotations{}.Apply(marked, changes, time.Unix(0, 0))
	got := Unmarked(marked)
	want := plain.DeepCopy()
	want.Spec.Containers[1].Env = nil
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("Unmarked kept a reloader's value or dropped one of the owner's:\n got %+v\nwant %+v", got, want)
	}
	if _, ok := EnvVars.Applied(EnvVars{}, marked, changes[0].Ref); !ok {
		t.Error("Unmarked changed its argument")
	}
}
