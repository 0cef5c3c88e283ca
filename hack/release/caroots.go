package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// caRootsModule is the Go module the image's CA certificates come from;
// hack/tools/caroots pins its version.
const caRootsModule = "golang.org/x/crypto/x509roots/fallback"

// caRoots is the CA bundle the image ships and where it comes from.
type caRoots struct {
	// pem is the bundle; license is the module's LICENSE, shipped beside it.
	pem, license []byte
	// module and version name the module, for the labels and the SBOM.
	module, version string
}

// readCARoots runs the command of the module in dir, which writes the CA
// bundle, and reads the version of caRootsModule that module pins. Both
// come from go.mod and go.sum, so every machine gets the same bytes.
func readCARoots(ctx context.Context, dir string) (caRoots, error) {
	var stderr bytes.Buffer
	run := exec.CommandContext(ctx, "go", "-C", dir, "run", ".")
	run.Stderr = &stderr
	bundle, err := run.Output()
	if err != nil {
		return caRoots{}, fmt.Errorf("writing the CA bundle with %s: %w\n%s", dir, err, stderr.String())
	}
	if err := checkBundle(bundle); err != nil {
		return caRoots{}, fmt.Errorf("the CA bundle from %s: %w", dir, err)
	}
	stderr.Reset()
	list := exec.CommandContext(ctx, "go", "-C", dir, "list", "-m", "-json", caRootsModule)
	list.Stderr = &stderr
	out, err := list.Output()
	if err != nil {
		return caRoots{}, fmt.Errorf("go list -m %s in %s: %w\n%s", caRootsModule, dir, err, stderr.String())
	}
	var m struct{ Path, Version, Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		return caRoots{}, fmt.Errorf("go list -m %s: %w", caRootsModule, err)
	}
	if m.Version == "" || m.Dir == "" {
		return caRoots{}, fmt.Errorf("go list -m %s in %s names no downloaded version: %s", caRootsModule, dir, out)
	}
	license, err := os.ReadFile(filepath.Join(m.Dir, "LICENSE"))
	if err != nil {
		return caRoots{}, fmt.Errorf("the license of %s: %w", caRootsModule, err)
	}
	return caRoots{pem: bundle, license: license, module: m.Path, version: m.Version}, nil
}

// checkBundle requires a PEM bundle of certificates only, every one of
// which parses: a broken bundle would fail every TLS connection at run
// time instead of the build.
func checkBundle(b []byte) error {
	n := 0
	for rest := b; len(bytes.TrimSpace(rest)) > 0; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return fmt.Errorf("data after %d certificates is not PEM", n)
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("block %d is a %s, not a CERTIFICATE", n+1, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %w", n+1, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("no certificates")
	}
	return nil
}
