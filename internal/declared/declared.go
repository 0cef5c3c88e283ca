// Package declared reads the workload kinds a user declares rather than
// Ripple codes: the kinds file (--workload-kinds) and the presets
// (--workload-kinds-preset). Each entry names a resource and how Ripple
// reloads it: through the PodTemplateSpec at a field path, or by setting
// an annotation on the object. It is pure: it parses and validates bytes
// it is given, and names the file, the entry and the field at fault.
package declared

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/internal/refs"
)

// Kind is one declared workload kind, as the kinds file spells it.
type Kind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Resource is the plural resource name, for RBAC; by default the
	// kind's lower-case plural.
	Resource string `json:"resource,omitempty"`
	// Template is the field path of the object's PodTemplateSpec, e.g.
	// "spec.template". Exactly one of Template and Restart is set.
	Template string `json:"template,omitempty"`
	// Restart reloads an object without a pod template by setting an
	// annotation on it.
	Restart *Restart `json:"restart,omitempty"`
	// Ready says how a rollout of the kind is seen complete; without it
	// a reload is complete once written.
	Ready *Ready `json:"ready,omitempty"`
	// Paused is the field path of a boolean that pauses the kind's
	// rollouts (pause-period), e.g. "spec.updateStrategy.paused".
	Paused string `json:"paused,omitempty"`
	// Refs are fields of the object that name ConfigMaps or Secrets of
	// its namespace, which the Reloader annotations that follow
	// references (auto, search) then follow as a template's.
	Refs []Ref `json:"refs,omitempty"`

	// qualified is set by Merge when another declared kind has the same
	// kind name: both are then named with their group.
	qualified bool
	// flag is the flag that declared the kind, for messages.
	flag string
}

// Restart is a reload by annotation: Ripple sets Annotation on the object
// to a value derived from the change set.
type Restart struct {
	Annotation string `json:"annotation"`
}

// Ready tells a rollout complete by the object's status, once
// ObservedGeneration (a field path; by default status.observedGeneration)
// has caught up with metadata.generation: by a condition of
// status.conditions whose status is "True", or by replica counts.
type Ready struct {
	ObservedGeneration string    `json:"observedGeneration,omitempty"`
	Condition          string    `json:"condition,omitempty"`
	Replicas           *Replicas `json:"replicas,omitempty"`
}

// Replicas are the field paths of a kind's replica counts: a rollout is
// complete when Updated and Available both reach Desired.
type Replicas struct {
	Desired   string `json:"desired"`
	Updated   string `json:"updated"`
	Available string `json:"available"`
}

// Ref is a field path whose string values name configs of Kind
// (ConfigMap or Secret): refs.ParseField's path.
type Ref struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// The bounds of a kind's refs: at most MaxRefs paths per kind, and at
// most MaxRefValues values read of one object (refs.FieldRefs), so that
// a tenant's object with thousands of names costs no more than one with
// MaxRefValues.
const (
	MaxRefs      = 64
	MaxRefValues = 256
)

// DefaultObservedGeneration is Ready.ObservedGeneration when not given.
const DefaultObservedGeneration = "status.observedGeneration"

// GVK is the kind's group, version and kind.
func (k Kind) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

// GVR is the kind's group, version and resource.
func (k Kind) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}
}

// String names the kind in messages, e.g. "CloneSet.apps.kruise.io".
func (k Kind) String() string { return k.Kind + "." + k.Group }

// Name is the kind's name in Ripple's memory, metrics, logs and explain:
// its kind, or its kind and group (StatefulSet.apps.kruise.io) when the
// kind alone is the name of a built-in kind or of another declared kind.
func (k Kind) Name() string {
	if k.qualified || isBuiltIn(k.Kind) {
		return k.String()
	}
	return k.Kind
}

// Flag is the flag that declared the kind, as given
// (--workload-kinds-preset=kruise, --workload-kinds=FILE); set by Merge.
func (k Kind) Flag() string { return k.flag }

// Path splits a field path ("spec.template") into its fields; empty for
// an empty path.
func Path(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}

// Reads are the field paths of the kind's objects that Ripple reads
// besides their metadata: its pod template, its paused field and the
// status fields of its ready rule. The cache keeps only these.
func (k Kind) Reads() [][]string {
	var out [][]string
	for _, p := range []string{k.Template, k.Paused} {
		if p != "" {
			out = append(out, Path(p))
		}
	}
	if r := k.Ready; r != nil {
		out = append(out, Path(r.ObservedGeneration))
		if r.Condition != "" {
			out = append(out, []string{"status", "conditions"})
		}
		if r.Replicas != nil {
			out = append(out, Path(r.Replicas.Desired), Path(r.Replicas.Updated), Path(r.Replicas.Available))
		}
	}
	return out
}

