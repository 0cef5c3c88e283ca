package workload

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// web is a Deployment as its owner wrote it: one container with its own
// env var.
func web() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "7", Annotations: map[string]string{"owner": "git"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "app:1", Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}},
		}}}}},
	}
}

// withEnv is d's template with env var name=value set on container app.
func withEnv(d *appsv1.Deployment, kv ...string) *corev1.PodTemplateSpec {
	tpl := d.Spec.Template.DeepCopy()
	c := &tpl.Spec.Containers[0]
	for i := 0; i+1 < len(kv); i += 2 {
		set := false
		for j := range c.Env {
			if c.Env[j].Name == kv[i] {
				c.Env[j].Value, set = kv[i+1], true
			}
		}
		if !set {
			c.Env = append(c.Env, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
	}
	return tpl
}

// The apply configuration of a reload names only Ripple's fields: the
// container by name with the one env var, the records, and the
// resourceVersion read; nothing the owner wrote.
func TestApplyConfigIsRipplesFieldsOnly(t *testing.T) {
	d := web()
	ap := Deployment.(pausable[*appsv1.Deployment]).applier()
	cfg, left, err := ap.config(d, &d.Spec.Template, Update{
		Template:    withEnv(d, "STAKATER_APP_CONFIGMAP", "h2"),
		Annotations: map[string]*string{"ripple.dev/applied": ptr.To(`{"ConfigMap/app":"h2"}`), "gone": nil},
		Paused:      ptr.To(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(cfg)
	want := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"ripple.dev/applied":"{\"ConfigMap/app\":\"h2\"}"},"name":"web","namespace":"ns","resourceVersion":"7"},` +
		`"spec":{"paused":true,"template":{"spec":{"containers":[{"env":[{"name":"STAKATER_APP_CONFIGMAP","value":"h2"}],"name":"app"}]}}}}`
	if string(got) != want {
		t.Errorf("apply configuration\n%s\nwant\n%s", got, want)
	}
	if len(left.annotations) != 1 || left.annotations[0] != "gone" || left.unpause || len(left.env) != 0 {
		t.Errorf("leftovers %+v, want the annotation gone", left)
	}
}

func newApplyClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithObjects(objs...).WithReturnManagedFields().Build()
}

func get(t *testing.T, c client.Client) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func env(d *appsv1.Deployment) map[string]string {
	out := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

// Successive reloads keep what Ripple wrote before (the applied fields it
// owns are part of each apply): a second config's env var does not drop the
// first, and a reload during Ripple's pause keeps the Deployment paused; the
// resume lets go of spec.paused. The owner's fields are untouched.
func TestApplyKeepsRipplesEarlierFields(t *testing.T) {
	d := web()
	d.ResourceVersion = ""
	c := newApplyClient(t, d)
	write := func(u func(*appsv1.Deployment) Update) {
		t.Helper()
		cur := get(t, c)
		if _, err := Deployment.Write(t.Context(), c, cur, u(cur)); err != nil {
			t.Fatal(err)
		}
	}
	write(func(cur *appsv1.Deployment) Update {
		return Update{Template: withEnv(cur, "STAKATER_A_CONFIGMAP", "a1"), Paused: ptr.To(true),
			Annotations: map[string]*string{"paused-at": ptr.To("now")}}
	})
	write(func(cur *appsv1.Deployment) Update {
		return Update{Template: withEnv(cur, "STAKATER_B_CONFIGMAP", "b1")}
	})
	got := get(t, c)
	if e := env(got); e["STAKATER_A_CONFIGMAP"] != "a1" || e["STAKATER_B_CONFIGMAP"] != "b1" || e["LOG_LEVEL"] != "info" {
		t.Errorf("env %v, want both of Ripple's and the owner's", e)
	}
	if !got.Spec.Paused || got.Annotations["paused-at"] != "now" || got.Annotations["owner"] != "git" || got.Spec.Template.Spec.Containers[0].Image != "app:1" {
		t.Errorf("after a reload in the pause: paused %v, annotations %v, image %s", got.Spec.Paused, got.Annotations, got.Spec.Template.Spec.Containers[0].Image)
	}
	write(func(*appsv1.Deployment) Update {
		return Update{Paused: ptr.To(false), Annotations: map[string]*string{"paused-at": nil}}
	})
	if got := get(t, c); got.Spec.Paused || got.Annotations["paused-at"] != "" || env(got)["STAKATER_A_CONFIGMAP"] != "a1" {
		t.Errorf("after the resume: paused %v, annotations %v, env %v", got.Spec.Paused, got.Annotations, env(got))
	}
}

// A value Ripple drops is gone even when another manager wrote it
// (Reloader's env var on migration, a record an older Ripple patched):
// what the apply leaves is patched away.
func TestApplyRemovesWhatOthersKeep(t *testing.T) {
	d := web()
	d.ResourceVersion = ""
	d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_A_CONFIGMAP", Value: "a1"})
	d.Annotations["ripple.dev/applied"] = "{}"
	c := newApplyClient(t, d)
	cur := get(t, c)
	next := cur.Spec.Template.DeepCopy()
	next.Spec.Containers[0].Env = next.Spec.Containers[0].Env[:1]
	if _, err := Deployment.Write(t.Context(), c, cur, Update{Template: next, Annotations: map[string]*string{"ripple.dev/applied": nil}}); err != nil {
		t.Fatal(err)
	}
	got := get(t, c)
	if e := env(got); len(e) != 1 || e["LOG_LEVEL"] != "info" {
		t.Errorf("env %v, want the owner's only", e)
	}
	if _, ok := got.Annotations["ripple.dev/applied"]; ok || got.Annotations["owner"] != "git" {
		t.Errorf("annotations %v, want the record removed and the owner's kept", got.Annotations)
	}
}

// The clean-up after the apply is a second write: a conflict on it (the
// workload changed in between, as the Deployment controller does while it
// rolls) is retried on the workload as it is now, and the write succeeds:
// the apply already made the reload.
func TestApplyCleanUpRetriesAConflict(t *testing.T) {
	d := web()
	d.ResourceVersion = ""
	d.Annotations["ripple.dev/approval"] = "{}" // written by `ripple approve`, another manager
	conflicts := 0
	c := fake.NewClientBuilder().WithObjects(d).WithReturnManagedFields().WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if p.Type() != types.ApplyPatchType && conflicts == 0 {
				conflicts++
				other := get(t, c)
				other.Annotations["deployment.kubernetes.io/revision"] = "2"
				if err := c.Update(ctx, other); err != nil {
					return err
				}
				return apierrors.NewConflict(appsv1.Resource("deployments"), obj.GetName(), errors.New("the object has been modified"))
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	}).Build()
	cur := get(t, c)
	u := Update{Template: withEnv(cur, "STAKATER_APP_CONFIGMAP", "h2"), Annotations: map[string]*string{"ripple.dev/approval": nil}}
	if _, err := Deployment.Write(t.Context(), c, cur, u); err != nil {
		t.Fatalf("the write failed after its apply: %v", err)
	}
	got := get(t, c)
	if _, ok := got.Annotations["ripple.dev/approval"]; ok || conflicts != 1 || env(got)["STAKATER_APP_CONFIGMAP"] != "h2" ||
		got.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("after %d conflicts: annotations %v, env %v; want the approval removed, the reload and the other write kept", conflicts, got.Annotations, env(got))
	}
}

// A template change beyond env vars and annotations (none of the
// strategies makes one) is written by patch, whole.
func TestApplyFallsBackToPatch(t *testing.T) {
	d := web()
	d.ResourceVersion = ""
	c := newApplyClient(t, d)
	cur := get(t, c)
	next := cur.Spec.Template.DeepCopy()
	next.Spec.Containers[0].Image = "app:2"
	if supports(&cur.Spec.Template, next) {
		t.Fatal("an image change is carried by the apply configuration")
	}
	if _, err := Deployment.Write(t.Context(), c, cur, Update{Template: next}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c); got.Spec.Template.Spec.Containers[0].Image != "app:2" {
		t.Errorf("image %s, want app:2", got.Spec.Template.Spec.Containers[0].Image)
	}
}

// A container that names an env var twice is patched: an apply to its env
// list would keep only the first entry, and the pods read the last.
func TestRepeatedEnvNamesArePatched(t *testing.T) {
	d := web()
	d.ResourceVersion = ""
	d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env,
		corev1.EnvVar{Name: "LOG_LEVEL", Value: "info"}, corev1.EnvVar{Name: "LOG_LEVEL", Value: "debug"})
	c := newApplyClient(t, d)
	cur := get(t, c)
	next := cur.Spec.Template.DeepCopy()
	next.Spec.Containers[0].Env = append(next.Spec.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_APP_CONFIGMAP", Value: "d2"})
	if supports(&cur.Spec.Template, next) || supports(&cur.Spec.Template, nil) {
		t.Fatal("a template with a repeated env var name is written by apply")
	}
	if _, err := Deployment.Write(t.Context(), c, cur, Update{Template: next}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c).Spec.Template.Spec.Containers[0].Env; !equality.Semantic.DeepEqual(got, next.Spec.Containers[0].Env) {
		t.Errorf("env %v, want %v", got, next.Spec.Containers[0].Env)
	}
}
