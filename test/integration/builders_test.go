package integration

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
)

// use is one way a pod spec references a config.
type use struct {
	how string // envFrom, valueFrom, volume, projected, initEnvFrom, initVolume
	ref refs.Ref
}

func envFrom(k refs.Kind, name string) use {
	return use{how: "envFrom", ref: refs.Ref{Kind: k, Name: name}}
}
func valueFrom(k refs.Kind, name string) use {
	return use{how: "valueFrom", ref: refs.Ref{Kind: k, Name: name}}
}
func volume(k refs.Kind, name string) use {
	return use{how: "volume", ref: refs.Ref{Kind: k, Name: name}}
}
func projected(k refs.Kind, name string) use {
	return use{how: "projected", ref: refs.Ref{Kind: k, Name: name}}
}
func initEnvFrom(k refs.Kind, name string) use {
	return use{how: "initEnvFrom", ref: refs.Ref{Kind: k, Name: name}}
}
func initVolume(k refs.Kind, name string) use {
	return use{how: "initVolume", ref: refs.Ref{Kind: k, Name: name}}
}

// podSpec builds a pod spec with one container "app" (and an init
// container when a use needs one) that uses configs as listed.
func podSpec(uses ...use) corev1.PodSpec {
	app := corev1.Container{Name: "app", Image: "registry.invalid/app:1"}
	init := corev1.Container{Name: "init", Image: "registry.invalid/init:1"}
	spec := corev1.PodSpec{}
	for i, u := range uses {
		target := &app
		if u.how == "initEnvFrom" || u.how == "initVolume" {
			target = &init
		}
		switch u.how {
		case "envFrom", "initEnvFrom":
			target.EnvFrom = append(target.EnvFrom, envFromSource(u.ref))
		case "valueFrom":
			target.Env = append(target.Env, corev1.EnvVar{Name: "V" + string(rune('A'+i)), ValueFrom: valueFromSource(u.ref)})
		case "volume", "initVolume", "projected":
			vol := corev1.Volume{Name: "v" + string(rune('a'+i)), VolumeSource: volumeSource(u.ref, u.how == "projected")}
			spec.Volumes = append(spec.Volumes, vol)
			target.VolumeMounts = append(target.VolumeMounts, corev1.VolumeMount{Name: vol.Name, MountPath: "/etc/" + vol.Name})
		}
	}
	spec.Containers = []corev1.Container{app}
	if init.EnvFrom != nil || init.VolumeMounts != nil {
		spec.InitContainers = []corev1.Container{init}
	}
	return spec
}

func envFromSource(r refs.Ref) corev1.EnvFromSource {
	if r.Kind == refs.Secret {
		return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}}}
	}
	return corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}}}
}

func valueFromSource(r refs.Ref) *corev1.EnvVarSource {
	if r.Kind == refs.Secret {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}, Key: "k"}}
	}
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}, Key: "k"}}
}

func volumeSource(r refs.Ref, isProjected bool) corev1.VolumeSource {
	if isProjected {
		src := corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}}}
		if r.Kind == refs.Secret {
			src = corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}}}
		}
		return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{src}}}
	}
	if r.Kind == refs.Secret {
		return corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: r.Name}}
	}
	return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: r.Name}}}
}

// configObject builds a config with data k=value.
func configObject(ns string, r refs.Ref, annotations map[string]string, value string) client.Object {
	meta := metav1.ObjectMeta{Name: r.Name, Namespace: ns, Annotations: annotations, Labels: map[string]string{"v": "1"}}
	if r.Kind == refs.Secret {
		return &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": []byte(value)}}
	}
	return &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": value}}
}
