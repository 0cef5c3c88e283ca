package config

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/annotation"
)

// docs/reference.md must be what the code generates: run `make docs`.
func TestReferenceIsCurrent(t *testing.T) {
	var want bytes.Buffer
	if err := WriteReference(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("docs/reference.md is stale: run `make docs`")
	}
}

// Every annotation key has a line in the reference.
func TestReferenceCoversEveryAnnotation(t *testing.T) {
	keys := annotation.DefaultKeys(annotation.DefaultPrefix)
	documented := map[string]bool{}
	for _, a := range annotationDocs(keys) {
		documented[a[0]] = true
	}
	v := reflect.ValueOf(keys)
	for i := range v.NumField() {
		if key := v.Field(i).String(); !documented[key] {
			t.Errorf("annotation %s (%s) is not in the reference", key, v.Type().Field(i).Name)
		}
	}
	if !strings.Contains(keys.Applied, "ripple.dev/") {
		t.Errorf("Applied key %q is not under the prefix", keys.Applied)
	}
}
