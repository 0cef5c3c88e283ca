package history

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

func owned(obj metav1.Object, uid types.UID, kind string) {
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "web", UID: uid, Controller: ptr.To(true)}})
}

// Read lists the ReplicaSets the Deployment controls, not another's, and
// compares the current one with the ConfigMap's data now.
func TestReadDeployment(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app"}, Data: map[string]string{"K": "v3"}}
	now := digest.ConfigMap(cm)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "d1", Annotations: map[string]string{keys.Auto: "true"}},
		Spec:       appsv1.DeploymentSpec{Selector: sel, Template: *tpl(env(appEnv, sumB))},
	}
	d.Spec.Template.Labels = map[string]string{"app": "web"}
	var objs []runtime.Object
	for i, tp := range []*corev1.PodTemplateSpec{tpl(), tpl(env(appEnv, sumB))} {
		tp.Labels = map[string]string{"app": "web", "pod-template-hash": "h"}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-" + string(rune('a'+i)), Labels: map[string]string{"app": "web"},
			Annotations:       map[string]string{deploymentRevision: string(rune('1' + i)), keys.Applied: `{"ConfigMap/app":"` + sumA + `"}`},
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))}, Spec: appsv1.ReplicaSetSpec{Template: *tp}}
		owned(rs, "d1", "Deployment")
		objs = append(objs, rs)
	}
	stranger := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "other", Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{deploymentRevision: "9"}}, Spec: appsv1.ReplicaSetSpec{Template: *tpl(image("x"))}}
	owned(stranger, "d2", "Deployment")
	objs = append(objs, stranger, cm)
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRuntimeObjects(objs...).Build()

	r := Reader{Reader: c, Now: func() time.Time { return t0.Add(time.Hour) }, Settings: plan.Settings{
		Keys: keys, Strategy: strategy.EnvVars{}, SourceKinds: []refs.Kind{refs.ConfigMap, refs.Secret},
	}}
	h, err := r.Read(t.Context(), workload.Deployment, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Revisions) != 2 || h.Revisions[0].Object != "ReplicaSet/web-a" || h.Revisions[1].StartedBy != ByRipple {
		t.Fatalf("revisions %+v", h.Revisions)
	}
	if got := configList(h.Revisions[0].Configs); got != "ConfigMap/app=aaaaaaaaaaaa (record)" {
		t.Errorf("revision 1 configs %s", got)
	}
	want := []Changed{{Config: "ConfigMap/app", BuiltFor: "bbbbbbbbbbbb", Now: short(now)}}
	if h.Current == nil || len(h.Current.Changed) != 1 || h.Current.Changed[0] != want[0] {
		t.Errorf("current %+v, want changed %+v", h.Current, want)
	}
}

// A StatefulSet's revisions are its ControllerRevisions.
func TestReadStatefulSet(t *testing.T) {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "s1"},
		Spec:       appsv1.StatefulSetSpec{Template: *tpl(image("web:2"))},
	}
	var objs []runtime.Object
	for i, img := range []string{"web:1", "web:2"} {
		raw := `{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"app","image":"` + img + `"}]}}}}`
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-" + img[4:]},
			Revision: int64(i + 1), Data: runtime.RawExtension{Raw: []byte(raw)}}
		owned(cr, "s1", "StatefulSet")
		objs = append(objs, cr)
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRuntimeObjects(objs...).Build()
	r := Reader{Reader: c, Now: time.Now, Settings: plan.Settings{Keys: keys, Strategy: strategy.EnvVars{}, SourceKinds: []refs.Kind{refs.ConfigMap}}}
	h, err := r.Read(t.Context(), workload.StatefulSet, sts)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Revisions) != 2 || h.Revisions[1].StartedBy != ByOther || h.Revisions[1].Changes[0] != "image of app" {
		t.Errorf("revisions %+v", h.Revisions)
	}
}

// With a Secret the user may not read (the built-in view role), the
// revisions are still told, with the configs the template names, and the
// current one is said not compared with the data now, naming the Secret
// and the right, rather than compared with nothing.
func TestReadSecretForbidden(t *testing.T) {
	dbEnv := strategy.EnvVarName(db)
	withDB := func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].EnvFrom = append(t.Spec.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}})
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "d1", Annotations: map[string]string{keys.Auto: "true"}},
		Spec:       appsv1.DeploymentSpec{Selector: sel, Template: *tpl(withDB, env(dbEnv, sumS))},
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-a", Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{deploymentRevision: "1"}, CreationTimestamp: metav1.NewTime(t0)}, Spec: appsv1.ReplicaSetSpec{Template: *tpl(withDB, env(dbEnv, sumS))}}
	rs.Spec.Template.Labels = map[string]string{"app": "web"}
	owned(rs, "d1", "Deployment")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app"}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRuntimeObjects(rs, cm).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, nil)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	r := Reader{Reader: c, Now: func() time.Time { return t0.Add(time.Hour) }, Settings: plan.Settings{
		Keys: keys, Strategy: strategy.EnvVars{}, SourceKinds: []refs.Kind{refs.ConfigMap, refs.Secret},
	}}
	h, err := r.Read(t.Context(), workload.Deployment, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Revisions) != 1 || !strings.Contains(configList(h.Revisions[0].Configs), "Secret/db=555555555555 (env)") {
		t.Fatalf("revisions %+v, want one, built for Secret/db", h.Revisions)
	}
	if h.Current == nil || len(h.Current.Changed) != 0 || !strings.Contains(h.Current.Unread, "cannot read Secret shop/db") ||
		!strings.Contains(currentLine(h.Current), "not compared with the configs' data now: ") {
		t.Errorf("current %+v, want it not compared, naming Secret shop/db", h.Current)
	}
}
