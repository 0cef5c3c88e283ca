// Command vulncheck reads govulncheck's JSON output (-format json) on its
// standard input and fails when Ripple's code calls a vulnerable function
// of a module it requires: that is fixed here, by go.mod. A vulnerability
// of the standard library is fixed by the Go that builds the release, not
// by the repository, so it is listed with the Go version that fixes it and
// fails nothing; so is a module's vulnerability that no code calls.
//
//	go tool -modfile=hack/tools/vuln/go.mod govulncheck -db file://DB -format json ./... | go run ./hack/vulncheck
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	report, err := check(os.Stdin)
	fmt.Print(report)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck:", err)
		os.Exit(1)
	}
}

// message is one object of govulncheck's JSON stream; only the kinds read
// here are decoded.
type message struct {
	Config *struct {
		GoVersion string `json:"go_version"`
	} `json:"config"`
	OSV *struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"osv"`
	Finding *finding `json:"finding"`
}

// finding is a vulnerability found at a module, a package or, with a
// function in its first frame, a call.
type finding struct {
	OSV   string  `json:"osv"`
	Fixed string  `json:"fixed_version"`
	Trace []frame `json:"trace"`
}

type frame struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Function string `json:"function"`
}

// vuln is one vulnerability of one module version, and whether Ripple's
// code calls it.
type vuln struct {
	id, module, version, fixed string
	called                     bool
}

// check returns the report of govulncheck's output in, and an error when
// a required module's vulnerable code is called.
func check(in io.Reader) (string, error) {
	vulns, summaries, goVersion, err := read(in)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	var failed []string
	for _, v := range vulns {
		line := fmt.Sprintf("%s %s@%s (fixed in %s): %s", v.id, v.module, v.version, orNone(v.fixed), summaries[v.id])
		switch {
		case v.module == "stdlib" && v.called:
			out.WriteString("standard library of " + goVersion + ", called: " + line + "; build releases with a Go that has the fix\n")
		case v.called:
			failed = append(failed, line)
		default:
			out.WriteString("not called: " + line + "\n")
		}
	}
	if len(failed) > 0 {
		return out.String(), fmt.Errorf("the code calls vulnerable code of %d required module(s); raise them in go.mod:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	fmt.Fprintf(&out, "no required module's vulnerable code is called (%d vulnerabilities listed)\n", len(vulns))
	return out.String(), nil
}

// read decodes the stream into its vulnerabilities, sorted, with the
// summaries of their OSV entries and the Go version scanned.
func read(in io.Reader) (vulns []vuln, summaries map[string]string, goVersion string, err error) {
	summaries = map[string]string{}
	// A vulnerability is reported once per level (module, package, call);
	// one entry each, called when any finding has a call.
	type key struct{ id, module, version string }
	index := map[key]int{}
	dec := json.NewDecoder(in)
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, "", fmt.Errorf("reading govulncheck's JSON: %w", err)
		}
		switch {
		case m.Config != nil:
			goVersion = m.Config.GoVersion
		case m.OSV != nil:
			summaries[m.OSV.ID] = m.OSV.Summary
		case m.Finding != nil && len(m.Finding.Trace) > 0:
			top := m.Finding.Trace[0]
			k := key{m.Finding.OSV, top.Module, top.Version}
			i, ok := index[k]
			if !ok {
				i = len(vulns)
				index[k] = i
				vulns = append(vulns, vuln{id: k.id, module: k.module, version: k.version, fixed: m.Finding.Fixed})
			}
			vulns[i].called = vulns[i].called || top.Function != ""
		}
	}
	if goVersion == "" {
		return nil, nil, "", errors.New("no config in govulncheck's output: was it run with -format json?")
	}
	slices.SortFunc(vulns, func(a, b vuln) int { return strings.Compare(a.module+a.id, b.module+b.id) })
	return vulns, summaries, goVersion, nil
}

func orNone(v string) string {
	if v == "" {
		return "no version yet"
	}
	return v
}
