package main

import (
	"strings"
	"testing"
)

const (
	config  = `{"config":{"protocol_version":"v1.0.0","go_version":"go1.26.8"}}`
	osvs    = `{"osv":{"id":"GO-1","summary":"bad zstd"}} {"osv":{"id":"GO-2","summary":"bad http"}} {"osv":{"id":"GO-3","summary":"bad cli"}}`
	stdlib  = `{"finding":{"osv":"GO-2","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8"}]}} {"finding":{"osv":"GO-2","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Get"}]}}`
	unused  = `{"finding":{"osv":"GO-3","fixed_version":"v29.2.0","trace":[{"module":"example.com/cli","version":"v27.5.0"}]}}`
	called  = `{"finding":{"osv":"GO-1","fixed_version":"v1.20.2","trace":[{"module":"example.com/compress","version":"v1.18.0"}]}} {"finding":{"osv":"GO-1","fixed_version":"v1.20.2","trace":[{"module":"example.com/compress","version":"v1.18.0","package":"example.com/compress/zstd","function":"Decode"}]}}`
	nothing = `{"progress":{"message":"Scanning your code..."}}`
)

// A called vulnerability of a required module fails; one of the standard
// library, or one no code calls, is listed and fails nothing.
func TestCheck(t *testing.T) {
	tests := map[string]struct {
		in         string
		fails      string
		wantListed []string
	}{
		"a required module's, called": {in: strings.Join([]string{config, osvs, stdlib, unused, called}, "\n"),
			fails: "GO-1 example.com/compress@v1.18.0 (fixed in v1.20.2): bad zstd"},
		"the standard library's and an uncalled one": {in: strings.Join([]string{config, nothing, osvs, stdlib, unused}, "\n"),
			wantListed: []string{"standard library of go1.26.8, called: GO-2 stdlib@v1.26.8 (fixed in v1.26.9): bad http",
				"not called: GO-3 example.com/cli@v27.5.0", "2 vulnerabilities listed"}},
		"not govulncheck's JSON": {in: "Scanning your code...", fails: "reading govulncheck's JSON"},
		"no config":              {in: osvs, fails: "was it run with -format json"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := check(strings.NewReader(tc.in))
			switch {
			case tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)):
				t.Errorf("error %v, want one naming %q", err, tc.fails)
			case tc.fails == "" && err != nil:
				t.Errorf("failed: %v", err)
			}
			for _, want := range tc.wantListed {
				if !strings.Contains(out, want) {
					t.Errorf("output does not list %q:\n%s", want, out)
				}
			}
		})
	}
}
