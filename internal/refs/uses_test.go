package refs

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestUses(t *testing.T) {
	cm, sec, spc := Ref{ConfigMap, "cm"}, Ref{Secret, "sec"}, Ref{SecretProviderClass, "spc"}
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{container("init", envSecret("sec"))},
		Containers: []corev1.Container{
			container("app", envCM("cm"), mounts("items"), mounts("proj")),
			container("side", envFromSecret("sec")),
		},
		Volumes: []corev1.Volume{
			{Name: "items", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"},
				Items:                []corev1.KeyToPath{{Key: "a", Path: "a"}, {Key: "b", Path: "b"}},
			}}},
			projectedVolume("proj", projSecret("sec")),
			csiVolume("unmounted", "spc"),
		},
	}
	want := []Use{
		{Ref: sec, Via: Env, Container: "init", Init: true, Keys: []string{"k"}},
		{Ref: cm, Via: Env, Container: "app", Keys: []string{"k"}},
		{Ref: cm, Via: Volume, Container: "app", Volume: "items", Keys: []string{"a", "b"}},
		{Ref: sec, Via: Projected, Container: "app", Volume: "proj"},
		{Ref: sec, Via: EnvFrom, Container: "side"},
		{Ref: spc, Via: CSI, Volume: "unmounted"},
	}
	uses := Uses(spec)
	if !reflect.DeepEqual(uses, want) {
		t.Fatalf("Uses:\n got %+v\nwant %+v", uses, want)
	}
	for _, tc := range []struct {
		ref  Ref
		keys []string
		all  bool
	}{
		{cm, []string{"a", "b", "k"}, false},
		{sec, nil, true},
		{Ref{ConfigMap, "other"}, nil, false},
	} {
		keys, all := Keys(uses, tc.ref)
		if !reflect.DeepEqual(keys, tc.keys) || all != tc.all {
			t.Errorf("Keys(%v) = %v, %v; want %v, %v", tc.ref, keys, all, tc.keys, tc.all)
		}
	}
	if Uses(nil) != nil {
		t.Error("Uses(nil) is not nil")
	}
}
