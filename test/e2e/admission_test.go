package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/admission"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/reason"
)

// admissionFleet Deployments read the canaried ConfigMap of the admission
// tests.
const admissionFleet = 12

// rollsCount reads the count of a warning "ripple: this change rolls N
// workloads".
var rollsCount = regexp.MustCompile(`ripple: this change rolls (\d+) workloads? in (\S+)`)

// With the webhook registered as the chart registers it, `kubectl apply
// --dry-run=server` of a change to a ConfigMap read by 12 Deployments
// prints a warning naming the count and the canary, and changes nothing;
// the real apply prints the same, and the number warned is the number of
// Reloaded Events that follow, one per Deployment. No warning holds the
// config's value or its digest, and a tenant's warning names only its own
// namespace, though a namespace beside it has a config of the same name
// read by workloads of its own. Then the serving certificate is replaced
// on disk (a new CA): Ripple serves the new one without a restart.
func TestAdmissionWarnsAtApply(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns, other := newNamespace(t, cs), newNamespace(t, cs)
	// The canary's own progress deadline is the default: a canary slow
	// to start on a busy machine must not halt the change counted here.
	createNamedFleet(t, cs, ns, "d", admissionFleet)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), canaryConfig, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Annotations = map[string]string{"ripple.dev/canary": "1", "ripple.dev/canary-bake": "3s"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	createNamedFleet(t, cs, other, "neighbour", 2)
	certs := newServingCert(t, t.TempDir())
	addr := freeAddr(t)
	r := newRipple(t, ns, "--namespaces="+other, "--admission-bind-address="+addr, "--admission-cert-dir="+certs.dir)
	r.Start()
	registerAdmission(t, cs, "https://"+addr+admission.Path, certs.ca, ns, other)
	waitFleetBaseline(t, cs, ns, "", admissionFleet)

	const value = "admission-e2e-value-5b1d"
	path := configFile(t, ns, value)
	dry := applyFile(t, path, "--dry-run=server")
	t.Logf("kubectl apply --dry-run=server:\n%s", dry)
	warned, warnedNS := warnedRolls(t, dry)
	if warned != admissionFleet || warnedNS != ns || !strings.Contains(dry, "canary d-00 first, bake 3s") {
		t.Fatalf("kubectl apply --dry-run=server printed:\n%s\nwant a warning that %d workloads in %s roll, canary d-00 first", dry, admissionFleet, ns)
	}
	cm, err = cs.CoreV1().ConfigMaps(ns).Get(t.Context(), canaryConfig, metav1.GetOptions{})
	if err != nil || cm.Data["value"] != "v1" {
		t.Fatalf("after the dry run the ConfigMap holds %v (%v), want v1", cm.Data, err)
	}

	out := applyFile(t, path)
	if n, _ := warnedRolls(t, out); n != warned {
		t.Fatalf("kubectl apply printed:\n%s\nwant the dry run's count, %d", out, warned)
	}
	if cm, err = cs.CoreV1().ConfigMaps(ns).Get(t.Context(), canaryConfig, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{value, digest.ConfigMap(cm)} {
		if strings.Contains(dry+out, leak) {
			t.Errorf("kubectl's output holds %q:\n%s%s", leak, dry, out)
		}
	}
	if strings.Contains(dry+out, other) || strings.Contains(dry+out, "neighbour") {
		t.Errorf("the warning names the other namespace or its workloads:\n%s", out)
	}
	waitFor(t, "a Reloaded Event on every Deployment", func(ctx context.Context) (bool, error) {
		return len(reloadedDeployments(t, cs, ns)) == admissionFleet, nil
	})
	waitFleetBaseline(t, cs, ns, "", admissionFleet)
	total := 0
	for name, n := range reloadedDeployments(t, cs, ns) {
		total += n
		if n != 1 {
			t.Errorf("Deployment %s has %d Reloaded Events, want 1", name, n)
		}
	}
	if total != warned {
		t.Errorf("%d Reloaded Events followed a warning of %d", total, warned)
	}

	// The certificate changes on disk: Ripple serves the new one.
	renewed := newServingCert(t, certs.dir)
	waitFor(t, "Ripple to serve the new certificate", func(context.Context) (bool, error) {
		return servesCert(addr, renewed.ca), nil
	})
	registerAdmission(t, cs, "https://"+addr+admission.Path, renewed.ca, ns, other)
	if out := applyFile(t, configFile(t, ns, value+"-3")); !strings.Contains(out, "ripple: this change rolls") {
		t.Errorf("after the certificate's renewal kubectl apply printed:\n%s\nwant the warning", out)
	}
}

// The guard: with --admission-max-rollouts=2 a change that rolls 3 is
// denied, with a message naming the limit and the acknowledgement, and
// nothing changes; the acknowledged change passes and rolls. With Ripple
// stopped, or a webhook that answers slower than its timeout, every write
// succeeds within the timeout.
func TestAdmissionGuardAndOutage(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	createNamedFleet(t, cs, ns, "g", 3)
	certs := newServingCert(t, t.TempDir())
	addr := freeAddr(t)
	r := newRipple(t, ns, "--admission-bind-address="+addr, "--admission-cert-dir="+certs.dir, "--admission-max-rollouts=2")
	r.Start()
	registerAdmission(t, cs, "https://"+addr+admission.Path, certs.ca, ns)
	waitFleetBaseline(t, cs, ns, "", 3)

	out, err := kubectlOut(t, "apply", "-f", configFile(t, ns, "v2"))
	want := `ripple: this change rolls 3 workloads in ` + ns + `, above the limit of 2 (--admission-max-rollouts); to apply it, annotate the ConfigMap ripple.dev/ack-rollouts: "3"`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("kubectl apply above the limit: %v\n%s\nwant a denial: %s", err, out, want)
	}
	if cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), canaryConfig, metav1.GetOptions{}); err != nil || cm.Data["value"] != "v1" {
		t.Fatalf("after the denial the ConfigMap holds %v (%v), want v1", cm.Data, err)
	}
	acked := configFile(t, ns, "v2", "ripple.dev/ack-rollouts", "3")
	if out, err := kubectlOut(t, "apply", "-f", acked); err != nil {
		t.Fatalf("the acknowledged change: %v\n%s", err, out)
	}
	waitFor(t, "a Reloaded Event on every Deployment", func(ctx context.Context) (bool, error) {
		return len(reloadedDeployments(t, cs, ns)) == 3, nil
	})

	r.Stop()
	timedApply(t, configFile(t, ns, "v3"), "with Ripple stopped")
	registerAdmission(t, cs, "https://"+slowWebhook(t, certs)+admission.Path, certs.ca, ns)
	timedApply(t, configFile(t, ns, "v4"), "with a webhook slower than its timeout")
}

