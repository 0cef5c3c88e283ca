package refs

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func mustField(t *testing.T, path string, kind Kind) Field {
	t.Helper()
	f, err := ParseField(path, kind)
	if err != nil {
		t.Fatalf("ParseField(%q): %v", path, err)
	}
	return f
}

func content(t *testing.T, y string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseField(t *testing.T) {
	for _, tc := range []struct {
		path string
		kind Kind
		err  string // "" when valid
	}{
		{"spec.target.template.templateFrom[].configMap.name", ConfigMap, ""},
		{"spec.configMapNames[]", ConfigMap, ""},
		{"spec.secret_ref.name", Secret, ""},
		{"spec.a[].b[].name", Secret, ""},
		{"", ConfigMap, "missing"},
		{"spec..name", ConfigMap, `field 2, ""`},
		{"spec.items[0].name", ConfigMap, `field 2, "items[0]"`},
		{"spec.x[]]", ConfigMap, "field 2"},
		{"spec.a b", ConfigMap, "field 2"},
		{"metadata.name", ConfigMap, "under metadata"},
		{"status.configMap", Secret, "under status"},
		{"spec.name", SecretProviderClass, "use ConfigMap or Secret"},
		{"spec.name", Kind("Pod"), "use ConfigMap or Secret"},
	} {
		_, err := ParseField(tc.path, tc.kind)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("ParseField(%q, %s) = %v, want no error", tc.path, tc.kind, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseField(%q, %s) = %v, want an error with %q", tc.path, tc.kind, err, tc.err)
		}
	}
}

func TestFieldWithin(t *testing.T) {
	tpl := []string{"spec", "template"}
	for path, want := range map[string]bool{
		"spec.template.spec.volumes[].configMap.name": true,
		"spec.template":           true,
		"spec.templates.name":     false,
		"spec.config.name":        false,
		"spec":                    false,
		"spec.template[].name":    true, // a list at the template path is still the template
		"spec.other[].template.a": false,
	} {
		if got := mustField(t, path, ConfigMap).Within(tpl); got != want {
			t.Errorf("%q.Within(spec.template) = %v, want %v", path, got, want)
		}
	}
	if mustField(t, "spec.template.x", ConfigMap).Within(nil) {
		t.Error("a field is within no empty path")
	}
}

const externalSecret = `
spec:
  target:
    template:
      templateFrom:
      - configMap:
          name: tpl-a
          items: [{key: a}]
      - secret:
          name: tpl-s
      - literal: "{{ .x }}"
      - configMap:
          name: tpl-b
      - configMap:
          name: tpl-a
      - configMap:
          name: 42
      - configMap:
          name: Not_A_Name
      - configMap: "a string, not a mapping"
      - configMap:
          name: ""
`

func TestFieldRefs(t *testing.T) {
	cm := mustField(t, "spec.target.template.templateFrom[].configMap.name", ConfigMap)
	sec := mustField(t, "spec.target.template.templateFrom[].secret.name", Secret)
	got, over := FieldRefs(content(t, externalSecret), []Field{cm, sec}, 256)
	want := []FieldRef{
		{Ref{ConfigMap, "tpl-a"}, cm.Path},
		{Ref{ConfigMap, "tpl-b"}, cm.Path},
		{Ref{Secret, "tpl-s"}, sec.Path},
	}
	if over || !reflect.DeepEqual(got, want) {
		t.Errorf("FieldRefs = %v, over %v; want %v, not over", got, over, want)
	}
}

func TestFieldRefsMissing(t *testing.T) {
	fields := []Field{
		mustField(t, "spec.target.template.templateFrom[].configMap.name", ConfigMap),
		mustField(t, "spec.list[]", Secret),
		mustField(t, "spec.plain.name", Secret),
	}
	for name, y := range map[string]string{
		"no spec":               `kind: X`,
		"no target":             `spec: {}`,
		"templateFrom not list": `spec: {target: {template: {templateFrom: {configMap: {name: a}}}}}`,
		"template a string":     `spec: {target: {template: "x"}}`,
		"items not mappings":    `spec: {target: {template: {templateFrom: [a, 1, null]}}}`,
		"list of non-strings":   `spec: {list: [1, true, {name: a}, null]}`,
		"list a string":         `spec: {list: a}`,
		"name a mapping":        `spec: {plain: {name: {x: y}}}`,
		"name null":             `spec: {plain: {name: null}}`,
		"name a list":           `spec: {plain: {name: [a]}}`,
	} {
		if got, over := FieldRefs(content(t, y), fields, 256); len(got) != 0 || over {
			t.Errorf("%s: FieldRefs = %v, over %v; want none", name, got, over)
		}
	}
}

func TestFieldRefsList(t *testing.T) {
	f := mustField(t, "spec.names[]", Secret)
	got, _ := FieldRefs(content(t, `spec: {names: [a, b, 3, a, c]}`), []Field{f}, 256)
	want := []FieldRef{{Ref{Secret, "a"}, f.Path}, {Ref{Secret, "b"}, f.Path}, {Ref{Secret, "c"}, f.Path}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FieldRefs = %v, want %v", got, want)
	}
}

func TestFieldRefsBound(t *testing.T) {
	f := mustField(t, "spec.items[].name", ConfigMap)
	var b strings.Builder
	b.WriteString("spec:\n  items:\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  - name: cm-%d\n", i%10) // 10 names, read 1000 times
	}
	obj := content(t, b.String())
	got, over := FieldRefs(obj, []Field{f}, 256)
	if !over || len(got) != 10 {
		t.Errorf("1000 values, limit 256: %d refs, over %v; want the 10 names read before the limit, over", len(got), over)
	}
	got, over = FieldRefs(obj, []Field{f}, 1000)
	if over || len(got) != 10 {
		t.Errorf("1000 values, limit 1000: %d refs, over %v; want 10, not over", len(got), over)
	}
	if _, over = FieldRefs(obj, []Field{f}, 999); !over {
		t.Error("1000 values, limit 999: want over")
	}
}

func TestFieldRefUse(t *testing.T) {
	r := FieldRef{Ref{ConfigMap, "a"}, "spec.x.name"}
	keys, all := Keys([]Use{r.Use()}, r.Ref)
	if !all || keys != nil {
		t.Errorf("a field's use reads keys %v, all %v; want all", keys, all)
	}
}
