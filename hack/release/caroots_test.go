package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestReadCARoots: the CA bundle comes from the module hack/tools/caroots
// pins, at the version its go.mod names, with that module's license; the
// build machine's trust store plays no part.
func TestReadCARoots(t *testing.T) {
	ca, err := readCARoots(t.Context(), "../tools/caroots")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../tools/caroots/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if ca.module != caRootsModule || !strings.Contains(string(gomod), "\nrequire "+ca.module+" "+ca.version+"\n") {
		t.Errorf("the bundle comes from %s@%s, not the version hack/tools/caroots/go.mod pins:\n%s", ca.module, ca.version, gomod)
	}
	if n := bytes.Count(ca.pem, []byte("-----BEGIN CERTIFICATE-----")); n < 100 {
		t.Errorf("the bundle holds %d certificates, want over 100", n)
	}
	if !bytes.Contains(ca.license, []byte("The Go Authors")) {
		t.Errorf("the license shipped beside the bundle is not the module's:\n%s", ca.license)
	}
	if _, err := readCARoots(t.Context(), t.TempDir()); err == nil {
		t.Error("a directory without the module gave a bundle")
	}
}
