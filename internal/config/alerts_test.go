package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/notify"
)

// With ALERT_ON_RELOAD=true and no usable webhook URL, Reloader runs and
// sends no alert; Ripple must start too (an in-place helm upgrade from
// Reloader's chart would otherwise crash-loop) and say once, naming the
// settings, that alerts are off. The URL is never quoted: it may hold a
// token.
func TestAlertOnReloadWithoutURLStarts(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"no URL", map[string]string{"ALERT_ON_RELOAD": "true"}, nil, []string{"ALERT_ON_RELOAD=true", "no webhook URL", "$ALERT_WEBHOOK_URL"}},
		{"blank URL", map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "  "}, nil, []string{"ALERT_ON_RELOAD=true", "no webhook URL"}},
		{"not a URL", map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "hooks.example/T0/secret-token"}, nil, []string{"ALERT_ON_RELOAD=true", "not an http or https URL"}},
		{"bad proxy", map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/x", "ALERT_WEBHOOK_PROXY": "http://user:secret-token@"}, nil, []string{"ALERT_ON_RELOAD=true", "alert proxy"}},
		{"flag without URL", nil, []string{"--alert-on-reload"}, []string{"--alert-on-reload", "no webhook URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parse(t, tc.env, tc.args...)
			if err != nil {
				t.Fatalf("Ripple refuses to start: %v", err)
			}
			if cfg.Alert.URL != "" {
				t.Errorf("alerts go to %q, want them off", cfg.Alert.URL)
			}
			var alertWarnings []string
			for _, w := range cfg.Warnings {
				if strings.Contains(w, "alerts are off") {
					alertWarnings = append(alertWarnings, w)
				}
			}
			if len(alertWarnings) != 1 {
				t.Fatalf("warnings %q: want one saying alerts are off", cfg.Warnings)
			}
			for _, want := range tc.want {
				if !strings.Contains(alertWarnings[0], want) {
					t.Errorf("warning %q does not say %q", alertWarnings[0], want)
				}
			}
			if strings.Contains(alertWarnings[0], "secret-token") {
				t.Errorf("warning %q quotes the URL", alertWarnings[0])
			}
		})
	}
	if cfg, err := parse(t, map[string]string{"ALERT_WEBHOOK_URL": "https://hooks.example/x"}); err != nil || cfg.Alert.URL != "" || len(cfg.Warnings) != 0 {
		t.Errorf("ALERT_WEBHOOK_URL without ALERT_ON_RELOAD (Reloader 1: no alerts): alert %+v, warnings %q, error %v", cfg.Alert, cfg.Warnings, err)
	}
}

// Reloader 2's --alert-* flags are the ALERT_* variables under other
// names: either gives the same alerts, and both given with different
// values is refused with a message naming both.
func TestReloader2AlertFlags(t *testing.T) {
	env := map[string]string{
		"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/x", "ALERT_SINK": "Slack",
		"ALERT_WEBHOOK_PROXY": "http://proxy:3128", "ALERT_ADDITIONAL_INFO": "prod",
	}
	flags := []string{"--alert-on-reload", "--alert-webhook-url=https://hooks.example/x", "--alert-sink=slack", "--alert-proxy=http://proxy:3128", "--alert-additional-info=prod"}
	fromEnv, err := parse(t, env)
	if err != nil {
		t.Fatal(err)
	}
	fromFlags, err := parse(t, nil, flags...)
	if err != nil {
		t.Fatal(err)
	}
	both, err := parse(t, env, flags...)
	if err != nil {
		t.Fatalf("the same values as variables and flags: %v", err)
	}
	for name, cfg := range map[string]Config{"variables": fromEnv, "flags": fromFlags, "both": both} {
		a := cfg.Alert
		if a.URL != "https://hooks.example/x" || a.Sink != notify.Slack || a.Proxy == nil || a.Proxy.Host != "proxy:3128" || a.AdditionalInfo != "prod" || a.Structured {
			t.Errorf("%s: alert %+v", name, a)
		}
	}
	// As in Reloader 2, a URL given as a flag turns alerts on by itself.
	if cfg, err := parse(t, nil, "--alert-webhook-url=https://hooks.example/x"); err != nil || cfg.Alert.URL == "" {
		t.Errorf("--alert-webhook-url alone: alert %+v, error %v; want alerts on", cfg.Alert, err)
	}
	if cfg, err := parse(t, nil, "--alert-webhook-url=https://hooks.example/x", "--alert-structured"); err != nil || !cfg.Alert.Structured || cfg.Alert.Sink != notify.Raw {
		t.Errorf("--alert-structured: alert %+v, error %v", cfg.Alert, err)
	}
	if cfg, err := parse(t, map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example/x", "ALERT_STRUCTURED": "true", "ALERT_PROXY": "http://proxy:3128"}); err != nil || !cfg.Alert.Structured || cfg.Alert.Proxy == nil {
		t.Errorf("$ALERT_STRUCTURED, $ALERT_PROXY: alert %+v, error %v", cfg.Alert, err)
	}
	for _, tc := range []struct {
		env   map[string]string
		args  []string
		names []string
	}{
		{map[string]string{"ALERT_WEBHOOK_URL": "https://hooks.example/secret-token"}, []string{"--alert-webhook-url=https://other.example/x"}, []string{"$ALERT_WEBHOOK_URL", "--alert-webhook-url"}},
		{map[string]string{"ALERT_ON_RELOAD": "false"}, []string{"--alert-on-reload=true"}, []string{"$ALERT_ON_RELOAD", "--alert-on-reload"}},
		{map[string]string{"ALERT_SINK": "teams"}, []string{"--alert-sink=slack"}, []string{"$ALERT_SINK", "--alert-sink"}},
		{map[string]string{"ALERT_WEBHOOK_PROXY": "http://a:1"}, []string{"--alert-proxy=http://b:1"}, []string{"$ALERT_WEBHOOK_PROXY", "--alert-proxy"}},
		{map[string]string{"ALERT_WEBHOOK_PROXY": "http://a:1", "ALERT_PROXY": "http://b:1"}, nil, []string{"$ALERT_WEBHOOK_PROXY", "$ALERT_PROXY"}},
		{map[string]string{"ALERT_ADDITIONAL_INFO": "a"}, []string{"--alert-additional-info=b"}, []string{"$ALERT_ADDITIONAL_INFO", "--alert-additional-info"}},
		{map[string]string{"ALERT_STRUCTURED": "false"}, []string{"--alert-structured"}, []string{"$ALERT_STRUCTURED", "--alert-structured"}},
		{nil, []string{"--alert-on-reload=false", "--alert-webhook-url=https://hooks.example/x"}, []string{"--alert-on-reload=false", "--alert-webhook-url"}},
	} {
		_, err := parse(t, tc.env, tc.args...)
		if err == nil {
			t.Errorf("env %v, args %v: accepted, want a conflict", tc.env, tc.args)
			continue
		}
		for _, n := range tc.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("env %v, args %v: error %q does not name %s", tc.env, tc.args, err, n)
			}
		}
		if strings.Contains(err.Error(), "secret-token") {
			t.Errorf("error %q quotes the URL", err)
		}
	}
}

