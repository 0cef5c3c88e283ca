// Package refs finds the ConfigMaps, Secrets and SecretProviderClasses a pod
// spec references, and picks the container a change is attributed to.
//
// The container choice copies Stakater Reloader's rules exactly, because the
// env-vars strategy writes the digest on that container: choosing another one
// would make an existing Reloader env var look absent and cause one extra
// rollout per workload when a cluster switches over.
package refs

import (
	"iter"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Kind is the kind of a configuration source.
type Kind string

// The kinds of configuration source a pod spec can reference.
const (
	ConfigMap           Kind = "ConfigMap"
	Secret              Kind = "Secret"
	SecretProviderClass Kind = "SecretProviderClass"
)

// csiSecretProviderClassAttribute is the CSI volume attribute through which
// the Secrets Store CSI driver names its SecretProviderClass.
const csiSecretProviderClassAttribute = "secretProviderClass"

// Type returns Reloader's upper-case type name: CONFIGMAP, SECRET or
// SECRETPROVIDERCLASS. Reloader uses it in env var names and annotations.
func (k Kind) Type() string {
	return strings.ToUpper(string(k))
}

// Kinds returns every kind of source, in the order Ripple reports them:
// the one list of them (a new slice each call, so no caller can change it
// for the others).
func Kinds() []Kind { return []Kind{ConfigMap, Secret, SecretProviderClass} }

// Ref names a configuration source in the workload's namespace.
type Ref struct {
	Kind Kind
	Name string
}

// String returns the ref as "Kind/name", for example "ConfigMap/app-cfg".
func (r Ref) String() string {
	return string(r.Kind) + "/" + r.Name
}

// All returns every source the pod spec references, de-duplicated and sorted
// by kind, then name. Volumes count even when no container mounts them: the
// result feeds an index, where a false positive only costs a no-op reconcile
// but a miss would lose a reload.
func All(spec *corev1.PodSpec) []Ref {
	if spec == nil {
		return nil
	}
	var out []Ref
	for i := range spec.Volumes {
		for r := range volumeRefs(&spec.Volumes[i]) {
			out = append(out, r)
		}
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for r := range envRefs(&cs[i]) {
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, compare)
	return slices.Compact(out)
}

// Target returns the container that receives a change of ref, with
// referenced reporting whether the spec uses ref at all. The order of checks
// is Reloader's:
//
//  1. The first volume whose source is ref. A regular container mounting it
//     is the target; if only an init container mounts it, the first regular
//     container is. If nothing mounts it, go on.
//  2. The first regular container referencing ref from env or envFrom; if
//     only an init container does, the first regular container.
//  3. Otherwise referenced is false and container is the first regular
//     container, which is what Reloader uses for named-annotation reloads.
//
// Without regular containers there is nowhere to write, so the result is
// ("", false) whatever the init containers reference.
func Target(spec *corev1.PodSpec, ref Ref) (container string, referenced bool) {
	if spec == nil || len(spec.Containers) == 0 {
		return "", false
	}
	first := spec.Containers[0].Name

	// Reloader looks only at the first matching volume, even if a later
	// volume with the same source is the one that is mounted.
	if vol, ok := firstVolume(spec.Volumes, ref); ok {
		if name, ok := mounting(spec.Containers, vol); ok {
			return name, true
		}
		if _, ok := mounting(spec.InitContainers, vol); ok {
			return first, true
		}
	}
	if name, ok := envReferencing(spec.Containers, ref); ok {
		return name, true
	}
	if _, ok := envReferencing(spec.InitContainers, ref); ok {
		return first, true
	}
	return first, false
}

func compare(a, b Ref) int {
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// volumeRefs yields the sources a volume draws from. Empty names are skipped:
// the API server rejects them, so they can only come from a malformed object.
func volumeRefs(v *corev1.Volume) iter.Seq[Ref] {
	return func(yield func(Ref) bool) {
		emit := func(k Kind, name string) bool {
			return name == "" || yield(Ref{Kind: k, Name: name})
		}
		if v.ConfigMap != nil && !emit(ConfigMap, v.ConfigMap.Name) {
			return
		}
		if v.Secret != nil && !emit(Secret, v.Secret.SecretName) {
			return
		}
		if v.CSI != nil && !emit(SecretProviderClass, v.CSI.VolumeAttributes[csiSecretProviderClassAttribute]) {
			return
		}
		if v.Projected == nil {
			return
		}
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil && !emit(ConfigMap, s.ConfigMap.Name) {
				return
			}
			if s.Secret != nil && !emit(Secret, s.Secret.Name) {
				return
			}
		}
	}
}

// envRefs yields the sources a container reads through env and envFrom.
// SecretProviderClasses cannot be read this way.
func envRefs(c *corev1.Container) iter.Seq[Ref] {
	return func(yield func(Ref) bool) {
		emit := func(k Kind, name string) bool {
			return name == "" || yield(Ref{Kind: k, Name: name})
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil && !emit(ConfigMap, r.Name) {
				return
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil && !emit(Secret, r.Name) {
				return
			}
		}
		for _, e := range c.EnvFrom {
			if r := e.ConfigMapRef; r != nil && !emit(ConfigMap, r.Name) {
				return
			}
			if r := e.SecretRef; r != nil && !emit(Secret, r.Name) {
				return
			}
		}
	}
}

func firstVolume(vols []corev1.Volume, ref Ref) (string, bool) {
	return firstWith(vols, func(v *corev1.Volume) string { return v.Name }, volumeRefs, ref)
}

// firstWith returns the name of the first item whose sources include ref.
func firstWith[T any](items []T, name func(*T) string, sources func(*T) iter.Seq[Ref], ref Ref) (string, bool) {
	for i := range items {
		for r := range sources(&items[i]) {
			if r == ref {
				return name(&items[i]), true
			}
		}
	}
	return "", false
}

func mounting(cs []corev1.Container, volume string) (string, bool) {
	for i := range cs {
		for _, m := range cs[i].VolumeMounts {
			if m.Name == volume {
				return cs[i].Name, true
			}
		}
	}
	return "", false
}

func envReferencing(cs []corev1.Container, ref Ref) (string, bool) {
	return firstWith(cs, func(c *corev1.Container) string { return c.Name }, envRefs, ref)
}
