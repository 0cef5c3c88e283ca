package strategy

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
)

// EnvVars is Reloader's default strategy: the digest goes into an env var
// on the target container, so a change alters the pod template and the
// workload controller rolls out.
type EnvVars struct{}

var _ Strategy = EnvVars{}

// Name returns "env-vars".
func (EnvVars) Name() string { return envVarsName }

// Applied returns the value of EnvVarName(ref) in the first regular container
// that has it. Any container counts, not just the current target: the
// target can move when the pod spec changes, and Reloader's CSI duplicate
// guard also looks at every container.
func (EnvVars) Applied(tpl *corev1.PodTemplateSpec, ref refs.Ref) (string, bool) {
	if tpl == nil {
		return "", false
	}
	name := EnvVarName(ref)
	for i := range tpl.Spec.Containers {
		for _, e := range tpl.Spec.Containers[i].Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

// Apply sets each change's env var on its container, appending it when
// absent. Other env vars keep their values and order, so the only template
// difference is the one that should trigger the rollout. A change whose
// container is missing is skipped.
func (EnvVars) Apply(tpl *corev1.PodTemplateSpec, changes []Change, _ time.Time) {
	if tpl == nil {
		return
	}
	for _, ch := range changes {
		if ch.Deleted {
			removeEnv(tpl.Spec.Containers, EnvVarName(ch.Ref))
			continue
		}
		c := findContainer(tpl.Spec.Containers, ch.Container)
		if c == nil {
			continue
		}
		setEnv(c, EnvVarName(ch.Ref), ch.Hash)
	}
}

// removeEnv removes the env var name from every container that has it.
func removeEnv(cs []corev1.Container, name string) {
	for i := range cs {
		cs[i].Env = slices.DeleteFunc(cs[i].Env, func(e corev1.EnvVar) bool { return e.Name == name })
	}
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	if name == "" {
		return nil
	}
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i].Value = value
			// The var is ours; a leftover valueFrom beside a value would
			// make the API server reject the template.
			c.Env[i].ValueFrom = nil
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

// EnvVarName returns Reloader's env var name for ref:
// "STAKATER_" + convert(name) + "_" + ref.Kind.Type(). convert upper-cases
// the name and keeps A-Z and 0-9; each run of other bytes becomes one "_",
// but only after a kept byte, so leading junk vanishes and trailing junk
// leaves a trailing "_". Distinct names can collide (a-b, a.b, a--b);
// Reloader has the same collisions and we must produce the same names.
func EnvVarName(ref refs.Ref) string {
	if ns, name, ok := annotation.SplitShared(ref.Name); ok {
		return sharedEnvVarName(ref.Kind, ns, name)
	}
	// Upper-case first, then filter bytes, as Reloader does: strings.ToUpper
	// maps a few non-ASCII runes to ASCII letters (for example 'ı' to 'I').
	upper := strings.ToUpper(ref.Name)
	var b strings.Builder
	typ := ref.Kind.Type()
	b.Grow(len("STAKATER_") + len(upper) + 1 + len(typ))
	b.WriteString("STAKATER_")
	lastValid := false
	for i := 0; i < len(upper); i++ {
		ch := upper[i]
		if ('A' <= ch && ch <= 'Z') || ('0' <= ch && ch <= '9') {
			b.WriteByte(ch)
			lastValid = true
			continue
		}
		if lastValid {
			b.WriteByte('_')
		}
		lastValid = false
	}
	b.WriteByte('_')
	b.WriteString(typ)
	return b.String()
}

// Slot is the env var name.
func (EnvVars) Slot(ref refs.Ref) string { return EnvVarName(ref) }

// sharedEnvVarName is the env var of a config of another namespace
// (a cross-namespace reference, "namespace/name"): "RIPPLE_SHARED_" and
// Reloader's conversion of namespace and name, then 8 hex digits of the
// SHA-256 of "namespace/name". Reloader has no such reference, so nothing
// needs its name; the prefix keeps it apart from every same-namespace
// config's STAKATER_ name, and the hash apart from another reference that
// converts alike (a-b/c and a/b-c).
func sharedEnvVarName(kind refs.Kind, ns, name string) string {
	converted := strings.TrimPrefix(EnvVarName(refs.Ref{Kind: kind, Name: ns + "-" + name}), "STAKATER_")
	sum := sha256.Sum256([]byte(ns + "/" + name))
	return "RIPPLE_SHARED_" + strings.TrimSuffix(converted, kind.Type()) + hex.EncodeToString(sum[:4]) + "_" + kind.Type()
}
