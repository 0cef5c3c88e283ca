package lint

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// workload returns the findings on a workload of kind.
func (c *checker) workload(ctx context.Context, kind workload.Kind, o *target) []Finding {
	o.workload = true
	out := c.annotations(o, o.obj.GetAnnotations(), false)
	tpl, own, err := c.template(ctx, kind, o.obj)
	if err != nil {
		return append(out, o.finding(Error, "", err.Error()))
	}
	// A template taken from a Deployment is checked on that Deployment.
	if tpl != nil && own {
		out = append(out, c.annotations(o, tpl.Annotations, true)...)
	}
	out = append(out, c.inPlace(o, tpl)...)
	out = append(out, c.reloadAction(o, tpl)...)
	var fields []refs.FieldRef
	if fr, ok := kind.(workload.FieldReferrer); ok {
		fields, _ = fr.FieldRefs(o.obj)
	}
	return append(out, c.reloads(o, tpl, fields)...)
}

// template returns the pod template of obj, as Ripple finds it
// (workload.Template over the files), and whether it is obj's own. It is
// nil when unknown: a Job left to its CronJob, a Rollout whose workloadRef
// Deployment is not in the files.
func (c *checker) template(ctx context.Context, kind workload.Kind, obj client.Object) (*corev1.PodTemplateSpec, bool, error) {
	own := true
	if ts, ok := kind.(workload.TemplateSource); ok {
		_, ref := ts.TemplateRef(obj)
		own = !ref
	}
	tpl, err := workload.Template(ctx, c.files, kind, obj)
	return tpl, own, err
}

// reloads checks what the workload's policy says against the configs its
// template and its own fields (a declared kind's refs) reference and the
// configs in the files.
func (c *checker) reloads(o *target, tpl *corev1.PodTemplateSpec, fields []refs.FieldRef) []Finding {
	meta := o.obj.GetAnnotations()
	var tplAnn map[string]string
	var spec *corev1.PodSpec
	if tpl != nil {
		tplAnn, spec = tpl.Annotations, &tpl.Spec
	}
	used := refs.All(spec)
	for _, f := range fields {
		used = append(used, f.Ref)
	}
	var out []Finding
	var auto, search bool
	shadowed := map[string][]string{} // template key -> kinds it is ignored for
	for _, kind := range refs.Kinds() {
		p := annotation.Parse(c.keys, kind, meta, tplAnn)
		out = append(out, c.named(o, kind, p)...)
		auto = auto || p.AutoKey == c.keys.Auto
		search = search || p.Search
		for _, key := range c.shadowed(kind, meta, tplAnn) {
			shadowed[key] = append(shadowed[key], plural(kind))
		}
		if tpl != nil { // else what it references is unknown
			out = append(out, c.typedAuto(o, kind, p, meta, tplAnn, used)...)
		}
	}
	for key, kinds := range shadowed {
		out = append(out, o.finding(Warning, key, fmt.Sprintf(
			"pod template annotation %q is ignored for %s: the workload's metadata has reload annotations for them, and then only those count", key, enumerate(kinds))))
	}
	if tpl == nil {
		return out
	}
	if auto && len(used) == 0 {
		out = append(out, o.finding(Warning, c.keys.Auto, fmt.Sprintf("annotation %q is true but the pod template references no ConfigMap, Secret or SecretProviderClass", c.keys.Auto)))
	}
	if search && !c.anyMatched(o.obj.GetNamespace(), used) {
		out = append(out, o.finding(Warning, c.keys.Search, fmt.Sprintf("annotation %q is true but no config the pod template references in the files has %q set to \"true\"", c.keys.Search, c.keys.Match)))
	}
	return out
}

// shadowed returns the trigger keys for kind on the pod template that
// Ripple ignores because the metadata has one: like Reloader, it reads a
// kind's triggers from the metadata if any is there, else from the
// template, never from both.
func (c *checker) shadowed(kind refs.Kind, meta, tpl map[string]string) []string {
	triggers := []string{c.keys.ReloadKey(kind), c.keys.Auto, c.keys.TypedAutoKey(kind), c.keys.Search}
	has := func(m map[string]string) func(string) bool {
		return func(k string) bool { _, ok := m[k]; return ok }
	}
	if !slices.ContainsFunc(triggers, has(meta)) {
		return nil
	}
	return slices.DeleteFunc(triggers, func(k string) bool { return !has(tpl)(k) })
}

// typedAuto warns about a typed-auto key that is true when the template
// references no config of its kind.
func (c *checker) typedAuto(o *target, kind refs.Kind, p annotation.Policy, meta, tpl map[string]string, used []refs.Ref) []Finding {
	src := meta
	if p.FromTemplate {
		src = tpl
	}
	key := c.keys.TypedAutoKey(kind)
	if !isTrue(src[key]) || slices.ContainsFunc(used, func(r refs.Ref) bool { return r.Kind == kind }) {
		return nil
	}
	return []Finding{o.finding(Warning, key, fmt.Sprintf("annotation %q is true but the pod template references no %s", key, kind))}
}

// named checks the named-reload items of policy p for configs of kind.
func (c *checker) named(o *target, kind refs.Kind, p annotation.Policy) []Finding {
	key := c.keys.ReloadKey(kind)
	var out []Finding
	for _, err := range p.Invalid {
		out = append(out, o.finding(Error, key, err.Error()))
	}
	ns := o.obj.GetNamespace()
	for _, m := range p.Named {
		if !c.anySource(kind, ns, m) {
			out = append(out, o.finding(Warning, key, fmt.Sprintf(
				"annotation %q: %q matches no %s in the files; Ripple reloads the workload when one is created", key, m.String(), kind)))
		}
	}
	return out
}

// anySource reports whether m matches a config of kind in namespace ns;
// for a cross-namespace reference ("namespace/name"), whether that config
// is in the files.
func (c *checker) anySource(kind refs.Kind, ns string, m annotation.Matcher) bool {
	if other, name, ok := annotation.SplitShared(m.String()); ok {
		_, found := c.sources[source{kind: kind, namespace: other, name: name}]
		return found
	}
	for s := range c.sources {
		if s.kind == kind && s.namespace == ns && m.Match(s.name) {
			return true
		}
	}
	return false
}

// anyMatched reports whether a config in used carries the match annotation,
// or none of them is in the files, so nothing can be said.
func (c *checker) anyMatched(ns string, used []refs.Ref) bool {
	inFiles := false
	for _, r := range used {
		matched, ok := c.sources[source{kind: r.Kind, namespace: ns, name: r.Name}]
		if matched {
			return true
		}
		inFiles = inFiles || ok
	}
	return !inFiles
}

// isTrue is how Ripple reads an auto value (strconv.ParseBool).
func isTrue(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// plural is the plural of a config kind, for messages.
func plural(kind refs.Kind) string {
	if strings.HasSuffix(string(kind), "s") {
		return string(kind) + "es"
	}
	return string(kind) + "s"
}

// enumerate joins items as "a, b and c".
func enumerate(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
