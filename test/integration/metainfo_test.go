package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// With RELOADER_NAMESPACE set, the leader publishes Reloader's
// reloader-meta-info ConfigMap (a standby does not), with Reloader's keys
// and documents; the webhook URL, which may hold a token, is not shown.
func TestMetaInfoConfigMapFromTheLeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.environ = map[string]string{"RELOADER_NAMESPACE": e.ns, "RELOADER_DEPLOYMENT_NAME": "ripple"}
	// Another replica holds the Lease: this one is a standby.
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "meta-lock", Namespace: e.ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](3600), RenewTime: &now, AcquireTime: &now},
	}
	if err := e.c.Create(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	e.start(t, "--leader-elect", "--leader-election-namespace="+e.ns, "--leader-election-id=meta-lock",
		"--reload-strategy=annotations", "--webhook-url=https://hooks.example/secret-token")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reloader-meta-info", Namespace: e.ns}}
	time.Sleep(negativeWindow)
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); !apierrors.IsNotFound(err) {
		t.Fatalf("a standby published the meta-info ConfigMap (err %v)", err)
	}

	if err := e.c.Delete(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(cm), cm)
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("waiting for the leader to publish the meta-info ConfigMap: %v", err)
	}
	if cm.Labels["reloader.stakater.com/meta-info"] != "reloader" {
		t.Errorf("labels %v, want reloader.stakater.com/meta-info=reloader", cm.Labels)
	}
	var opts map[string]any
	if err := json.Unmarshal([]byte(cm.Data["reloaderOptions"]), &opts); err != nil {
		t.Fatalf("reloaderOptions: %v", err)
	}
	for k, want := range map[string]any{
		"reloadStrategy":         "annotations",
		"reloaderAutoAnnotation": "reloader.stakater.com/auto",
		"webhookUrl":             "(set)",
		"namespacesToIgnore":     []any{},
		"shardCount":             1,
	} {
		if got := opts[k]; !jsonEqual(got, want) {
			t.Errorf("reloaderOptions.%s = %v, want %v", k, got, want)
		}
	}
	var dep metav1.ObjectMeta
	if err := json.Unmarshal([]byte(cm.Data["deploymentInfo"]), &dep); err != nil || dep.Name != "ripple" || dep.Namespace != e.ns {
		t.Errorf("deploymentInfo = %s (%v), want name ripple in %s", cm.Data["deploymentInfo"], err, e.ns)
	}
	var build map[string]any
	if err := json.Unmarshal([]byte(cm.Data["buildInfo"]), &build); err != nil || build["goVersion"] == "" || build["releaseVersion"] == nil {
		t.Errorf("buildInfo = %s (%v)", cm.Data["buildInfo"], err)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
