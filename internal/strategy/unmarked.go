package strategy

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Unmarked returns a copy of tpl without what either strategy writes on
// it (every config's STAKATER_* env var and the last-reloaded-from
// annotation), whichever reloader wrote it: what is left changes only when
// someone else changes the template.
func Unmarked(tpl *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	out := tpl.DeepCopy()
	delete(out.Annotations, annotation.LastReloadedFrom)
	for i := range out.Spec.Containers {
		c := &out.Spec.Containers[i]
		var env []corev1.EnvVar
		for _, e := range c.Env {
			if !isMark(e.Name) {
				env = append(env, e)
			}
		}
		c.Env = env
	}
	return out
}

// isMark reports whether an env var name is one EnvVarName gives.
func isMark(name string) bool {
	if !strings.HasPrefix(name, "STAKATER_") {
		return false
	}
	for _, k := range refs.Kinds() {
		if strings.HasSuffix(name, "_"+k.Type()) {
			return true
		}
	}
	return false
}
