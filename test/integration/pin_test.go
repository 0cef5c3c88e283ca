package integration

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/pin"
	"github.com/ripple-dev/ripple/internal/refs"
)

const pinnedKey = "ripple.dev/pinned"

// Pinning an Argo Rollout, on the API server (no Argo controller: the
// test makes the ReplicaSets it would). Two Rollouts pinning one config
// share its copy, the second added to its owners by a JSON patch tied to
// the copy's UID; the copy goes to the ReplicaSets that name it once
// each Rollout's rollout completes; a copy replaced since it was checked
// fails that patch as Invalid (the API server's 422), and is checked
// afresh; and the undo of a change puts the Rollout's template back from
// its ReplicaSet of the older data, without Argo's hash label, locked on
// the Rollout's resourceVersion.
func TestPinnedRollout(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	app := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, app)
	var d digest.Digester
	copier := pin.Copier{Client: e.c, API: e.c, Digester: func() digest.Digester { return d }, Verified: &pin.Verified{}}
	pinAt := func() (pin.Pin, *corev1.ConfigMap) {
		t.Helper()
		var cm corev1.ConfigMap
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "app"}, &cm); err != nil {
			t.Fatal(err)
		}
		p, err := pin.New(app, d.ConfigMap(&cm).Digest)
		if err != nil {
			t.Fatal(err)
		}
		return p, &cm
	}
	v1, _ := pinAt()
	k := customKinds()[0]
	tpl := func(record string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pinnedKey: record}}, Spec: podSpec(envFrom(app.Kind, app.Name))}
	}
	web := k.create(t, e, "web", nil, tpl(pin.Format([]pin.Pin{v1})))
	api := k.create(t, e, "api", nil, tpl(pin.Format([]pin.Pin{v1})))
	for _, w := range []*unstructured.Unstructured{web, api, api} {
		if err := copier.Ensure(ctx, w, []pin.Pin{v1}); err != nil {
			t.Fatal(err)
		}
	}
	copyOf := func(p pin.Pin) *corev1.ConfigMap {
		t.Helper()
		var c corev1.ConfigMap
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: p.Name()}, &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	ownerNames := func(c *corev1.ConfigMap) []string {
		var out []string
		for _, o := range c.OwnerReferences {
			out = append(out, o.Kind+"/"+o.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := ownerNames(copyOf(v1)); !slices.Equal(got, []string{"Rollout/api", "Rollout/web"}) {
		t.Fatalf("the shared copy is owned by %v, want both Rollouts once", got)
	}

	// Argo's ReplicaSets of web's two revisions: v1, then v2.
	e.setConfig(t, app, "v2")
	v2, cm2 := pinAt()
	if err := copier.Ensure(ctx, web, []pin.Pin{v2}); err != nil {
		t.Fatal(err)
	}
	for i, p := range []pin.Pin{v1, v2} {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web-" + p.Digest[:8],
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{"rollout.argoproj.io/revision": []string{"1", "2"}[i]},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web", UID: web.GetUID(), Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: tpl(pin.Format([]pin.Pin{p}))}}
		rs.Spec.Template.Labels = map[string]string{"app": "web", "rollouts-pod-template-hash": p.Digest[:8]}
		if err := e.c.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	if err := unstructured.SetNestedField(web.Object, toUnstructured(t, ptr.To(tpl(pin.Format([]pin.Pin{v2})))), "spec", "template"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	if err := copier.Adopt(ctx, web, pinnedKey); err != nil {
		t.Fatal(err)
	}
	if got := ownerNames(copyOf(v1)); !slices.Equal(got, []string{"ReplicaSet/web-" + v1.Digest[:8], "Rollout/api"}) {
		t.Errorf("after web's hand-over the v1 copy is owned by %v, want its ReplicaSet and api", got)
	}
	if got := ownerNames(copyOf(v2)); !slices.Equal(got, []string{"ReplicaSet/web-" + v2.Digest[:8]}) {
		t.Errorf("after web's hand-over the v2 copy is owned by %v, want its ReplicaSet", got)
	}

	// The v2 copy replaced behind the copier's back: its patch fails,
	// and the object in its place is refused.
	if err := e.c.Delete(ctx, copyOf(v2)); err != nil {
		t.Fatal(err)
	}
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: v2.Name(), Labels: map[string]string{pin.CopyLabel: "true"}}, Data: map[string]string{"k": "forged"}}
	if err := e.c.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if err := copier.Ensure(ctx, api, []pin.Pin{v2}); err == nil || !strings.Contains(err.Error(), "is not Ripple's copy") {
		t.Errorf("over a copy replaced by other data: %v, want it refused", err)
	}
	// Gone: made again.
	if err := e.c.Delete(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if err := copier.Ensure(ctx, api, []pin.Pin{v2}); err != nil {
		t.Fatal(err)
	}
	if got := ownerNames(copyOf(v2)); !slices.Equal(got, []string{"Rollout/api"}) {
		t.Errorf("the copy made again is owned by %v, want api", got)
	}

	// The undo of v2 puts back revision 1.
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
		t.Fatal(err)
	}
	cur := tpl(pin.Format([]pin.Pin{v2}))
	rb, why, err := pin.PlanRollback(ctx, e.c, web, &cur, pinnedKey, pin.NewChanged(cm2, app))
	if err != nil || why != "" || rb.Revision != 1 {
		t.Fatalf("PlanRollback: %+v, %q, %v; want revision 1", rb, why, err)
	}
	if err := rb.Apply(ctx, e.c, web); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
		t.Fatal(err)
	}
	record, _, _ := unstructured.NestedString(web.Object, "spec", "template", "metadata", "annotations", pinnedKey)
	labels, _, _ := unstructured.NestedStringMap(web.Object, "spec", "template", "metadata", "labels")
	if record != pin.Format([]pin.Pin{v1}) || labels["rollouts-pod-template-hash"] != "" {
		t.Errorf("after the undo web pins %q with labels %v, want %q without Argo's hash label", record, labels, pin.Format([]pin.Pin{v1}))
	}
	// A second apply of the same plan is refused: the Rollout changed.
	if err := rb.Apply(ctx, e.c, web); err == nil {
		t.Error("the undo applied again over a Rollout written since it was planned")
	}
}
