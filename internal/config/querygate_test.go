package config

import (
	"strings"
	"testing"
)

// The query gate starts only when it can ask something: a Prometheus, and
// a condition of the flag's or, with --namespace-defaults, Namespaces'.
func TestQueryGateFlags(t *testing.T) {
	const url, cond = "--prometheus-url=https://prometheus:9090", "--canary-query=max(up) > 0"
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" when Ripple starts
	}{
		{"a Prometheus and a condition", []string{"--canary-gates=query", url, cond}, ""},
		{"Namespaces' conditions only", []string{"--canary-gates=query", url, "--namespace-defaults"}, ""},
		{"no Prometheus", []string{"--canary-gates=query", cond}, "--canary-gates: query needs --prometheus-url"},
		{"no condition anywhere", []string{"--canary-gates=query", url}, "--canary-gates: query has no condition to ask: set --canary-query, or --namespace-defaults"},
		{"a condition with the gate off", []string{url, cond}, "--canary-query: is set but the query gate is off"},
		{"the pod gate only", []string{"--canary-gates=pods"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, nil, tc.args...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("%q: %v, want Ripple to start", tc.args, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("%q: error %v, want one with %q", tc.args, err, tc.wantErr)
			}
		})
	}
}
