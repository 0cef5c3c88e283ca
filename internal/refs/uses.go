package refs

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Via says how a pod spec uses a source.
type Via string

// The ways a pod spec uses a source.
const (
	// Env is an env var's valueFrom.configMapKeyRef or secretKeyRef.
	Env Via = "env"
	// EnvFrom is a container's envFrom.
	EnvFrom Via = "envFrom"
	// Volume is a configMap or secret volume.
	Volume Via = "volume"
	// Projected is a source of a projected volume.
	Projected Via = "projected"
	// CSI is a Secrets Store CSI volume naming a SecretProviderClass.
	CSI Via = "csi"
)

// Use is one place where a pod spec uses a source.
type Use struct {
	Ref Ref
	Via Via
	// Container reads the source: through env, envFrom or by mounting the
	// volume. It is empty for a volume that no container mounts.
	Container string
	// Init is set when Container is an init container.
	Init bool
	// Volume names the volume, for the volume kinds.
	Volume string
	// Keys are the keys used: the env var's key or the volume's items.
	// Empty means every key.
	Keys []string
	// Field is the field path of a custom resource's field that names
	// the source (Via FieldVia; FieldRef.Use).
	Field string
}

// Uses returns every place the pod spec uses a source: for each container,
// init containers first, its env, envFrom and mounted volumes in spec
// order; then the volumes no container mounts.
func Uses(spec *corev1.PodSpec) []Use {
	if spec == nil {
		return nil
	}
	var out []Use
	mounted := map[string]bool{}
	for _, cs := range []struct {
		list []corev1.Container
		init bool
	}{{spec.InitContainers, true}, {spec.Containers, false}} {
		for i := range cs.list {
			c := &cs.list[i]
			for _, u := range envUses(c) {
				u.Container, u.Init = c.Name, cs.init
				out = append(out, u)
			}
			for _, m := range c.VolumeMounts {
				for _, u := range volumeUses(spec.Volumes, m.Name) {
					u.Container, u.Init = c.Name, cs.init
					out = append(out, u)
				}
				mounted[m.Name] = true
			}
		}
	}
	for i := range spec.Volumes {
		if v := spec.Volumes[i].Name; !mounted[v] {
			out = append(out, volumeUses(spec.Volumes, v)...)
		}
	}
	return out
}

// Keys returns the keys of ref that the uses read; all is true when a use
// reads every key (envFrom, or a volume without items).
func Keys(uses []Use, ref Ref) (keys []string, all bool) {
	for _, u := range uses {
		if u.Ref != ref {
			continue
		}
		if len(u.Keys) == 0 {
			return nil, true
		}
		keys = append(keys, u.Keys...)
	}
	slices.Sort(keys)
	return slices.Compact(keys), false
}

// envUses are a container's env and envFrom uses, in spec order.
func envUses(c *corev1.Container) []Use {
	var out []Use
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil && r.Name != "" {
			out = append(out, Use{Ref: Ref{Kind: ConfigMap, Name: r.Name}, Via: Env, Keys: []string{r.Key}})
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil && r.Name != "" {
			out = append(out, Use{Ref: Ref{Kind: Secret, Name: r.Name}, Via: Env, Keys: []string{r.Key}})
		}
	}
	for _, e := range c.EnvFrom {
		if r := e.ConfigMapRef; r != nil && r.Name != "" {
			out = append(out, Use{Ref: Ref{Kind: ConfigMap, Name: r.Name}, Via: EnvFrom})
		}
		if r := e.SecretRef; r != nil && r.Name != "" {
			out = append(out, Use{Ref: Ref{Kind: Secret, Name: r.Name}, Via: EnvFrom})
		}
	}
	return out
}

// volumeUses are the sources of the named volume.
func volumeUses(vols []corev1.Volume, name string) []Use {
	i := slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Name == name })
	if i < 0 {
		return nil
	}
	v := &vols[i]
	use := func(k Kind, src string, via Via, items []corev1.KeyToPath) []Use {
		if src == "" {
			return nil
		}
		u := Use{Ref: Ref{Kind: k, Name: src}, Via: via, Volume: name}
		for _, it := range items {
			u.Keys = append(u.Keys, it.Key)
		}
		return []Use{u}
	}
	switch {
	case v.ConfigMap != nil:
		return use(ConfigMap, v.ConfigMap.Name, Volume, v.ConfigMap.Items)
	case v.Secret != nil:
		return use(Secret, v.Secret.SecretName, Volume, v.Secret.Items)
	case v.CSI != nil:
		return use(SecretProviderClass, v.CSI.VolumeAttributes[csiSecretProviderClassAttribute], CSI, nil)
	case v.Projected != nil:
		var out []Use
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				out = append(out, use(ConfigMap, s.ConfigMap.Name, Projected, s.ConfigMap.Items)...)
			}
			if s.Secret != nil {
				out = append(out, use(Secret, s.Secret.Name, Projected, s.Secret.Items)...)
			}
		}
		return out
	}
	return nil
}
