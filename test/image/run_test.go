package image

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
)

// Reloader's names: the auto annotation, and the env var the env-vars
// strategy adds for a ConfigMap named app-config.
const (
	autoAnnotation = "reloader.stakater.com/auto"
	configEnv      = "STAKATER_APP_CONFIG_CONFIGMAP"
	// appliedAnnotation is where Ripple records the baseline it adopted.
	appliedAnnotation = "ripple.dev/applied"
)

// TestImageBinaryReloadsDeployment runs the amd64 image's /ripple, the file
// a container runtime would start, against the local cluster: it reports
// the release version, and a ConfigMap change rolls the Deployment that
// uses it.
func TestImageBinaryReloadsDeployment(t *testing.T) {
	t.Parallel()
	rel := readRelease(t)
	idx, _ := imageIndex(t, imageDirs[0])
	bin := extractBinary(t, platformImages(t, idx)["linux/amd64"])

	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ripple "+rel.version {
		t.Fatalf("ripple version: %q (%v), want \"ripple %s\"", out, err, rel.version)
	}

	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := kit.NewNamespace(t, cs, "image-", nil)
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
		Data:       map[string]string{"key": "v1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	_, err = cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{autoAnnotation: "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "example.com/web:1",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name},
					}}},
				}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	startRipple(t, bin, "--kubeconfig="+kc.Kubeconfig, "--namespaces="+ns,
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	waitFor(t, "Ripple's baseline on the Deployment", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Annotations[appliedAnnotation] != "", err
	})

	cm.Data["key"] = "v2"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new ReplicaSet whose pods carry "+configEnv, func(ctx context.Context) (bool, error) {
		rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		rolled := false
		for _, rs := range rss.Items {
			for _, e := range rs.Spec.Template.Spec.Containers[0].Env {
				rolled = rolled || (e.Name == configEnv && e.Value != "")
			}
		}
		// The first ReplicaSet and the one the reload made.
		return rolled && len(rss.Items) == 2, nil
	})
}

// startRipple runs the binary until the test ends, then stops it with
// SIGTERM and requires a clean exit. It waits until Ripple's controllers
// run their workers (after the caches synced).
func startRipple(t *testing.T, bin string, args ...string) {
	t.Helper()
	out := &kit.LogBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	p, err := kit.StartProcess(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.Stop(10 * time.Second) {
			t.Error("Ripple did not exit within 10s of SIGTERM")
		} else if err := p.Err(); err != nil {
			t.Errorf("Ripple did not exit cleanly on SIGTERM: %v", err)
		}
		if t.Failed() {
			t.Logf("Ripple's output:\n%s", out.String())
		}
	})
	waitFor(t, "Ripple's controllers", func(context.Context) (bool, error) {
		return strings.Contains(out.String(), "Starting workers"), nil
	})
}

// waitFor polls cond until it holds, failing the test after two minutes.
func waitFor(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
