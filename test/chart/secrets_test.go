package chart

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/config"
)

// TestURLsComeFromSecrets: the --webhook-url and the alert URL (tokens
// live in them) reach Ripple from a Secret, the chart's or one the user
// manages, and appear nowhere in the Deployment, which the built-in view
// role may read.
func TestURLsComeFromSecrets(t *testing.T) {
	const hook, alert = "https://hooks.example.com/T0/hook-token", "https://hooks.slack.com/services/T0/alert-token"
	alerts := func(env map[string]any) map[string]any {
		env["open"] = map[string]any{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "slack"}
		return r(map[string]any{"deployment": map[string]any{"env": env}})
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		own    *corev1.Secret
		token  string
		check  func(config.Config) bool
	}{
		{name: "reloader.webhookUrl", values: r(map[string]any{"webhookUrl": hook}), token: "hook-token",
			check: func(cfg config.Config) bool { return cfg.WebhookURL == hook }},
		{name: "ripple.webhookUrlSecret", values: map[string]any{"ripple": map[string]any{"webhookUrlSecret": map[string]any{"name": "hooks", "key": "endpoint"}}},
			own: userSecret("hooks", "endpoint", hook), token: "hook-token",
			check: func(cfg config.Config) bool { return cfg.WebhookURL == hook }},
		{name: "alert URL in env.secret", values: alerts(map[string]any{"secret": map[string]any{"ALERT_WEBHOOK_URL": alert}}), token: "alert-token",
			check: func(cfg config.Config) bool { return cfg.Alert.URL == alert && cfg.WebhookURL == "" }},
		{name: "alert URL in env.existing", values: alerts(map[string]any{"existing": map[string]any{"ripple-alerts": map[string]any{"ALERT_WEBHOOK_URL": "url"}}}),
			own: userSecret("ripple-alerts", "url", alert), token: "alert-token",
			check: func(cfg config.Config) bool { return cfg.Alert.URL == alert && cfg.WebhookURL == "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{tc.values}})
			if tc.own != nil {
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.own)
				if err != nil {
					t.Fatal(err)
				}
				objs = append(objs, &unstructured.Unstructured{Object: u})
			}
			_, cfg := parseRendered(t, objs)
			if !tc.check(cfg) {
				t.Errorf("Ripple's webhook URL %q, alert URL %q: the Secret's URL did not reach it", cfg.WebhookURL, cfg.Alert.URL)
			}
			d, _ := rippleDeployment(t, objs)
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), tc.token) {
				t.Errorf("the Deployment holds the URL's token:\n%s", b)
			}
			webhookMode := cfg.WebhookURL != ""
			if grants := hasRule(objs, "ClusterRole", "", "events"); grants == webhookMode {
				t.Errorf("webhook mode %v, the ClusterRole grants events %v: webhook mode writes nothing, else Ripple records Events", webhookMode, grants)
			}
		})
	}
}

// userSecret is a Secret the user manages, outside the chart.
func userSecret(name, key, value string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: relNS},
		StringData: map[string]string{key: value},
	}
}
