package workload

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Server-side apply. A built-in kind's reload is written as the smallest
// apply configuration under the field manager "ripple": the fields Ripple
// owns already (extracted from managedFields, at their current values),
// plus what this update changes: the strategy's env vars (containers and
// env are list-maps keyed by name, so an entry naming only the container
// and the env var is enough), its pod-template annotation, Ripple's
// metadata records and spec.paused. A GitOps tool that re-applies its
// manifest then neither removes Ripple's fields nor owns them, and a
// manager that does remove or overwrite one is named in managedFields
// (revert detection). Ownership is forced: Reloader wrote the same env var
// by an update, and taking it over must not fail.
//
// A value dropped from the configuration is removed only when no other
// manager owns it; a value Reloader or an older Ripple (by patch) wrote is
// removed by a strategic-merge patch after the apply (leftovers).

// applier writes an Update on a built-in kind by server-side apply.
type applier struct {
	// extract returns the apply configuration of the fields the manager
	// owns on obj (ownedFields).
	extract func(obj client.Object, manager string) (map[string]any, error)
	// templatePath is where the pod template is in the object.
	templatePath []string
	// paused reports spec.paused; nil for kinds without it.
	paused func(client.Object) bool
}

// leftovers are the values an apply configuration dropped, to check for
// after the apply: another manager may still own them.
type leftovers struct {
	env         map[string][]string // container name -> env var names
	podAnn      []string
	annotations []string
	unpause     bool
}

func (l leftovers) empty() bool {
	return len(l.env) == 0 && len(l.podAnn) == 0 && len(l.annotations) == 0 && !l.unpause
}

// supports reports whether the template change from old to next is one an
// apply configuration can carry: env vars and pod-template annotations
// only (what the strategies write), in containers that name each env var
// once. The API server accepts a repeated name (the last one wins); an
// apply to that list keeps only the first, which would change what the
// pods read, so such a template is patched.
func supports(old, next *corev1.PodTemplateSpec) bool {
	if repeatsEnv(old) {
		return false
	}
	return next == nil || envAndAnnotationsOnly(old, next)
}

// repeatsEnv reports whether a container of tpl names an env var twice.
func repeatsEnv(tpl *corev1.PodTemplateSpec) bool {
	for _, c := range tpl.Spec.Containers {
		seen := make(map[string]bool, len(c.Env))
		for _, e := range c.Env {
			if seen[e.Name] {
				return true
			}
			seen[e.Name] = true
		}
	}
	return false
}

// config builds the apply configuration of u on obj, whose pod template is
// old, and what it drops.
func (ap applier) config(obj client.Object, old *corev1.PodTemplateSpec, u Update) (map[string]any, leftovers, error) {
	cfg, err := ap.extract(obj, FieldManager)
	if err != nil {
		return nil, leftovers{}, fmt.Errorf("reading Ripple's fields: %w", err)
	}
	// Locked on the version read: a stale decision fails with a conflict.
	if err := unstructured.SetNestedField(cfg, obj.GetResourceVersion(), "metadata", "resourceVersion"); err != nil {
		return nil, leftovers{}, err
	}
	var left leftovers
	for k, v := range u.Annotations {
		if v == nil {
			unstructured.RemoveNestedField(cfg, "metadata", "annotations", k)
			left.annotations = append(left.annotations, k)
			continue
		}
		if err := unstructured.SetNestedField(cfg, *v, "metadata", "annotations", k); err != nil {
			return nil, leftovers{}, err
		}
	}
	if u.Paused != nil {
		if *u.Paused {
			err = unstructured.SetNestedField(cfg, true, "spec", "paused")
		} else {
			// Resumed: Ripple lets go of the field, which is then its default.
			unstructured.RemoveNestedField(cfg, "spec", "paused")
			left.unpause = true
		}
		if err != nil {
			return nil, leftovers{}, err
		}
	}
	if u.Template != nil {
		if err := ap.template(cfg, old, u.Template, &left); err != nil {
			return nil, leftovers{}, err
		}
	}
	return cfg, left, nil
}

// template adds the template changes from old to next to cfg.
func (ap applier) template(cfg map[string]any, old, next *corev1.PodTemplateSpec, left *leftovers) error {
	annPath := append(append([]string{}, ap.templatePath...), "metadata", "annotations")
	for k, v := range next.Annotations {
		if ov, ok := old.Annotations[k]; !ok || ov != v {
			if err := unstructured.SetNestedField(cfg, v, append(annPath, k)...); err != nil {
				return err
			}
		}
	}
	for k := range old.Annotations {
		if _, ok := next.Annotations[k]; !ok {
			unstructured.RemoveNestedField(cfg, append(annPath, k)...)
			left.podAnn = append(left.podAnn, k)
		}
	}
	containersPath := append(append([]string{}, ap.templatePath...), "spec", "containers")
	containers, _, err := unstructured.NestedSlice(cfg, containersPath...)
	if err != nil {
		return err
	}
	for i := range next.Spec.Containers {
		containers = containerEnv(containers, &old.Spec.Containers[i], &next.Spec.Containers[i], left)
	}
	if len(containers) == 0 {
		return nil
	}
	return unstructured.SetNestedSlice(cfg, containers, containersPath...)
}

