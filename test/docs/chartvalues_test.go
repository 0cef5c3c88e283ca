package docs

import (
	"encoding/json"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	// dottedRE is a dotted name such as ripple.restartMethods.evict; %s
	// stands for a segment a message fills in.
	dottedRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*(?:\.(?:[A-Za-z][A-Za-z0-9]*|%s))+`)
	humpsRE  = regexp.MustCompile(`[a-z][A-Z]`)
	chartRE  = regexp.MustCompile(`(?i)\b(?:chart|helm)\b`)
	// valueSpanRE is a code span in the docs that names a chart value.
	valueSpanRE = regexp.MustCompile("`((?:ripple|reloader)\\.[a-z][A-Za-z0-9]*(?:\\.[A-Za-z][A-Za-z0-9]*)*)(?:=[^`]*)?`")
)

// notValues end dotted names that are files or domains, not values.
var notValues = []string{"com", "dev", "io", "md", "yaml", "json", "go", "txt"}

// chartValuesIn returns the chart values a message or help text names:
// in a text that speaks of the chart or Helm, each dotted name with a
// camelCase segment, or starting with ripple. or reloader., that is not a
// file or a domain (such as reloader.stakater.com/auto).
func chartValuesIn(text string) []string {
	if !chartRE.MatchString(text) {
		return nil
	}
	var out []string
	for _, loc := range dottedRE.FindAllStringIndex(text, -1) {
		name := text[loc[0]:loc[1]]
		last := name[strings.LastIndex(name, ".")+1:]
		switch {
		case loc[1] < len(text) && text[loc[1]] == '/', slices.Contains(notValues, last):
		case humpsRE.MatchString(name), strings.HasPrefix(name, "ripple."), strings.HasPrefix(name, "reloader."):
			out = append(out, name)
		}
	}
	return out
}

// schemaHas reports whether the chart's values schema has the value at
// path; a %s segment stands for any property of an object.
func schemaHas(schema map[string]any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	props, _ := schema["properties"].(map[string]any)
	if path[0] == "%s" {
		for _, p := range props {
			if sub, ok := p.(map[string]any); ok && schemaHas(sub, path[1:]) {
				return true
			}
		}
		return false
	}
	sub, ok := props[path[0]].(map[string]any)
	return ok && schemaHas(sub, path[1:])
}

func valuesSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy", "helm", "ripple", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

// Every chart value that Ripple's messages, Events and flag help name (a
// hint such as "grant it with the Helm chart value
// ripple.restartMethods.evict=true") is one helm accepts: a value of the
// chart's values schema, with its full path.
func TestHintsNameChartValues(t *testing.T) {
	schema := valuesSchema(t)
	found := 0
	err := goFiles(root, func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, v := range chartValuesIn(s) {
				found++
				if !schemaHas(schema, strings.Split(v, ".")) {
					t.Errorf("%q names the chart value %s, which values.schema.json does not have", s, v)
				}
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no chart value found in the code: has the hint's wording changed?")
	}
}

// Every chart value a page names in a code span (`ripple.restartMethods.evict`)
// is a value of the chart's values schema.
func TestDocsNameChartValues(t *testing.T) {
	schema := valuesSchema(t)
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range valueSpanRE.FindAllStringSubmatch(line, -1) {
				if slices.Contains(notValues, m[1][strings.LastIndex(m[1], ".")+1:]) {
					continue // a domain, such as the annotation prefix ripple.dev
				}
				if !schemaHas(schema, strings.Split(m[1], ".")) {
					t.Errorf("%s:%d: %s is not a value of the chart", f, i+1, m[1])
				}
			}
		}
	}
}

// The hint finder itself: what it reads as chart values, and what not.
func TestChartValuesIn(t *testing.T) {
	for text, want := range map[string][]string{
		"grant it with the Helm chart value ripple.restartMethods.%s=true":               {"ripple.restartMethods.%s"},
		"the pod permissions the chart grants with restartMethods.evict":                 {"restartMethods.evict"},
		"the chart sets it by default (`ripple.metaInfo.enabled`)":                       {"ripple.metaInfo.enabled"},
		"the chart's probes use reloader.stakater.com/auto, see docs/restart-methods.md": nil,
		"restartMethods.evict, but no word of the chart's maker":                         {"restartMethods.evict"},
		"restartMethods.evict in a text that names no packager":                          nil,
	} {
		if got := chartValuesIn(text); !slices.Equal(got, want) {
			t.Errorf("chartValuesIn(%q) = %q, want %q", text, got, want)
		}
	}
}