// BuiltIn are the kind names Ripple has code for. A declared kind's name
// is its key in Ripple's memory, metrics and logs, so a declared kind of
// one of these names (OpenKruise's StatefulSet) is named with its group.
var BuiltIn = []string{"Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Rollout", "DeploymentConfig"}

// Parse reads the kinds file named name: a YAML list of kinds. Every
// error is a line of its own naming the file, the entry (from 1) and the
// field, and each entry's errors are all reported: an unknown or mistyped
// field does not hide the others.
func Parse(name string, data []byte) ([]Kind, error) {
	var raw []json.RawMessage
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a YAML list of kinds: %w", name, err)
	}
	var (
		out  []Kind
		errs []error
	)
	for i, r := range raw {
		where := fmt.Sprintf("%s: entry %d", name, i+1)
		k, problems := decode(r)
		if k.Kind != "" {
			where += " (" + k.Kind + ")"
		}
		problems = append(problems, k.problems(mistyped(problems))...)
		for _, p := range problems {
			errs = append(errs, fmt.Errorf("%s: %w", where, p))
		}
		if len(problems) == 0 {
			out = append(out, k.withDefaults())
		}
	}
	return out, errors.Join(errs...)
}

// decode reads one entry of the kinds file as encoding/json would (field
// names in any case), but goes on past an unknown field or a value of the
// wrong type: each is an error of its own, and the rest is still read, so
// that validation reports the entry's other errors too.
func decode(raw json.RawMessage) (Kind, []error) {
	var k Kind
	return k, decodeValue(reflect.ValueOf(&k).Elem(), raw, "")
}

func decodeValue(v reflect.Value, raw json.RawMessage, path string) []error {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if jsonType(raw) == "null" {
			return nil
		}
		p := reflect.New(t.Elem())
		errs := decodeValue(p.Elem(), raw, path)
		v.Set(p)
		return errs
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
		return decodeList(v, raw, path)
	}
	if t.Kind() != reflect.Struct {
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			return []error{&fieldErr{path, fmt.Sprintf("want a string, not a %s", jsonType(raw)), true}}
		}
		return nil
	}
	var fields map[string]json.RawMessage
	names := jsonFields(t)
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		msg := fmt.Sprintf("want a mapping of fields (%s), not a %s", strings.Join(names, ", "), jsonType(raw))
		return []error{&fieldErr{path, msg, true}}
	}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		i := slices.Index(names, key)
		if i < 0 {
			// encoding/json's rule: an exact match, else one in any case.
			i = slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, key) })
		}
		if i < 0 {
			errs = append(errs, fmt.Errorf("unknown field %q; the fields are %s", join(path, key), strings.Join(names, ", ")))
			continue
		}
		errs = append(errs, decodeValue(v.FieldByIndex(fieldIndex(t, names[i])), fields[key], join(path, names[i]))...)
	}
	return errs
}

// decodeList decodes a list of mappings item by item, each item's errors
// named by its index (refs[2].path).
func decodeList(v reflect.Value, raw json.RawMessage, path string) []error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return []error{&fieldErr{path, fmt.Sprintf("want a list, not a %s", jsonType(raw)), true}}
	}
	list := reflect.MakeSlice(v.Type(), len(items), len(items))
	var errs []error
	for i, item := range items {
		errs = append(errs, decodeValue(list.Index(i), item, fmt.Sprintf("%s[%d]", path, i))...)
	}
	v.Set(list)
	return errs
}

// jsonFields are the JSON names of t's exported fields, in their order.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.IsExported() {
			out = append(out, strings.Split(f.Tag.Get("json"), ",")[0])
		}
	}
	return out
}

