package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// freeAddr returns a free 127.0.0.1 address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func get(ctx context.Context, url string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Health sits beside the metrics on one port, as in Reloader: /live and
// /healthz answer at once, /readyz only once the caches have synced (here
// slowed down by a missing permission), and pprof is served only when
// enabled, and never on that port.
func TestHealthAndPprof(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Everything Ripple needs but listing Secrets: its caches cannot sync.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripple"}, Rules: rippleRules[1:]}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}})
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
	e.rc = api.ServiceAccountConfig(e.ns, "ripple")
	metrics, pprof := freeAddr(t), freeAddr(t)
	e.start(t, "--metrics-bind-address="+metrics, "--enable-pprof", "--pprof-addr="+pprof)

	ctx := t.Context()
	// Liveness answers as soon as the server listens, long before caches sync.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		code, _ := get(ctx, "http://"+metrics+"/live")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatal("/live never answered")
	}
	for _, path := range []string{"/live", "/healthz"} {
		if code, body := get(ctx, "http://"+metrics+path); code != http.StatusOK || body != "alive" {
			t.Errorf("%s: %d %q, want 200 alive", path, code, body)
		}
	}
	// Not ready while the Secret informer cannot list.
	time.Sleep(time.Second)
	if code, _ := get(ctx, "http://"+metrics+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before the caches synced: %d, want 503", code)
	}
	role.Rules = rippleRules
	if _, err := e.cs.RbacV1().Roles(e.ns).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		code, _ := get(ctx, "http://"+metrics+"/readyz")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatal("/readyz never became ready once Ripple could list Secrets")
	}
	if code, _ := get(ctx, "http://"+metrics+"/metrics"); code != http.StatusOK {
		t.Errorf("/metrics: %d", code)
	}
	if code, _ := get(ctx, "http://"+metrics+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof on the metrics port: %d, want 404", code)
	}
	if code, _ := get(ctx, "http://"+pprof+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("pprof on --pprof-addr: %d, want 200", code)
	}
}

// Without --enable-pprof nothing serves pprof.
func TestPprofOffByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	metrics := freeAddr(t)
	e.run(t, "--metrics-bind-address="+metrics)
	if code, _ := get(t.Context(), "http://"+metrics+"/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("pprof on the metrics port: %d, want 404", code)
	}
}
