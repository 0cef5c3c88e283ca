package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
)

// The annotations a tenant writes.
const (
	cmReload     = "configmap.reloader.stakater.com/reload"
	secretReload = "secret.reloader.stakater.com/reload"
	cmExclude    = "configmaps.exclude.reloader.stakater.com/reload"
	reloadOnKeys = "ripple.dev/reload-on-keys"
	pendingJob   = "ripple.dev/pending-job"
	recreateJob  = "ripple.dev/recreate-job"
	auto         = "reloader.stakater.com/auto"
)

// clientset is a client of cfg fast enough to plant hundreds of objects.
func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// editor returns a client of a ServiceAccount of ns bound to the built-in
// `edit` ClusterRole in ns and in also only: a tenant, as a platform team
// makes one.
func editor(t *testing.T, admin kubernetes.Interface, ns string, also ...string) kubernetes.Interface {
	t.Helper()
	mallory := serviceAccount(t, admin, ns, "mallory")
	for _, in := range append([]string{ns}, also...) {
		bind(t, admin, mallory, ns, "mallory", "edit", authorizationv1.ResourceAttributes{
			Namespace: in, Verb: "patch", Group: "batch", Resource: "cronjobs"})
	}
	return mallory
}

// viewer returns a client of a ServiceAccount of ns bound to the built-in
// `view` ClusterRole in ns: who may read its workloads and Events, not its
// Secrets.
func viewer(t *testing.T, admin kubernetes.Interface, ns string) kubernetes.Interface {
	t.Helper()
	v := serviceAccount(t, admin, ns, "viewer")
	bind(t, admin, v, ns, "viewer", "view", authorizationv1.ResourceAttributes{
		Namespace: ns, Verb: "list", Group: "apps", Resource: "deployments"})
	return v
}

// serviceAccount creates the ServiceAccount name in ns and returns a client
// of it.
func serviceAccount(t *testing.T, admin kubernetes.Interface, ns, name string) kubernetes.Interface {
	t.Helper()
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return clientset(t, kc.ServiceAccountConfig(ns, name))
}

// bind binds the ServiceAccount sa of ns, whose client is c, to the
// ClusterRole role in allowed's namespace, and waits until c is allowed
// what allowed names.
func bind(t *testing.T, admin, c kubernetes.Interface, ns, sa, role string, allowed authorizationv1.ResourceAttributes) {
	t.Helper()
	ctx := t.Context()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	if _, err := admin.RbacV1().RoleBindings(allowed.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer sees the binding through an informer: wait for it.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &allowed},
		}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("the %s role of %s/%s does not apply in %s: %v", role, ns, sa, allowed.Namespace, err)
	}
}

// podTemplate is a template of one container; its pods never run a
// process (kwok nodes).
func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
}

// deployment is a Deployment of replicas pods with the annotations ann.
func deployment(name string, replicas int32, ann map[string]string, tpl corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: tpl,
		},
	}
}

// items is a comma list of n items made by format from their index.
func items(n int, format string) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(out, ",")
}

func create[T any](t *testing.T, what string, f func(context.Context, T, metav1.CreateOptions) (T, error), obj T) T {
	t.Helper()
	got, err := f(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", what, err)
	}
	return got
}

// privileged is a pod template no policy on the tenant's CronJobs would
// allow: hostPID, privileged, another image.
func privileged() corev1.PodTemplateSpec {
	tpl := podTemplate("evil")
	tpl.Spec.HostPID = true
	tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	tpl.Spec.Containers[0].Image = "registry.invalid/evil:1"
	tpl.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	return tpl
}

// hostileJob is the Job a forged re-create record asks for: the
// privileged pod in kube-system.
func hostileJob() *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "pwn", Namespace: "kube-system"},
		Spec:       batchv1.JobSpec{Template: privileged()},
	}
}

// forgedRecord is a hand-made re-create record of hostileJob, in ns.
func forgedRecord(t *testing.T, ns string) *corev1.ConfigMap {
	t.Helper()
	b, err := json.Marshal(hostileJob())
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-system.pwn.recreate", Namespace: ns, Labels: map[string]string{recreateJob: "true"},
			Annotations: map[string]string{"ripple.dev/replaces-uid": "forged"}},
		Data:       map[string]string{"job.json": string(b)},
		BinaryData: map[string][]byte{"job.sealed": b},
	}
}

// cronJob is a CronJob that never fires by schedule, with ann.
func cronJob(name string, ann map[string]string) *batchv1.CronJob {
	tpl := podTemplate(name)
	tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
		Spec: batchv1.CronJobSpec{Schedule: kit.NeverSchedule,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tpl}}},
	}
}

// expectForbidden fails unless err is the API server's refusal.
func expectForbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("the tenant %s: %v, want Forbidden", what, err)
	}
}
