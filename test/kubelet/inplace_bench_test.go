package kubelet

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/hack/kubeletnode"
)

// BenchmarkReloadInPlaceVsTemplate times, on the same 20-pod Deployment
// on a real kubelet, a ConfigMap change to the moment the last pod runs
// the new value (20 Ready pods, none terminating, whose running container
// the kubelet created with the new value), for the in-place method
// (max-unavailable 1, Ripple's default; 5, the Deployment's default 25%;
// 10, as many as its rolling update starts at once) and for the template
// method (the Deployment's rolling update, 25%
// surge and 25% unavailable). Each configuration runs on a kubelet node,
// a namespace and a Ripple of its own. Not part of make test:
//
//	make build && flock /tmp/ripple-cluster.lock env RIPPLE_TOOLS_DIR=$(bash hack/build-tools.sh | tail -n1) \
//	  RIPPLE_BINARY=$PWD/bin/ripple go test ./test/kubelet -run '^$' -bench BenchmarkReloadInPlaceVsTemplate -benchtime 1x -count 3
//
// A change per configuration and run (-benchtime 1x): a second change
// would restart each container again within seconds, which meets the
// kubelet's crash-loop back-off (docs/restart-methods.md) and times that,
// not the method. The end is polled every 100 ms.
func BenchmarkReloadInPlaceVsTemplate(b *testing.B) {
	for _, c := range []struct {
		name        string
		annotations map[string]string
	}{
		{"in-place/max-unavailable=1", nil},
		{"in-place/max-unavailable=5", map[string]string{"ripple.dev/max-unavailable": "5"}},
		// As many at once as the rolling update below starts: 5 surge
		// and 5 unavailable.
		{"in-place/max-unavailable=10", map[string]string{"ripple.dev/max-unavailable": "10"}},
		{"template", map[string]string{"ripple.dev/restart-method": "template"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				took := reloadOnce(b, fmt.Sprintf("bench-%d", i), c.annotations)
				b.ReportMetric(took.Seconds(), "s/reload")
			}
		})
	}
}

// reloadOnce sets up the Deployment on a node of its own, changes its
// ConfigMap and returns how long the last pod took to run the new value.
func reloadOnce(b *testing.B, name string, annotations map[string]string) time.Duration {
	b.Helper()
	node := kubeletnode.StartT(b, kc.API, "kubelet-"+name)
	cs, err := kubernetes.NewForConfig(kc.Config)
	if err != nil {
		b.Fatal(err)
	}
	ns := kit.NewNamespace(b, cs, "kubelet-"+name+"-", nil)
	ctx := b.Context()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"greeting": "hello-old"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	createDeployment(b, cs, ns, "app", replicas, annotations, inPlaceSpec(node.Name, cm.Name, corev1.RestartContainer))
	waitFleetReady(b, cs, ns, "app", replicas)
	startRipple(b, ns, "")

	cm.Data["greeting"] = "hello-new"
	b.StartTimer()
	start := time.Now()
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, inPlaceDone, false, func(ctx context.Context) (bool, error) {
		return allRunNew(ctx, cs, node, ns, "hello-new")
	})
	took := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatalf("the pods did not all run the new value within %v: %v", inPlaceDone, err)
	}
	return took
}

// allRunNew reports whether the Deployment app has replicas Ready pods,
// none terminating, each of whose running container the kubelet created
// with GREETING=value.
func allRunNew(ctx context.Context, cs kubernetes.Interface, node *kubeletnode.Node, ns, value string) (bool, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		return false, err
	}
	all, err := node.Containers()
	if err != nil {
		return false, err
	}
	// The value of each pod's container at each attempt.
	type key struct {
		uid     types.UID
		attempt uint32
	}
	greeting := map[key]string{}
	for _, c := range all {
		if c.Container == containerName {
			greeting[key{types.UID(c.PodUID), c.Attempt}], _ = c.Getenv("GREETING")
		}
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || !kit.PodReady(p) {
			continue
		}
		if rc := restartCount(p); rc >= 0 && greeting[key{p.UID, uint32(rc)}] == value {
			n++
		}
	}
	return n == replicas, nil
}
