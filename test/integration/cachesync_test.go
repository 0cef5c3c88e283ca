package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ripple-dev/ripple/hack/kit"
)

// A Ripple binary whose caches cannot sync (its RBAC forbids listing
// Secrets) exits with an error naming secrets once --cache-sync-timeout
// has passed, instead of waiting for ever; and on SIGTERM before its caches
// synced it stops at once and cleanly.
func TestCacheSyncTimeout(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("RIPPLE_BINARY")
	if bin == "" {
		t.Fatal("RIPPLE_BINARY is not set: `make build`, then RIPPLE_BINARY=$PWD/bin/ripple go test ./test/integration/")
	}
	e := newEnv(t)
	// Everything Ripple needs in its namespace but listing Secrets.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripple"}, Rules: append([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
	}, rippleRules[1:]...)}
	if _, err := e.cs.RbacV1().Roles(e.ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.RbacV1().RoleBindings(e.ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ripple"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ripple"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: e.ns, Name: "ripple"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := serviceAccountKubeconfig(t, e.ns, "ripple")
	args := []string{"--kubeconfig=" + kubeconfig, "--namespaces=" + e.ns, "--metrics-bind-address=0", "--health-probe-bind-address=0"}

	t.Run("bound", func(t *testing.T) {
		t.Parallel()
		const bound = 3 * time.Second
		p, out := startBinary(t, bin, append(args, "--cache-sync-timeout="+bound.String())...)
		began := time.Now()
		select {
		case <-p.Done():
		case <-time.After(bound + 30*time.Second):
			t.Fatalf("ripple still runs %s after its cache sync timeout of %s", time.Since(began), bound)
		}
		took := time.Since(began)
		var exit *exec.ExitError
		if !errors.As(p.Err(), &exit) || exit.ExitCode() != 1 {
			t.Errorf("ripple exited with %v, want exit status 1", p.Err())
		}
		if took < bound {
			t.Errorf("ripple exited after %s, before its cache sync timeout of %s", took, bound)
		}
		stopped := out.Lines("ripple stopped")
		if len(stopped) != 1 || !strings.Contains(stopped[0], "secrets") || !strings.Contains(stopped[0], "--cache-sync-timeout") {
			t.Errorf("ripple's last error %q does not name secrets and the flag", stopped)
		}
		t.Logf("exited after %s: %s", took, strings.Join(stopped, ""))
	})

	t.Run("SIGTERM", func(t *testing.T) {
		t.Parallel()
		p, out := startBinary(t, bin, args...)
		// Until the Secret informer has failed to list: the caches are
		// being waited for.
		for !strings.Contains(out.String(), "secrets is forbidden") {
			if p.Exited() {
				t.Fatalf("ripple exited early: %v", p.Err())
			}
			time.Sleep(50 * time.Millisecond)
		}
		began := time.Now()
		if killed := p.Stop(10 * time.Second); killed {
			t.Fatal("ripple did not stop within 10s of SIGTERM while its caches were not synced")
		}
		t.Logf("stopped %s after SIGTERM: %v", time.Since(began), p.Err())
		if p.Err() != nil {
			t.Errorf("ripple stopped on SIGTERM with %v, want a clean exit", p.Err())
		}
	})
}

// startBinary runs the Ripple binary; it is killed when the test ends.
func startBinary(t *testing.T, bin string, args ...string) (*kit.Process, *kit.LogBuffer) {
	t.Helper()
	out := &kit.LogBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	p, err := kit.StartProcess(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("ripple's output:\n%s", out.String())
		}
	})
	return p, out
}

// serviceAccountKubeconfig writes a kubeconfig in which the admin acts as
// the ServiceAccount namespace/name, as api.ServiceAccountConfig does.
func serviceAccountKubeconfig(t *testing.T, namespace, name string) string {
	t.Helper()
	rc := api.ServiceAccountConfig(namespace, name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["api"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData, Token: rc.BearerToken,
		Impersonate: rc.Impersonate.UserName, ImpersonateGroups: rc.Impersonate.Groups,
	}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "api", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