func writeTemplate(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "alert.tmpl")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// --alert-template is read and tried at start: a file that cannot be
// read, parsed or rendered, or is past its bound, fails the start with an
// error naming the flag.
func TestAlertTemplate(t *testing.T) {
	url := "--alert-webhook-url=https://hooks.example/x"
	good := writeTemplate(t, `{"text": {{ json .Message }}, "cluster": {{ json .Cluster }}}`)
	cfg, err := parse(t, nil, url, "--alert-template="+good, "--alert-cluster-name=prod-eu", "--alert-additional-info=oncall")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Alert.Template == nil || cfg.Alert.Template.Cluster != "prod-eu" || cfg.Alert.Template.AdditionalInfo != "oncall" || len(cfg.Warnings) != 0 {
		t.Fatalf("alert %+v, warnings %q", cfg.Alert, cfg.Warnings)
	}
	for name, path := range map[string]string{
		"missing":      filepath.Join(t.TempDir(), "none.tmpl"),
		"syntax":       writeTemplate(t, `{"text": {{ json .Message }`),
		"unknown":      writeTemplate(t, `{{ .Data }}`),
		"fails sample": writeTemplate(t, `{{ index .Configs 3 }}`),
		"too large":    writeTemplate(t, strings.Repeat("x", notify.MaxTemplateSize+1)),
	} {
		if _, err := parse(t, nil, url, "--alert-template="+path); err == nil || !strings.Contains(err.Error(), "--alert-template") {
			t.Errorf("%s: error %v, want one naming --alert-template", name, err)
		}
	}
	// The template replaces the sink's format: said once at start.
	cfg, err = parse(t, map[string]string{"ALERT_SINK": "slack"}, url, "--alert-template="+good)
	if err != nil || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "$ALERT_SINK") {
		t.Errorf("template and ALERT_SINK: warnings %q, error %v", cfg.Warnings, err)
	}
	// A cluster name without a template shows nowhere: said at start.
	cfg, err = parse(t, nil, url, "--alert-cluster-name=prod-eu")
	if err != nil || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "--alert-cluster-name") {
		t.Errorf("cluster name without a template: warnings %q, error %v", cfg.Warnings, err)
	}
	// A template without alerts: started, and told.
	cfg, err = parse(t, nil, "--alert-template="+good)
	if err != nil || cfg.Alert.URL != "" || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "alerts are off") {
		t.Errorf("template without a URL: alert %+v, warnings %q, error %v", cfg.Alert, cfg.Warnings, err)
	}
	// Without alerts the file is still checked: a broken one fails.
	if _, err := parse(t, nil, "--alert-template="+filepath.Join(t.TempDir(), "none.tmpl")); err == nil {
		t.Error("a missing template without alerts: accepted")
	}
}
