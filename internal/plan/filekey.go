package plan

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// An environment variable may be read from a file (valueFrom.fileKeyRef,
// Kubernetes' EnvFiles): a key of an env file in an emptyDir volume, which
// an init container wrote, often from a ConfigMap or Secret it reads. The
// kubelet reads the file when the container starts; the init container
// ran once, when the pod started. A container restarted in place, or an
// app called by its reload action, keeps the value the init container
// wrote from the old data: only a new pod runs the init container again.
// So a workload with such a variable, whose writer reads a watched config,
// is refused the in-place method and reload actions (FileKeyBlocked), and
// reloads by writing its pod template instead.

// FileKeyBlocked says why a change of one of sources (the configs that
// may reload a workload with pod spec spec) reaches a container only
// through a new pod: a container's env var is read by fileKeyRef from an
// emptyDir volume that an init container mounts, and that init container
// reads the config (through a volume, env or envFrom). It names the
// container, the variable, the volume, the init container and the config;
// empty when no variable is read that way.
func FileKeyBlocked(spec *corev1.PodSpec, sources []refs.Ref) string {
	if spec == nil {
		return ""
	}
	reads := initReads(spec, sources)
	if len(reads) == 0 {
		return ""
	}
	emptyDir := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			emptyDir[v.Name] = true
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.FileKeyRef == nil || !emptyDir[e.ValueFrom.FileKeyRef.VolumeName] {
				continue
			}
			if why := writtenFrom(spec, reads, c.Name, e.Name, e.ValueFrom.FileKeyRef.VolumeName); why != "" {
				return why
			}
		}
	}
	return ""
}

// initReads are the watched configs (of sources) each init container of
// spec reads, in spec order, by container name.
func initReads(spec *corev1.PodSpec, sources []refs.Ref) map[string][]refs.Ref {
	reads := map[string][]refs.Ref{}
	for _, u := range refs.Uses(spec) {
		if u.Init && slices.Contains(sources, u.Ref) && !slices.Contains(reads[u.Container], u.Ref) {
			reads[u.Container] = append(reads[u.Container], u.Ref)
		}
	}
	return reads
}

// writtenFrom says which init container of spec, other than container,
// mounts volume vol and reads a watched config (reads), for env var env
// of container read from a file in vol; empty when none does.
func writtenFrom(spec *corev1.PodSpec, reads map[string][]refs.Ref, container, env, vol string) string {
	for _, ic := range spec.InitContainers {
		if ic.Name == container || len(reads[ic.Name]) == 0 || !mounts(ic, vol) {
			continue
		}
		config := reads[ic.Name][0]
		return fmt.Sprintf("container %s reads env var %s from a file (fileKeyRef) in emptyDir volume %s, which init container %s writes from %s %s; init containers run again only in a new pod",
			container, env, vol, ic.Name, config.Kind, config.Name)
	}
	return ""
}

// mounts reports whether container c mounts the volume named vol.
func mounts(c corev1.Container, vol string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == vol })
}

// RefuseInPlace falls w's in-place restart method back to the template
// write when a change of one of sources reaches a container only through
// a new pod (FileKeyBlocked), and returns the problem to tell; empty when
// w does not restart in place or a restart in place delivers every
// change. Made after RefuseAction, so a reload action whose restart
// method is in-place falls back to the template write too.
func RefuseInPlace(w *Workload, sources []Source, keys annotation.Keys) string {
	r := &w.Restart
	if r.Method != workload.RestartInPlace || w.Template == nil {
		return ""
	}
	why := FileKeyBlocked(&w.Template.Spec, refsOf(sources))
	if why == "" {
		return ""
	}
	r.Method, r.Containers, r.Fallback = workload.RestartTemplate, nil, ""
	return fmt.Sprintf("restart method %q (%s): %s; reloading with restart method %q instead",
		workload.RestartInPlace, keys.RestartMethod, why, workload.RestartTemplate)
}