// containerEnv adds the env changes of one container to the containers of
// an apply configuration.
func containerEnv(containers []any, old, next *corev1.Container, left *leftovers) []any {
	entry, idx := map[string]any{"name": next.Name}, -1
	for i, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == next.Name {
			entry, idx = m, i
		}
	}
	env, _, _ := unstructured.NestedSlice(entry, "env")
	was := map[string]corev1.EnvVar{}
	for _, e := range old.Env {
		was[e.Name] = e
	}
	changed := false
	for _, e := range next.Env {
		if o, ok := was[e.Name]; ok && equality.Semantic.DeepEqual(o, e) {
			continue
		}
		env = setEnvEntry(env, e.Name, e.Value)
		changed = true
	}
	is := map[string]bool{}
	for _, e := range next.Env {
		is[e.Name] = true
	}
	for _, e := range old.Env {
		if !is[e.Name] {
			env = dropEnvEntry(env, e.Name)
			if left.env == nil {
				left.env = map[string][]string{}
			}
			left.env[next.Name] = append(left.env[next.Name], e.Name)
			changed = true
		}
	}
	if !changed {
		return containers
	}
	if len(env) == 0 {
		delete(entry, "env")
	} else {
		entry["env"] = env
	}
	if idx >= 0 {
		containers[idx] = entry
		return containers
	}
	return append(containers, entry)
}

func setEnvEntry(env []any, name, value string) []any {
	for i, e := range env {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			env[i] = map[string]any{"name": name, "value": value}
			return env
		}
	}
	return append(env, map[string]any{"name": name, "value": value})
}

func dropEnvEntry(env []any, name string) []any {
	out := env[:0]
	for _, e := range env {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			continue
		}
		out = append(out, e)
	}
	return out
}

// write applies u to obj, whose pod template is old, then removes what
// another manager kept of the values the apply dropped. obj is updated to
// the result. set writes the template and spec changes on a typed copy,
// for that patch.
func (ap applier) write(ctx context.Context, c client.Client, obj client.Object, old *corev1.PodTemplateSpec, u Update, set func(client.Object, Update) bool) error {
	cfg, left, err := ap.config(obj, old, u)
	if err != nil {
		return err
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	// An apply patch on the typed object reads the response into it
	// directly: the same request as client.Client's Apply, without the
	// unstructured copy of the whole object it would return.
	if err := c.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return err
	}
	if left.empty() {
		return nil
	}
	// The apply made the reload: a conflict on the clean-up (the workload
	// changed in between, e.g. a controller's write) must not make the
	// write read as not done. Read it again and clean up what it shows.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := ap.removeLeftovers(ctx, c, obj, left, set)
		if apierrors.IsConflict(err) {
			if gerr := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); gerr != nil {
				return gerr
			}
		}
		return err
	})
}

// removeLeftovers patches away the dropped values that obj still shows.
func (ap applier) removeLeftovers(ctx context.Context, c client.Client, obj client.Object, left leftovers, set func(client.Object, Update) bool) error {
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	var rest Update
	for _, k := range left.annotations {
		if _, ok := obj.GetAnnotations()[k]; ok {
			if rest.Annotations == nil {
				rest.Annotations = map[string]*string{}
			}
			rest.Annotations[k] = nil
		}
	}
	if left.unpause && ap.paused != nil && ap.paused(obj) {
		f := false
		rest.Paused = &f
	}
	tpl, err := ap.currentTemplate(cur)
	if err != nil {
		return err
	}
	if tpl != nil && removeFrom(tpl, left) {
		rest.Template = tpl
	}
	if rest.Template == nil && rest.Paused == nil && len(rest.Annotations) == 0 {
		return nil
	}
	return patch(ctx, c, cur, rest, func(o client.Object) bool { return set(o, rest) })
}

// currentTemplate is a copy of obj's pod template.
func (ap applier) currentTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	raw, found, err := unstructured.NestedMap(m, ap.templatePath...)
	if err != nil || !found {
		return nil, err
	}
	tpl := &corev1.PodTemplateSpec{}
	return tpl, runtime.DefaultUnstructuredConverter.FromUnstructured(raw, tpl)
}

// removeFrom removes the dropped env vars and annotations from tpl and
// reports whether it had any.
func removeFrom(tpl *corev1.PodTemplateSpec, left leftovers) bool {
	did := false
	for _, k := range left.podAnn {
		if _, ok := tpl.Annotations[k]; ok {
			delete(tpl.Annotations, k)
			did = true
		}
	}
	for i := range tpl.Spec.Containers {
		c := &tpl.Spec.Containers[i]
		for _, name := range left.env[c.Name] {
			for j := range c.Env {
				if c.Env[j].Name == name {
					c.Env = append(c.Env[:j], c.Env[j+1:]...)
					did = true
					break
				}
			}
		}
	}
	return did
}
