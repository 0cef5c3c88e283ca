package integration

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
)

// The README's table of features by minor, where the API server decides:
// the in-place method resizes through pods/resize, which 1.33 and later
// serve. Below that, the API server answers a resize with a 404 that names
// no object, which Ripple takes for "not served" and refuses the pod with
// the minor it needs (internal/controller's unserved, unit-tested on this
// answer); from 1.33 the resize is made. `make test` runs this on 1.37,
// `make test-integration-oldest` on 1.30.
func TestInPlaceResizeByMinor(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(api.Config)
	minor := serverMinor(t, cs)
	ns := kit.NewNamespace(t, cs, "it-", nil)
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "registry.invalid/web:1",
			Resources:    corev1.ResourceRequirements{Requests: cpu, Limits: cpu},
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}},
		}}},
	}
	if minor < 33 {
		pod.Spec.Containers[0].ResizePolicy = nil // not a field of the API yet
	}
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"11m"},"limits":{"cpu":"11m"}}}]}}`)
	_, err := cs.CoreV1().Pods(ns).Patch(t.Context(), "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
	var st apierrors.APIStatus
	switch {
	case minor < 33:
		if !apierrors.IsNotFound(err) || !errors.As(err, &st) || (st.Status().Details != nil && st.Status().Details.Name != "") {
			t.Errorf("Kubernetes 1.%d: a resize answered %v, want a 404 naming no object (pods/resize not served)", minor, err)
		}
	case err != nil:
		t.Errorf("Kubernetes 1.%d: the resize: %v", minor, err)
	}
	// A pod that is gone is a 404 too, but one that names it: Ripple tells
	// the two apart by that name.
	_, err = cs.CoreV1().Pods(ns).Patch(t.Context(), "gone", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
	if minor >= 33 && (!apierrors.IsNotFound(err) || !errors.As(err, &st) || st.Status().Details == nil || st.Status().Details.Name != "gone") {
		t.Errorf("Kubernetes 1.%d: resizing a pod that does not exist answered %v, want a 404 naming it", minor, err)
	}
	t.Logf("Kubernetes 1.%d: pods/resize served: %t", minor, minor >= 33)
}

// serverMinor is the API server's minor version (37 for 1.37).
func serverMinor(t *testing.T, cs kubernetes.Interface) int {
	t.Helper()
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	minor, err := strconv.Atoi(strings.TrimSuffix(v.Minor, "+"))
	if err != nil {
		t.Fatalf("the server's minor %q: %v", v.Minor, err)
	}
	return minor
}
