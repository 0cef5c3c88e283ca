package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The --webhook-url may come from $RIPPLE_WEBHOOK_URL (set from a Secret),
// so a token in it is not in the Deployment's arguments; the flag wins,
// and neither --help, the meta-info nor an error shows the URL.
func TestWebhookURLFromEnv(t *testing.T) {
	const url = "https://hooks.example/T0/secret-token"
	env := map[string]string{"RIPPLE_WEBHOOK_URL": url, "RELOADER_NAMESPACE": "ops"}
	cfg, err := parse(t, env)
	if err != nil || cfg.WebhookURL != url {
		t.Fatalf("$RIPPLE_WEBHOOK_URL: webhook URL %q, error %v; want the variable's", cfg.WebhookURL, err)
	}
	if got := cfg.MetaInfo.Options.WebhookURL; got != "(set)" {
		t.Errorf("meta-info webhookUrl %q, want (set)", got)
	}
	if cfg, err := parse(t, env, "--webhook-url=https://other.example/x"); err != nil || cfg.WebhookURL != "https://other.example/x" {
		t.Errorf("--webhook-url with $RIPPLE_WEBHOOK_URL: %q, error %v; want the flag's", cfg.WebhookURL, err)
	}
	o := NewOptions()
	o.ReadEnv(func(k string) string { return env[k] })
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	o.BindFlags(fs)
	if strings.Contains(fs.FlagUsages(), "secret-token") {
		t.Error("--help shows the URL of $RIPPLE_WEBHOOK_URL")
	}
	_, err = parse(t, map[string]string{"RIPPLE_WEBHOOK_URL": "ftp://hooks.example/secret-token"})
	if err == nil || !strings.Contains(err.Error(), "$RIPPLE_WEBHOOK_URL") || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("a bad $RIPPLE_WEBHOOK_URL: error %v, want one naming the variable and not quoting it", err)
	}
	if cfg, err := parse(t, nil); err != nil || cfg.WebhookURL != "" {
		t.Errorf("neither: webhook URL %q, error %v", cfg.WebhookURL, err)
	}
}