// timedApply applies path, which must succeed within the webhook's
// timeout (2 s) and some slack for kubectl itself.
func timedApply(t *testing.T, path, when string) {
	t.Helper()
	start := time.Now()
	if out, err := kubectlOut(t, "apply", "-f", path); err != nil {
		t.Fatalf("%s: kubectl apply: %v\n%s", when, err, out)
	}
	if took := time.Since(start); took > 2*time.Second+5*time.Second {
		t.Errorf("%s: kubectl apply took %s, want the webhook's 2 s timeout at most, and kubectl's own time", when, took)
	}
}

// slowWebhook serves, with certs, a webhook that answers after 10 s: far
// past its 2 s timeout.
func slowWebhook(t *testing.T, certs servingCert) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(certs.dir, "tls.crt"), filepath.Join(certs.dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// createNamedFleet makes the ConfigMap canaryConfig ("shared", value v1,
// not canaried) and n auto-reloaded Deployments <prefix>-NN reading it.
func createNamedFleet(t *testing.T, cs kubernetes.Interface, ns, prefix string, n int) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: canaryConfig}, Data: map[string]string{"value": "v1"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: auto()},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: spec{configMaps: []string{canaryConfig}}.template(name),
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// configFile writes the manifest of ConfigMap canaryConfig in ns with
// value, keeping its canary's annotations, if any, and the annotations
// given as pairs.
func configFile(t *testing.T, ns, value string, ann ...string) string {
	t.Helper()
	cm, err := kubernetes.NewForConfigOrDie(kc.Config).CoreV1().ConfigMaps(ns).Get(t.Context(), canaryConfig, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: canaryConfig, Namespace: ns, Annotations: map[string]string{}}, Data: map[string]string{"value": value}}
	for _, k := range []string{"ripple.dev/canary", "ripple.dev/canary-bake"} {
		if v, ok := cm.Annotations[k]; ok {
			out.Annotations[k] = v
		}
	}
	for i := 0; i+1 < len(ann); i += 2 {
		out.Annotations[ann[i]] = ann[i+1]
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectlOut runs the pinned kubectl on the cluster; its output is stdout
// and stderr together, where it prints the API server's warnings.
func kubectlOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := cluster.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig=" + kc.Kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// applyFile applies path, which must succeed, and returns kubectl's
// output.
func applyFile(t *testing.T, path string, args ...string) string {
	t.Helper()
	out, err := kubectlOut(t, append([]string{"apply", "-f", path}, args...)...)
	if err != nil {
		t.Fatalf("kubectl apply -f %s %v: %v\n%s", path, args, err, out)
	}
	return out
}

// warnedRolls reads the count and namespace of the one ripple warning in
// kubectl's output.
func warnedRolls(t *testing.T, out string) (int, string) {
	t.Helper()
	m := rollsCount.FindAllStringSubmatch(out, -1)
	if len(m) != 1 {
		t.Fatalf("kubectl printed %d ripple warnings, want 1:\n%s", len(m), out)
	}
	n, _ := strconv.Atoi(m[0][1]) // the expression's digits
	return n, m[0][2]
}

// reloadedDeployments counts the Reloaded Events of each Deployment of ns
// that has one.
func reloadedDeployments(t *testing.T, cs kubernetes.Interface, ns string) map[string]int {
	t.Helper()
	ds, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range ds.Items {
		if n := len(events(t.Context(), cs, ns, "Deployment", d.Name, reason.Reloaded)); n > 0 {
			out[d.Name] = n
		}
	}
	return out
}

// registerAdmission registers (or updates) the webhook at url as the
// chart does, failurePolicy Ignore and a timeout of 2 s, for the ConfigMaps and Secrets of the
// namespaces given only: the cluster is shared by the tests. It is
// removed when the test ends.
func registerAdmission(t *testing.T, cs kubernetes.Interface, url string, ca []byte, namespaces ...string) {
	t.Helper()
	name := "ripple-" + namespaces[0]
	timeout := int32(2) // the chart's, at most
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "configs.ripple.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces}}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"configmaps", "secrets"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}},
		}},
	}
	api := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cur, err := api.Get(t.Context(), name, metav1.GetOptions{})
	if err == nil {
		cfg.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(t.Context(), cfg, metav1.UpdateOptions{})
	} else {
		_, err = api.Create(t.Context(), cfg, metav1.CreateOptions{})
		ctx := context.WithoutCancel(t.Context()) // cancelled before cleanups run
		t.Cleanup(func() { _ = api.Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

// servingCert is a serving certificate for 127.0.0.1, its own CA, written
// as tls.crt and tls.key into dir.
type servingCert struct {
	dir string
	ca  []byte
}

// newServingCert writes a new certificate into dir (kit.ServingCert).
func newServingCert(t *testing.T, dir string) servingCert {
	t.Helper()
	ca, err := kit.ServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	return servingCert{dir: dir, ca: ca}
}

// servesCert reports whether the server at addr presents a certificate
// that ca verifies.
func servesCert(addr string, ca []byte) bool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	d := &net.Dialer{Timeout: time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
