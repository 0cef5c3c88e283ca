package kit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NewNamespace creates a namespace of the test's own, named prefix plus a
// random suffix and labelled labels, and deletes it when the test ends.
func NewNamespace(t testing.TB, cs kubernetes.Interface, prefix string, labels map[string]string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The test's context is cancelled before cleanups run.
	ctx := context.WithoutCancel(t.Context())
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}
