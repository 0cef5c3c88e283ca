package hostile

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// drainAfter deletes namespace ns when the test ends and waits until it
// is gone, its pods deleted at once: the tier's tests share one control
// plane, and the next test must not run while it deletes thousands of
// Deployments or a tenant's large pods (its controllers then fall behind
// by tens of seconds).
func drainAfter(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	t.Cleanup(func() {
		now := int64(0)
		_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &now}, metav1.ListOptions{})
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		began := time.Now()
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Errorf("namespace %s was not gone within 3 minutes of the test: %v", ns, err)
			return
		}
		t.Logf("namespace %s deleted in %s", ns, time.Since(began).Round(100*time.Millisecond))
	})
}
