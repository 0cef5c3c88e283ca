// Command genmanifests renders deploy/manifests/ripple.yaml and the
// generated Kustomize files from the Helm chart (`make manifests`). With
// -check it only reports stale files and exits 1 if there are any.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

func main() {
	check := flag.Bool("check", false, "report stale files instead of writing them")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "genmanifests:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	root, err := helmchart.RepoRoot()
	if err != nil {
		return err
	}
	files, err := helmchart.GeneratedFiles()
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var stale []string
	for _, p := range paths {
		full := filepath.Join(root, p)
		old, _ := os.ReadFile(full)
		if bytes.Equal(old, files[p]) {
			continue
		}
		if check {
			stale = append(stale, p)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", p)
	}
	if len(stale) > 0 {
		return fmt.Errorf("stale, run 'make manifests': %v", stale)
	}
	return nil
}
