package plan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// fileKeySpec is a pod spec whose container app reads env var DB_URL by
// fileKeyRef from emptyDir volume env, which init container render
// writes; render reads ConfigMap cfg as its reads says (a volume, env or
// envFrom).
func fileKeySpec(reads string) corev1.PodSpec {
	cfg := corev1.LocalObjectReference{Name: "cfg"}
	render := corev1.Container{Name: "render", VolumeMounts: []corev1.VolumeMount{{Name: "env", MountPath: "/out"}}}
	spec := corev1.PodSpec{Volumes: []corev1.Volume{{Name: "env", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}
	switch reads {
	case "volume":
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cfg}}})
		render.VolumeMounts = append(render.VolumeMounts, corev1.VolumeMount{Name: "conf", MountPath: "/in"})
	case "env":
		render.Env = []corev1.EnvVar{{Name: "TEMPLATE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cfg, Key: "t"}}}}
	case "envFrom":
		render.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cfg}}}
	}
	spec.InitContainers = []corev1.Container{render}
	spec.Containers = []corev1.Container{{Name: "app",
		Env: []corev1.EnvVar{{Name: "DB_URL", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "env", Path: "app.env", Key: "DB_URL"}}}}}}
	return spec
}

// A fileKeyRef is followed through its emptyDir volume to the init
// container that writes it, and to the watched config that one reads
// (through a volume, env or envFrom): the reason names the container, the
// variable, the volume, the init container and the config. A config not
// watched, a volume that is no emptyDir, or an init container that does
// not mount the volume blocks nothing.
func TestFileKeyBlocked(t *testing.T) {
	cfg := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	want := "container app reads env var DB_URL from a file (fileKeyRef) in emptyDir volume env, which init container render writes from ConfigMap cfg"
	for _, reads := range []string{"volume", "env", "envFrom"} {
		spec := fileKeySpec(reads)
		if got := FileKeyBlocked(&spec, []refs.Ref{cfg}); !strings.Contains(got, want) {
			t.Errorf("render reads cfg by %s: %q, want %q", reads, got, want)
		}
		if got := FileKeyBlocked(&spec, []refs.Ref{{Kind: refs.ConfigMap, Name: "other"}}); got != "" {
			t.Errorf("render reads cfg by %s, cfg not watched: %q, want nothing", reads, got)
		}
	}
	spec := fileKeySpec("volume")
	spec.Volumes[0].EmptyDir, spec.Volumes[0].HostPath = nil, &corev1.HostPathVolumeSource{Path: "/tmp"}
	if got := FileKeyBlocked(&spec, []refs.Ref{cfg}); got != "" {
		t.Errorf("not an emptyDir: %q, want nothing", got)
	}
	spec = fileKeySpec("volume")
	spec.InitContainers[0].VolumeMounts = spec.InitContainers[0].VolumeMounts[1:]
	if got := FileKeyBlocked(&spec, []refs.Ref{cfg}); got != "" {
		t.Errorf("render does not mount the env volume: %q, want nothing", got)
	}
	spec = fileKeySpec("none")
	if got := FileKeyBlocked(&spec, []refs.Ref{cfg}); got != "" {
		t.Errorf("render reads no config: %q, want nothing", got)
	}
}

// The in-place method cannot refresh a variable an init container wrote
// from a watched config (RefuseInPlace): the workload reloads by writing
// its pod template, with a problem naming why; nor can a reload action
// (RefuseAction), whose restart method in-place then falls back too.
func TestRefuseInPlaceFileKey(t *testing.T) {
	cfg := []Source{{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}}}
	spec := fileKeySpec("envFrom")
	w := Workload{Template: &corev1.PodTemplateSpec{Spec: spec}, Restart: workload.Restart{
		Method: workload.RestartInPlace, MaxUnavailable: 2, Containers: []string{"app"}, Fallback: workload.FallbackEvict}}
	problem := RefuseInPlace(&w, cfg, keys)
	if w.Restart.Method != workload.RestartTemplate || w.Restart.Containers != nil || w.Restart.Fallback != "" {
		t.Errorf("restart %+v, want the template write", w.Restart)
	}
	for _, s := range []string{`restart method "in-place"`, "env var DB_URL", "init container render", "ConfigMap cfg", `restart method "template" instead`} {
		if !strings.Contains(problem, s) {
			t.Errorf("problem %q does not say %q", problem, s)
		}
	}
	w = Workload{Template: &corev1.PodTemplateSpec{Spec: spec}, Restart: workload.Restart{Method: workload.RestartInPlace}}
	if problem := RefuseInPlace(&w, []Source{{Ref: refs.Ref{Kind: refs.Secret, Name: "cfg"}}}, keys); problem != "" || w.Restart.Method != workload.RestartInPlace {
		t.Errorf("a config the init container does not read: %q, %+v; want in-place kept", problem, w.Restart)
	}
	w = Workload{Template: &corev1.PodTemplateSpec{Spec: spec}, Restart: workload.Restart{Method: workload.RestartEvict}}
	if problem := RefuseInPlace(&w, cfg, keys); problem != "" || w.Restart.Method != workload.RestartEvict {
		t.Errorf("evict makes new pods: %q, %+v; want it kept", problem, w.Restart)
	}

	w = Workload{Template: &corev1.PodTemplateSpec{Spec: spec}, Restart: workload.Restart{
		Method: workload.RestartReloadAction, Action: &workload.Action{Method: "POST"}, Delay: time.Minute, Instead: workload.RestartInPlace}}
	action := RefuseAction(&w, cfg, keys)
	if !strings.Contains(action, "env var DB_URL from a file (fileKeyRef)") || w.Restart.Method != workload.RestartInPlace {
		t.Errorf("reload action: %q, %+v; want it refused for the fileKeyRef, in-place next", action, w.Restart)
	}
	if inPlace := RefuseInPlace(&w, cfg, keys); inPlace == "" || w.Restart.Method != workload.RestartTemplate {
		t.Errorf("then in-place: %q, %+v; want the template write", inPlace, w.Restart)
	}
}
