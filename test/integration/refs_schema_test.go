package integration

import (
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/internal/declared"
)

// presetCRDs are the CRD files of the presets' kinds that have refs.
var presetCRDs = map[string]string{"ExternalSecret": cluster.ExternalSecretCRD}

// Every ref of a preset is a path the kind's real CRD schema has, at the
// version the preset declares: a list where the path says [], and a
// string at its end. A path the schema lacks would be pruned from every
// object by the API server, and the ref would follow nothing.
func TestPresetRefsMatchTheirCRDs(t *testing.T) {
	srcs, err := declared.Presets(declared.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, src := range srcs {
		for _, k := range src.Kinds {
			if len(k.Refs) == 0 {
				continue
			}
			file, ok := presetCRDs[k.Kind]
			if !ok {
				t.Errorf("%s: %s has refs but no CRD here to check them on", src.Name, k)
				continue
			}
			props := versionSchema(t, file, k.Version)
			for _, r := range k.Refs {
				if problem := schemaHas(props, r.Path); problem != "" {
					t.Errorf("%s: %s: ref %s: %s", src.Name, k, r.Path, problem)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no preset has refs")
	}
}

// versionSchema is the openAPIV3Schema of version in the CRD file.
func versionSchema(t *testing.T, file, version string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	path, err := cluster.CRDFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s serves no version %s with a schema", file, version)
	return nil
}

// schemaHas says what the schema lacks of path; empty when it has it.
func schemaHas(s *apiextensionsv1.JSONSchemaProps, path string) string {
	for _, seg := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(seg, "[]")
		next, ok := s.Properties[name]
		if !ok {
			return "the schema has no field " + name
		}
		s = &next
		if list {
			if s.Type != "array" || s.Items == nil || s.Items.Schema == nil {
				return name + " is not a list"
			}
			s = s.Items.Schema
		}
	}
	if s.Type != "string" {
		return "its value is a " + s.Type + ", not a string"
	}
	return ""
}
