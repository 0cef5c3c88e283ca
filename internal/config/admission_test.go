package config

import (
	"strings"
	"testing"
)

// The webhook is off by default; its flags are checked, each error naming
// the flag at fault.
func TestAdmission(t *testing.T) {
	cfg, err := parse(t, nil)
	if err != nil || cfg.Admission.Addr != "" || cfg.Admission.MaxRollouts != 0 {
		t.Fatalf("defaults: %+v, error %v; want no webhook and no guard", cfg.Admission, err)
	}
	cfg, err = parse(t, nil, "--admission-bind-address=:9443", "--admission-max-rollouts=20", "--admission-cert-dir=/certs")
	if err != nil || cfg.Admission != (Admission{Addr: ":9443", CertDir: "/certs", MaxRollouts: 20}) {
		t.Fatalf("set: %+v, error %v", cfg.Admission, err)
	}
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"--admission-max-rollouts=5"}, "--admission-max-rollouts"},
		{[]string{"--admission-bind-address=:9443", "--admission-max-rollouts=-1"}, "--admission-max-rollouts"},
		{[]string{"--admission-bind-address=9443"}, "--admission-bind-address"},
		{[]string{"--admission-bind-address=:http"}, "--admission-bind-address"},
		{[]string{"--admission-bind-address=:9090"}, "--admission-bind-address"},
		{[]string{"--admission-bind-address=:9443", "--admission-cert-dir="}, "--admission-cert-dir"},
		{[]string{"--admission-bind-address=:9443", "--webhook-url=https://hooks.example.com/ripple"}, "--admission-bind-address"},
	} {
		if _, err := parse(t, nil, tt.args...); err == nil || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("%v: error %v, want one naming %s", tt.args, err, tt.flag)
		}
	}
}
