package config

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/workload"
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

// Every Event reason Ripple records is in the reference, with Reloader's
// for a failure; and the field manager is the one the reference names as
// a deliberate difference from Reloader's "Reloader".
func TestReferenceCoversEventsAndFieldManager(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	ref := b.String()
	for _, i := range reason.All() {
		if i.Event && !strings.Contains(ref, "| `"+string(i.Reason)+"` | "+i.Type()+" |") {
			t.Errorf("Event reason %s is not in the reference", i.Reason)
		}
	}
	if reason.ReloadFail != "ReloadFail" || reason.Reloaded != "Reloaded" {
		t.Errorf("the reasons %q and %q are not Reloader's Reloaded and ReloadFail", reason.Reloaded, reason.ReloadFail)
	}
	if workload.FieldManager != "ripple" || !strings.Contains(ref, "field manager `ripple`, where Reloader's is `Reloader`") {
		t.Errorf("field manager %q: the reference must name it as the deliberate difference from Reloader's", workload.FieldManager)
	}
}
