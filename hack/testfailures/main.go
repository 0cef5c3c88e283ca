// Command testfailures names the tests that failed in the go test -json
// files make test's tiers write (bin/test-json), each with the lines its
// t.Error, t.Fatal and t.Log calls printed. A failed e2e test prints
// Ripple's whole log after its own messages, and CI keeps only the end of
// the output, so make test prints this last, where the failure is read.
//
//	go run ./hack/testfailures bin/test-json/*.json
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

func main() {
	var out strings.Builder
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testfailures:", err)
			os.Exit(1)
		}
		err = report(&out, f)
		_ = f.Close() // read only: nothing to lose
		if err != nil {
			fmt.Fprintf(os.Stderr, "testfailures: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
	if out.Len() == 0 {
		out.WriteString("no failed test in the JSON files\n")
	}
	fmt.Print(out.String())
}

// event is one line of go test -json (test2json).
type event struct {
	Action, Package, Test, Output string
}

// maxLines bounds what is printed of one test or package, so a test that
// logs in a loop cannot bury the others.
const maxLines = 30

// testLine is a line of t.Log, t.Error or t.Fatal: "    file.go:12: ...".
var testLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: `)

// report writes, for each failed test read from in, its name and its
// t.Log, t.Error and t.Fatal lines; for a package that failed with no
// failed test (a panic, a timeout, a build error), its last lines.
func report(w *strings.Builder, in io.Reader) error {
	type key struct{ pkg, test string }
	output := map[key][]string{}
	var failed []key
	testFailed := map[string]bool{}
	dec := json.NewDecoder(in)
	for {
		var e event
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("reading go test -json: %w", err)
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			output[k] = append(output[k], strings.TrimRight(e.Output, "\n"))
		case "fail":
			failed = append(failed, k)
			if e.Test != "" {
				testFailed[e.Package] = true
			}
		}
	}
	for _, k := range failed {
		var lines []string
		if k.test == "" {
			if testFailed[k.pkg] {
				continue
			}
			w.WriteString("--- FAIL: package " + k.pkg + "\n")
			lines = output[k][max(0, len(output[k])-maxLines):]
		} else {
			w.WriteString("--- FAIL: " + k.test + " (" + k.pkg + ")\n")
			for _, l := range output[k] {
				if testLine.MatchString(l) && len(lines) < maxLines {
					lines = append(lines, l)
				}
			}
		}
		for _, l := range lines {
			w.WriteString(l + "\n")
		}
	}
	return nil
}
