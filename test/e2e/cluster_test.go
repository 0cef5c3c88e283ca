package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

// The local cluster must be real: controllers create pods, kwok makes them
// Ready, and a template change rolls every pod over to the new revision.

func TestClusterRollsDeployment(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	d, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate("web"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 Ready pods of the first ReplicaSet", func(ctx context.Context) (bool, error) {
		return readyPods(ctx, cs, ns, "app=web") == 3, nil
	})
	first := replicaSets(t, cs, ns, d.UID)
	if len(first) != 1 {
		t.Fatalf("got %d ReplicaSets before the restart, want 1", len(first))
	}

	restart(t, cs, ns, "deployments", "web")

	waitFor(t, "a new ReplicaSet with 3 Ready pods and the old one at 0", func(ctx context.Context) (bool, error) {
		rss := replicaSets(t, cs, ns, d.UID)
		if len(rss) != 2 {
			return false, nil
		}
		for _, rs := range rss {
			old := rs.UID == first[0].UID
			if old && (rs.Status.Replicas != 0 || ptr.Deref(rs.Spec.Replicas, -1) != 0) {
				return false, nil
			}
			if !old && rs.Status.ReadyReplicas != 3 {
				return false, nil
			}
		}
		return readyPods(ctx, cs, ns, "app=web") == 3, nil
	})
}

func TestClusterRollsStatefulSet(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	_, err := cs.AppsV1().StatefulSets(ns).Create(t.Context(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](3),
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template:    podTemplate("db"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var firstRevision string
	waitFor(t, "3 Ready StatefulSet pods", func(ctx context.Context) (bool, error) {
		sts, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		firstRevision = sts.Status.CurrentRevision
		return sts.Status.ReadyReplicas == 3 && firstRevision != "", nil
	})

	restart(t, cs, ns, "statefulsets", "db")

	waitFor(t, "every StatefulSet pod on the new revision and Ready", func(ctx context.Context) (bool, error) {
		sts, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := sts.Status
		if st.UpdateRevision == firstRevision || st.CurrentRevision != st.UpdateRevision || st.UpdatedReplicas != 3 || st.ReadyReplicas != 3 {
			return false, nil
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Labels[appsv1.ControllerRevisionHashLabelKey] != st.UpdateRevision || !kit.PodReady(&p) {
				return false, nil
			}
		}
		return len(pods.Items) == 3, nil
	})
}

func TestClusterRollsDaemonSet(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	_, err := cs.AppsV1().DaemonSets(ns).Create(t.Context(), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: podTemplate("agent"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := len(kc.Nodes)
	waitFor(t, "a Ready DaemonSet pod on every fake node", func(ctx context.Context) (bool, error) {
		return readyPodNodes(ctx, cs, ns, "app=agent") == nodes, nil
	})
	before := podUIDs(t, cs, ns, "app=agent")

	restart(t, cs, ns, "daemonsets", "agent")

	waitFor(t, "every DaemonSet pod replaced and Ready on every node", func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if int(ds.Status.UpdatedNumberScheduled) != nodes || int(ds.Status.NumberReady) != nodes {
			return false, nil
		}
		for uid := range podUIDs(t, cs, ns, "app=agent") {
			if before[uid] {
				return false, nil
			}
		}
		return readyPodNodes(ctx, cs, ns, "app=agent") == nodes, nil
	})
}

func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: app, Image: "registry.invalid/" + app + ":1"}},
			// kwok fake nodes run nothing; this only keeps the pods on them.
			Tolerations: []corev1.Toleration{kit.KwokToleration},
		},
	}
}

// restart does what `kubectl rollout restart` does: a pod-template change.
func restart(t *testing.T, cs kubernetes.Interface, ns, resource, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"test.ripple.dev/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	err := cs.AppsV1().RESTClient().Patch(types.StrategicMergePatchType).
		Namespace(ns).Resource(resource).Name(name).Body([]byte(patch)).Do(t.Context()).Error()
	if err != nil {
		t.Fatalf("restarting %s %s: %v", resource, name, err)
	}
}

// Every process of the cluster binds to the loopback interface only.
func TestClusterListensOnLoopbackOnly(t *testing.T) {
	pids := cluster.Descendants()
	if len(pids) < 5 { // etcd, apiserver, controller-manager, scheduler, kwok
		t.Fatalf("found %d cluster processes, want at least 5", len(pids))
	}
	bad, err := cluster.NonLoopbackListeners(pids)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("cluster sockets outside 127.0.0.1: %v", bad)
	}
}
