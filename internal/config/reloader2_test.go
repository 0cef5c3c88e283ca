package config

import (
	"strings"
	"testing"
)

// Reloader 2's names for settings Ripple has (--metrics-addr,
// --health-addr) have the same effect; given together with Ripple's name
// and a different value they are refused, naming both.
func TestReloader2AddressFlags(t *testing.T) {
	cfg, err := parse(t, nil, "--metrics-addr=:8081", "--health-addr=:8082")
	if err != nil || cfg.MetricsAddr != ":8081" || cfg.HealthAddr != ":8082" {
		t.Fatalf("metrics %q, health %q, error %v; want :8081 and :8082", cfg.MetricsAddr, cfg.HealthAddr, err)
	}
	if cfg, err := parse(t, nil, "--metrics-addr=:9090", "--metrics-bind-address=:9090"); err != nil || cfg.MetricsAddr != ":9090" {
		t.Errorf("the same value under both names: %q, error %v", cfg.MetricsAddr, err)
	}
	if cfg, err := parse(t, nil); err != nil || cfg.MetricsAddr != ":9090" || cfg.HealthAddr != "" {
		t.Errorf("defaults: metrics %q, health %q, error %v; want :9090 and none of its own", cfg.MetricsAddr, cfg.HealthAddr, err)
	}
	for _, args := range [][]string{
		{"--metrics-bind-address=:9090", "--metrics-addr=:8081"},
		{"--health-probe-bind-address=:8082", "--health-addr=:8080"},
	} {
		_, err := parse(t, nil, args...)
		if err == nil {
			t.Errorf("%v: accepted, want a conflict", args)
			continue
		}
		for _, a := range args {
			name, _, _ := strings.Cut(a, "=")
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%v: error %q does not name %s", args, err, name)
			}
		}
	}
	if _, err := parse(t, nil, "--enable-pprof", "--pprof-addr=:8081", "--metrics-addr=:8081"); err == nil {
		t.Error("--pprof-addr on the port of --metrics-addr: accepted")
	}
}

// The Lease is released on SIGTERM unless Reloader 2's
// --leader-election-release-on-cancel says otherwise.
func TestReleaseOnCancel(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{{nil, true}, {[]string{"--leader-election-release-on-cancel=false"}, false}, {[]string{"--leader-election-release-on-cancel", "false"}, false}, {[]string{"--leader-election-release-on-cancel"}, true}} {
		cfg, err := parse(t, nil, append([]string{"--enable-ha"}, tc.args...)...)
		if err != nil || cfg.ReleaseOnCancel != tc.want {
			t.Errorf("%v: release on cancel %v, error %v; want %v", tc.args, cfg.ReleaseOnCancel, err, tc.want)
		}
	}
}

// Reloader 2's flags rename the exclude and SecretProviderClass
// annotations, which Reloader 1 could not rename.
func TestReloader2AnnotationFlags(t *testing.T) {
	cfg, err := parse(t, map[string]string{"RELOADER_NAMESPACE": "ops"},
		"--configmap-exclude-annotation=example.com/cm-exclude", "--secret-exclude-annotation=example.com/secret-exclude",
		"--secretproviderclass-annotation=example.com/spc", "--secretproviderclass-auto-annotation=example.com/spc-auto",
		"--secretproviderclass-exclude-annotation=example.com/spc-exclude")
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Keys
	if k.ConfigMapExclude != "example.com/cm-exclude" || k.SecretExclude != "example.com/secret-exclude" || k.SecretProviderClassReload != "example.com/spc" ||
		k.SecretProviderClassAuto != "example.com/spc-auto" || k.SecretProviderClassExclude != "example.com/spc-exclude" {
		t.Errorf("keys %+v", k)
	}
	if got := cfg.MetaInfo.Options.ConfigmapExcludeReloaderAnnotation; got != "example.com/cm-exclude" {
		t.Errorf("meta-info exclude key %q", got)
	}
	if _, err := parse(t, nil, "--secretproviderclass-exclude-annotation="); err == nil || !strings.Contains(err.Error(), "--secretproviderclass-exclude-annotation") {
		t.Errorf("an empty key: error %v, want one naming the flag", err)
	}
	def, _ := parse(t, nil)
	if def.Keys.SecretProviderClassExclude != "secretproviderclasses.exclude.reloader.stakater.com/reload" {
		t.Errorf("default SecretProviderClass exclude key %q", def.Keys.SecretProviderClassExclude)
	}
}

// Reloader's pull request 1206 validates the timings as client-go does;
// Ripple refuses at start what client-go would refuse when electing.
func TestLeaseTimingsAsClientGo(t *testing.T) {
	if _, err := parse(t, nil, "--enable-ha", "--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s", "--leader-election-retry-period=9s"); err == nil ||
		!strings.Contains(err.Error(), "--leader-election-retry-period") {
		t.Errorf("a retry period whose jitter passes the renew deadline: error %v, want one naming the flag", err)
	}
	if _, err := parse(t, nil, "--enable-ha", "--leader-election-lease-duration=20s", "--leader-election-renew-deadline=15s", "--leader-election-retry-period=3s"); err != nil {
		t.Errorf("Reloader's documented example: %v", err)
	}
}
