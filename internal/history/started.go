package history

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/ripple-dev/ripple/internal/annotation"
)

// restartedAt is the template annotation `kubectl rollout restart` sets.
const restartedAt = "kubectl.kubernetes.io/restartedAt"

// started decides who started rev from how its template differs from
// prev's, the revision numbered one lower (nil when the cluster no longer
// keeps it), and returns the evidence and what changed:
//
//   - the first revision: someone else (whoever created the workload);
//   - no previous revision kept: unknown;
//   - only what a reload writes changed (the STAKATER_* env vars, the
//     last-reloaded-from annotation): Ripple, unless the template is an
//     earlier revision's again, which a rollback does too: unknown;
//   - anything else changed: someone else, named a rollback when the
//     template is an earlier revision's again.
//
// A template is an earlier revision's again when its revision carries
// earlier numbers, or was created before the previous revision.
func started(rev Revision, prev *Revision, built, prevBuilt []Config) (StartedBy, string, []string) {
	if prev == nil {
		if rev.Number <= 1 && len(rev.Earlier) == 0 {
			return ByOther, "first revision", nil
		}
		return ByUnknown, fmt.Sprintf("revision %d is no longer kept: nothing to compare with", rev.Number-1), nil
	}
	cfgs := configChanges(prevBuilt, built)
	parts := templateChanges(prev.Template, rev.Template)
	reload := !slices.Equal(slotValues(prev.Template), slotValues(rev.Template))
	changes := append(slices.Clone(cfgs), parts...)
	if reload && len(cfgs) == 0 {
		changes = append([]string{"reload values"}, changes...)
	}
	back := ""
	if len(rev.Earlier) > 0 || rev.Created.Before(prev.Created) {
		back = "the template of " + earlier(rev.Earlier) + " again"
	}
	switch {
	case len(parts) == 0 && !reload:
		return ByUnknown, fmt.Sprintf("same template as revision %d", prev.Number), changes
	case len(parts) == 0 && back != "":
		return ByUnknown, back + ", changed only where a reload writes: a rollback, or a reload to data that returned to it", changes
	case len(parts) == 0:
		return ByRipple, "only what a reload writes changed", changes
	case back != "":
		return ByOther, back + ": a rollback", changes
	case reload:
		return ByOther, "the template changed with the configs", changes
	}
	return ByOther, "the template changed", changes
}

// earlier names the revisions a template had: "revision 3", or "an
// earlier revision" when their numbers are not known.
func earlier(numbers []int64) string {
	if len(numbers) == 0 {
		return "an earlier revision"
	}
	s := make([]string, len(numbers))
	for i, n := range numbers {
		s[i] = strconv.FormatInt(n, 10)
	}
	if len(s) == 1 {
		return "revision " + s[0]
	}
	return "revisions " + strings.Join(s, ", ")
}

// configChanges names the configs whose digest differs between two
// revisions' configs, or that only one of them has a digest for.
func configChanges(prev, cur []Config) []string {
	sums := func(cs []Config) map[string]string {
		m := map[string]string{}
		for _, c := range cs {
			if c.From != "" {
				m[c.String()] = c.full
			}
		}
		return m
	}
	a, b := sums(prev), sums(cur)
	var out []string
	for name, sum := range b {
		if old, ok := a[name]; !ok || old != sum {
			out = append(out, name)
		}
	}
	for name := range a {
		if _, ok := b[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// slotValues are the values a reload writes on tpl, sorted: its reload
// env vars as name=value, and the last-reloaded-from annotation.
func slotValues(tpl *corev1.PodTemplateSpec) []string {
	if tpl == nil {
		return nil
	}
	var out []string
	for _, c := range tpl.Spec.Containers {
		for _, e := range c.Env {
			if _, ok := slotKind(e.Name); ok {
				out = append(out, c.Name+"/"+e.Name+"="+e.Value)
			}
		}
	}
	if v, ok := tpl.Annotations[annotation.LastReloadedFrom]; ok {
		out = append(out, annotation.LastReloadedFrom+"="+v)
	}
	slices.Sort(out)
	return out
}

// withoutSlots is a copy of tpl without what a reload writes.
func withoutSlots(tpl *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if tpl == nil {
		return &corev1.PodTemplateSpec{}
	}
	out := tpl.DeepCopy()
	for i := range out.Spec.Containers {
		c := &out.Spec.Containers[i]
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool {
			_, ok := slotKind(e.Name)
			return ok
		})
		if len(c.Env) == 0 {
			c.Env = nil
		}
	}
	delete(out.Annotations, annotation.LastReloadedFrom)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out
}

// templateChanges names what differs between two templates beyond what
// a reload writes: "image of app", "container app", "containers",
// "rollout restart", "metadata", "pod spec". Empty when nothing does.
func templateChanges(prev, cur *corev1.PodTemplateSpec) []string {
	a, b := withoutSlots(prev), withoutSlots(cur)
	if equality.Semantic.DeepEqual(a, b) {
		return nil
	}
	var out []string
	if a.Annotations[restartedAt] != b.Annotations[restartedAt] {
		out = append(out, "rollout restart")
	}
	delete(a.Annotations, restartedAt)
	delete(b.Annotations, restartedAt)
	if !maps.Equal(a.Annotations, b.Annotations) || !maps.Equal(a.Labels, b.Labels) {
		out = append(out, "metadata")
	}
	out = append(out, containerChanges(a.Spec.Containers, b.Spec.Containers)...)
	a.Spec.Containers, b.Spec.Containers = nil, nil
	if !equality.Semantic.DeepEqual(a.Spec, b.Spec) {
		out = append(out, "pod spec")
	}
	return out
}

// containerChanges names the containers whose image or anything else
// changed; "containers" when one was added, removed or renamed.
func containerChanges(prev, cur []corev1.Container) []string {
	names := func(cs []corev1.Container) []string {
		out := make([]string, len(cs))
		for i := range cs {
			out[i] = cs[i].Name
		}
		return out
	}
	if !slices.Equal(names(prev), names(cur)) {
		return []string{"containers"}
	}
	var out []string
	for i := range cur {
		a, b := prev[i].DeepCopy(), cur[i].DeepCopy()
		if a.Image != b.Image {
			out = append(out, "image of "+b.Name)
		}
		a.Image, b.Image = "", ""
		if !equality.Semantic.DeepEqual(a, b) {
			out = append(out, "container "+b.Name)
		}
	}
	return out
}