func fieldIndex(t reflect.Type, name string) []int {
	for f := range t.Fields() {
		if f.IsExported() && strings.Split(f.Tag.Get("json"), ",")[0] == name {
			return f.Index
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonType names the type of a JSON value for messages.
func jsonType(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "null"
	}
	switch b[0] {
	case '"':
		return "string"
	case '{':
		return "mapping"
	case '[':
		return "list"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// mistyped are the fields decode could not read: their validation would
// only repeat that they are missing.
func mistyped(errs []error) map[string]bool {
	out := map[string]bool{}
	for _, err := range errs {
		var fe *fieldErr
		if errors.As(err, &fe) && fe.mistyped {
			out[fe.field] = true
		}
	}
	return out
}

// fieldPath is a dotted path of field names.
var fieldPath = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// kindName is a Kubernetes kind: upper camel case.
var kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

func (k Kind) validate() error { return errors.Join(k.problems(nil)...) }

// problems are the errors of k's fields, each on its own; those of the
// fields in skip (and of the fields under them) are left out.
func (k Kind) problems(skip map[string]bool) []error {
	errs := append(k.validateName(), k.validateReload()...)
	if k.Ready != nil {
		errs = append(errs, k.Ready.validate()...)
	}
	errs = append(errs, k.validateRefs()...)
	return slices.DeleteFunc(errs, func(err error) bool {
		var fe *fieldErr
		if !errors.As(err, &fe) {
			return false
		}
		for f := range skip {
			if f == "" { // the entry is no mapping: nothing was read
				return true
			}
			// A restart that could not be read leaves template missing.
			if fe.field == f || strings.HasPrefix(fe.field, f+".") || (f == "restart" && fe.field == "template") {
				return true
			}
		}
		return false
	})
}

// fieldErr is an error in one field of an entry; mistyped: its value
// could not be read.
type fieldErr struct {
	field, msg string
	mistyped   bool
}

func (e *fieldErr) Error() string {
	if e.field == "" { // the entry itself
		return e.msg
	}
	return e.field + ": " + e.msg
}

// fieldError is an error in one field of an entry.
func fieldError(field, format string, args ...any) error {
	return &fieldErr{field: field, msg: fmt.Sprintf(format, args...)}
}

// validateName checks the group, version, kind and resource.
func (k Kind) validateName() []error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(k.Group); k.Group == "" || len(msgs) > 0 {
		errs = append(errs, fieldError("group", "%q is not an API group (a DNS subdomain such as apps.kruise.io)", k.Group))
	}
	if msgs := validation.IsDNS1123Label(k.Version); len(msgs) > 0 {
		errs = append(errs, fieldError("version", "%q is not an API version such as v1alpha1", k.Version))
	}
	if !kindName.MatchString(k.Kind) {
		errs = append(errs, fieldError("kind", "%q is not a kind (upper camel case, such as CloneSet)", k.Kind))
	}
	if msgs := validation.IsDNS1123Label(k.Resource); k.Resource != "" && len(msgs) > 0 {
		errs = append(errs, fieldError("resource", "%q is not a resource name (lower-case plural, such as clonesets)", k.Resource))
	}
	return errs
}

// validateReload checks template, restart and paused.
func (k Kind) validateReload() []error {
	var errs []error
	switch {
	case k.Template != "" && k.Restart != nil:
		errs = append(errs, fieldError("template", "set either template or restart, not both"))
	case k.Template == "" && k.Restart == nil:
		errs = append(errs, fieldError("template", "missing: set template (the field path of a pod template) or restart"))
	case k.Template != "" && !fieldPath.MatchString(k.Template):
		errs = append(errs, fieldError("template", "%q is not a field path such as spec.template", k.Template))
	case k.Restart != nil:
		if msgs := validation.IsQualifiedName(k.Restart.Annotation); len(msgs) > 0 {
			errs = append(errs, fieldError("restart.annotation", "%q is not an annotation key: %s", k.Restart.Annotation, strings.Join(msgs, "; ")))
		}
	}
	if k.Paused != "" && k.Template == "" {
		errs = append(errs, fieldError("paused", "only a kind with a template can be paused"))
	} else if k.Paused != "" && !fieldPath.MatchString(k.Paused) {
		errs = append(errs, fieldError("paused", "%q is not a field path such as spec.paused", k.Paused))
	}
	return errs
}

// validateRefs checks each ref's path and kind, and their bound.
func (k Kind) validateRefs() []error {
	var errs []error
	if len(k.Refs) > MaxRefs {
		errs = append(errs, fieldError("refs", "%d paths; a kind has at most %d", len(k.Refs), MaxRefs))
	}
	seen := map[Ref]int{}
	for i, r := range k.Refs {
		field := fmt.Sprintf("refs[%d]", i)
		kind, ok := configKind(r.Kind)
		if !ok {
			errs = append(errs, fieldError(field+".kind", "%q is not a config kind; use ConfigMap or Secret", r.Kind))
			continue
		}
		f, err := refs.ParseField(r.Path, kind)
		switch {
		case err != nil:
			errs = append(errs, fieldError(field+".path", "%s", err))
		case f.Within(Path(k.Template)):
			errs = append(errs, fieldError(field+".path", "%q is in the pod template (%s), whose configs Ripple finds itself", r.Path, k.Template))
		}
		key := Ref{Path: r.Path, Kind: string(kind)}
		if first, dup := seen[key]; dup {
			errs = append(errs, fieldError(field, "the same path and kind as refs[%d]", first))
		}
		seen[key] = i
	}
	return errs
}

// configKind reads a ref's kind, in any case.
func configKind(s string) (refs.Kind, bool) {
	for _, k := range []refs.Kind{refs.ConfigMap, refs.Secret} {
		if strings.EqualFold(s, string(k)) {
			return k, true
		}
	}
	return "", false
}

// Fields are the kind's refs, parsed (refs that do not parse, which
// validation rejects, are left out).
func (k Kind) Fields() []refs.Field {
	var out []refs.Field
	for _, r := range k.Refs {
		kind, _ := configKind(r.Kind)
		if f, err := refs.ParseField(r.Path, kind); err == nil {
			out = append(out, f)
		}
	}
	return out
}

func (r Ready) validate() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fieldError("ready."+field, format, args...))
	}
	if r.ObservedGeneration != "" && !fieldPath.MatchString(r.ObservedGeneration) {
		bad("observedGeneration", "%q is not a field path such as status.observedGeneration", r.ObservedGeneration)
	}
	switch {
	case (r.Condition == "") == (r.Replicas == nil):
		bad("condition", "set either condition (a condition type such as Ready) or replicas")
	case r.Replicas != nil:
		for _, f := range []struct{ field, path string }{{"desired", r.Replicas.Desired}, {"updated", r.Replicas.Updated}, {"available", r.Replicas.Available}} {
			if !fieldPath.MatchString(f.path) {
				bad("replicas."+f.field, "%q is not a field path such as status.replicas", f.path)
			}
		}
	}
	return errs
}

