package kubelet

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/hack/kubeletnode"
)

// TestInPlaceNeedsResizeRight: the in-place method needs "patch
// pods/resize" (the chart grants it with ripple.restartMethods.inPlace,
// pinned by test/chart's TestRestartMethodRules). A Ripple that may do
// everything else restarts nothing and says, in a RestartFailed Warning,
// which right it lacks and which chart value grants it.
func TestInPlaceNeedsResizeRight(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-rbac")
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, "kubelet-rbac-", nil)
	ctx := t.Context()

	cm := createConfigMap(t, cs, ns, "settings", map[string]string{"greeting": "hello-old"})
	createDeployment(t, cs, ns, "app", 1, nil, inPlaceSpec(node.Name, cm.Name, corev1.RestartContainer))
	before := waitFleetReady(t, cs, ns, "app", 1)
	r := startRipple(t, ns, allButResize(t, cs, "ripple-no-resize"))
	w := watchPods(t, cs, ns)

	cm.Data["greeting"] = "hello-new"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var notes []string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, eventTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = kit.EventNotes(ctx, cs, ns, kit.EventMatch{Kind: "Deployment", Name: "app", Reason: "RestartFailed", Type: corev1.EventTypeWarning})
		return len(notes) > 0, err
	})
	if err != nil {
		t.Fatalf("no RestartFailed Warning on the Deployment within %v: %v", eventTimeout, err)
	}
	if n := notes[0]; !strings.Contains(n, "pods/resize") || !strings.Contains(n, "ripple.restartMethods.inPlace") {
		t.Errorf("the RestartFailed Warning says %q: expected the right (patch pods/resize) and the chart value that grants it (ripple.restartMethods.inPlace)", n)
	}
	r.Stop()
	w.sync()
	s := w.snapshot()
	if len(s.added) > 0 || len(s.deleted) > 0 || s.maxDisrupted > 0 {
		t.Errorf("pods were created (%v), deleted (%v) or resized (%d) by a Ripple that may not resize", s.added, s.deleted, s.maxDisrupted)
	}
	for _, p := range listApp(t, cs, ns, "app") {
		if !before[p.UID] || restartCount(&p) != 0 || cpuOf(&p) != inPlaceRequests {
			t.Errorf("pod %s was replaced, restarted (%d) or resized (cpu %s)", p.Name, restartCount(&p), cpuOf(&p))
		}
	}
}

// TestReloadActionNeedsPodList: a reload action needs "list pods" (the
// chart grants it with ripple.restartMethods.reloadAction, pinned by
// test/chart's TestRestartMethodRules). A Ripple that may do everything
// else, pods included but for list, calls no pod and says, in a
// RestartFailed Warning, which right it lacks and which chart value
// grants it.
func TestReloadActionNeedsPodList(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-rbac-action")
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, "kubelet-rbac-action-", nil)
	port := freePort(t)
	cm := createConfigMap(t, cs, ns, "settings", map[string]string{confKey: oldConf})
	createActionDeployment(t, cs, ns, "app", 1, map[string]string{actionKey: fmt.Sprintf(":%d%s", port, actionPath), delayKey: "0s"},
		actionSpec(node.Name, cm.Name))
	waitFleetReady(t, cs, ns, "app", 1)
	e := newEndpoints(t, node, 0)
	for _, p := range listApp(t, cs, ns, "app") {
		e.serve(p.Status.PodIP, port, "", func(int) int { return http.StatusOK })
	}
	startRipple(t, ns, allBut(t, cs, "ripple-no-pod-list", "pods", "list"))

	cm.Data[confKey] = newConf
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	notes := waitEvents(t, cs, ns, "app", "RestartFailed", 1)
	if n := notes[0]; !strings.Contains(n, "may not list pods") || !strings.Contains(n, "ripple.restartMethods.reloadAction") {
		t.Errorf("the RestartFailed Warning says %q: expected the right (list pods) and the chart value that grants it (ripple.restartMethods.reloadAction)", n)
	}
	if calls, _ := e.snapshot(); len(calls) > 0 {
		t.Errorf("a Ripple that may not list pods called them: %v", calls)
	}
}

// allButResize returns a kubeconfig for user, who may do anything to
// every resource the API server serves but resize pods, and removes the
// grant when the test ends.
func allButResize(t *testing.T, cs kubernetes.Interface, user string) string {
	t.Helper()
	return allBut(t, cs, user, "pods/resize")
}

// allBut returns a kubeconfig for user, who may do anything to every
// resource the API server serves but the verbs of the core resource left
// (none named: any verb), and removes the grant when the test ends. RBAC
// grants and never denies: "everything else" is each resource discovery
// lists, with left's other verbs.
func allBut(t *testing.T, cs kubernetes.Interface, user, left string, verbs ...string) string {
	t.Helper()
	ctx := t.Context()
	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatal(err)
	}
	var core, groups []string
	served := false
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		if gv.Group != "" {
			if !slices.Contains(groups, gv.Group) {
				groups = append(groups, gv.Group)
			}
			continue
		}
		for _, r := range l.APIResources {
			switch {
			case r.Name == left:
				served = true
			case !slices.Contains(core, r.Name):
				core = append(core, r.Name)
			}
		}
	}
	if !served {
		t.Fatalf("discovery lists core resources %v and no %s", core, left)
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: core, Verbs: []string{"*"}},
		{APIGroups: groups, Resources: []string{"*"}, Verbs: []string{"*"}},
		{NonResourceURLs: []string{"*"}, Verbs: []string{"get"}},
	}
	if len(verbs) > 0 {
		others := slices.DeleteFunc([]string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"},
			func(v string) bool { return slices.Contains(verbs, v) })
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{left}, Verbs: others})
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoles().Delete(context.WithoutCancel(ctx), user, metav1.DeleteOptions{})
	})
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), user, metav1.DeleteOptions{})
	})
	kubeconfig, err := kc.UserKubeconfig(user, "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
