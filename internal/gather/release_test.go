package gather

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A workload's Helm release is pending when its newest release record,
// in the workload's own namespace, has a pending-* status.
func TestPendingRelease(t *testing.T) {
	record := func(ns, release string, version int, status string) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, version),
			Labels: map[string]string{"owner": "helm", "name": release, "version": fmt.Sprint(version), "status": status}}}
	}
	deploy := func(release, releaseNS string) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
			Annotations: map[string]string{helmReleaseName: release, helmReleaseNamespace: releaseNS}}}
	}
	for _, tc := range []struct {
		name    string
		obj     client.Object
		records []client.Object
		want    string
	}{
		{"an upgrade in progress", deploy("web", "shop"), []client.Object{record("shop", "web", 9, "superseded"), record("shop", "web", 10, "pending-upgrade")}, "web (pending-upgrade)"},
		{"deployed: the newest record decides", deploy("web", "shop"), []client.Object{record("shop", "web", 9, "pending-upgrade"), record("shop", "web", 10, "deployed")}, ""},
		{"another release's record", deploy("web", "shop"), []client.Object{record("shop", "api", 2, "pending-install")}, ""},
		{"a release of another namespace is not read", deploy("web", "other"), []client.Object{record("other", "web", 2, "pending-upgrade")}, ""},
		{"no release", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// By label, as explain reads the API server; by the index, as
			// the controller reads its cache.
			byLabel := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tc.records...).Build()
			byIndex := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tc.records...).
				WithIndex(&corev1.Secret{}, ReleaseIndex, ReleaseIndexValue).Build()
			if got := PendingRelease(t.Context(), byLabel, tc.obj, false); got != tc.want {
				t.Errorf("PendingRelease by label = %q, want %q", got, tc.want)
			}
			if got := PendingRelease(t.Context(), byIndex, tc.obj, true); got != tc.want {
				t.Errorf("PendingRelease by index = %q, want %q", got, tc.want)
			}
		})
	}
}