func isBuiltIn(kind string) bool {
	for _, b := range BuiltIn {
		if strings.EqualFold(b, kind) {
			return true
		}
	}
	return false
}

func (k Kind) withDefaults() Kind {
	if k.Resource == "" {
		k.Resource = plural(strings.ToLower(k.Kind))
	}
	if k.Ready != nil && k.Ready.ObservedGeneration == "" {
		r := *k.Ready
		r.ObservedGeneration = DefaultObservedGeneration
		k.Ready = &r
	}
	return k
}

// plural is the plural resource name the API conventions give a lower-case
// kind (clonesets, policies, statuses); a CRD with another one is declared
// with resource.
func plural(kind string) string {
	switch {
	case strings.HasSuffix(kind, "y") && !strings.HasSuffix(kind, "ey") && !strings.HasSuffix(kind, "ay"):
		return strings.TrimSuffix(kind, "y") + "ies"
	case strings.HasSuffix(kind, "s"), strings.HasSuffix(kind, "x"), strings.HasSuffix(kind, "ch"), strings.HasSuffix(kind, "sh"):
		return kind + "es"
	}
	return kind + "s"
}

// Merge joins the kinds of the enabled presets and of the kinds file, in
// that order, and rejects a kind declared twice (the same kind and group).
// Kinds of the same name in different groups are both named with their
// group (Kind.Name).
func Merge(lists ...Source) ([]Kind, error) {
	var (
		out   []Kind
		errs  []error
		seen  = map[string]string{}
		names = map[string]int{}
	)
	for _, l := range lists {
		for _, k := range l.Kinds {
			key := strings.ToLower(k.String())
			if first, ok := seen[key]; ok {
				errs = append(errs, fmt.Errorf("%s: %s is declared twice (first in %s)", l.Name, k, first))
				continue
			}
			seen[key] = l.Name
			names[strings.ToLower(k.Kind)]++
			k.flag = l.Flag
			out = append(out, k)
		}
	}
	for i, k := range out {
		out[i].qualified = names[strings.ToLower(k.Kind)] > 1
	}
	return out, errors.Join(errs...)
}

// Source is a list of kinds and where they come from, for messages: Name
// in errors ("preset kruise", the file), Flag in logs.
type Source struct {
	Name  string
	Flag  string
	Kinds []Kind
}
