package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/test/inproc"
)

// TestAlertTemplateChart: ripple.alertTemplate is kept in the ConfigMap
// <fullname>-alert-template, mounted read-only and passed as
// --alert-template, and Ripple takes the mounted file (with
// ripple.alertClusterName as --alert-cluster-name); a changed template
// rolls the pods (Ripple reads it at start); the API server accepts the
// objects; without the value nothing of it is rendered.
func TestAlertTemplateChart(t *testing.T) {
	ensureNamespace(t, kubernetes.NewForConfigOrDie(api.Config), relNS, nil)
	values := func(tpl string) map[string]any {
		return deepMerge(r(map[string]any{"deployment": map[string]any{"env": map[string]any{"open": map[string]any{
			"ALERT_ON_RELOAD": "true", "ALERT_WEBHOOK_URL": "https://hooks.example.com/x",
		}}}}), map[string]any{"ripple": map[string]any{"alertTemplate": tpl, "alertClusterName": "prod-eu"}})
	}
	const tpl = `{"text": {{ json .Message }}, "cluster": {{ json .Cluster }}}` + "\n"
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{values(tpl)}})
	var cm *unstructured.Unstructured
	for _, o := range find(objs, "ConfigMap") {
		if o.GetName() == relName+"-alert-template" {
			cm = o
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap of the alert template")
	}
	text, _, _ := unstructured.NestedString(cm.Object, "data", "alert.tmpl")
	if text != tpl {
		t.Errorf("the ConfigMap holds %q, want %q", text, tpl)
	}
	d, c := rippleDeployment(t, objs)
	vi := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == cm.GetName() })
	if vi < 0 {
		t.Fatalf("no volume of the ConfigMap %s", cm.GetName())
	}
	mi := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == d.Spec.Template.Spec.Volumes[vi].Name && m.ReadOnly })
	if mi < 0 {
		t.Fatalf("the ConfigMap's volume is not mounted read-only: %+v", c.VolumeMounts)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alert.tmpl"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(c.Args)
	found := false
	for i, a := range args {
		if file, ok := strings.CutPrefix(a, "--alert-template="); ok {
			if file != c.VolumeMounts[mi].MountPath+"/alert.tmpl" {
				t.Fatalf("argument %q is not alert.tmpl of the mount %s", a, c.VolumeMounts[mi].MountPath)
			}
			args[i], found = "--alert-template="+filepath.Join(dir, "alert.tmpl"), true
		}
	}
	if !found {
		t.Fatalf("no --alert-template in %q", c.Args)
	}
	_, cfg, err := inproc.ParseFlags(args, envLookup(objs, d, c))
	if err != nil {
		t.Fatalf("ripple rejects the rendered arguments and template: %v", err)
	}
	if cfg.Alert.Template == nil || cfg.Alert.Template.Cluster != "prod-eu" {
		t.Errorf("alert %+v: want the template, with the cluster prod-eu", cfg.Alert)
	}
	a := newApplier(t, api.Config)
	for _, o := range objs {
		if err := a.apply(t.Context(), o, true); err != nil {
			t.Errorf("the API server rejects the chart's object: %v", err)
		}
	}

	sum := d.Spec.Template.Annotations["checksum/alert-template"]
	_, other := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{values(`{{ .Message }}`)}})
	if d2, _ := rippleDeployment(t, other); sum == "" || d2.Spec.Template.Annotations["checksum/alert-template"] == sum {
		t.Errorf("checksum/alert-template %q does not change with the template", sum)
	}

	_, none := render(t, helmchart.Release{Name: relName, Namespace: relNS})
	d3, c3 := rippleDeployment(t, none)
	if slices.ContainsFunc(c3.Args, func(a string) bool { return strings.HasPrefix(a, "--alert-") }) || d3.Spec.Template.Annotations["checksum/alert-template"] != "" {
		t.Errorf("without ripple.alertTemplate: args %q, annotations %v", c3.Args, d3.Spec.Template.Annotations)
	}
	for _, o := range find(none, "ConfigMap") {
		if strings.HasSuffix(o.GetName(), "-alert-template") {
			t.Errorf("without ripple.alertTemplate: ConfigMap %s", o.GetName())
		}
	}
}
