package app

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ripple-dev/ripple/internal/config"
)

// An informer's forbidden list or watch names the resource, where, and
// the rule to grant, not the Go type.
func TestForbiddenMessage(t *testing.T) {
	user := `User "system:serviceaccount:ops:ripple"`
	for _, c := range []struct {
		err  error
		want string
	}{
		{apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "",
			errors.New(user+` cannot list resource "configmaps" in API group "" at the cluster scope`)),
			`cannot list configmaps cluster-wide: Ripple's ServiceAccount needs get, list and watch on configmaps (API group "") through a ClusterRole`},
		{apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "",
			errors.New(user+` cannot watch resource "deployments" in API group "apps" in the namespace "shop"`)),
			`cannot watch deployments in namespace shop: Ripple's ServiceAccount needs get, list and watch on deployments (API group "apps") through a Role in namespace shop`},
		{apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "", errors.New("denied")),
			`cannot list jobs: Ripple's ServiceAccount needs get, list and watch on jobs (API group "batch") through a ClusterRole or Role`},
	} {
		// client-go wraps the list error as "failed to list *v1.ConfigMap: ...".
		got, ok := forbiddenMessage(errors.Join(errors.New("failed to list *v1.ConfigMap"), c.err))
		if !ok || !strings.HasPrefix(got, c.want) {
			t.Errorf("forbiddenMessage(%v) = %q, %v; want %q", c.err, got, ok, c.want)
		}
	}
	if _, ok := forbiddenMessage(apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")); ok {
		t.Error("a not-found error is not a forbidden one")
	}
}

// Without any client configuration the error says what to set.
func TestRestConfigSaysWhatToSet(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	_, err := restConfig(config.Config{})
	if err == nil || !strings.Contains(err.Error(), "set --kubeconfig or $KUBECONFIG") {
		t.Errorf("no configuration: %v, want an error that says to set --kubeconfig or $KUBECONFIG", err)
	}
	missing := filepath.Join(home, "nope")
	_, err = restConfig(config.Config{Kubeconfig: missing})
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig "+missing) {
		t.Errorf("a missing --kubeconfig: %v, want an error naming the flag and file", err)
	}
}
