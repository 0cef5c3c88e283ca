package pin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const recordKey = "ripple.dev/pinned"

func ownerOf(kind, name string, uid types.UID, controller bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid}
	if controller {
		r.Controller = new(true)
	}
	return r
}

func copyObject(kind, name string, labelled bool, owners ...metav1.OwnerReference) client.Object {
	meta := metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: owners}
	if labelled {
		meta.Labels = map[string]string{CopyLabel: "true"}
	}
	if kind == "Secret" {
		return &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": []byte("v")}}
	}
	return &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}}
}

func replicaSet(name string, uid types.UID, owner metav1.OwnerReference, record string) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{owner}}}
	if record != "" {
		rs.Spec.Template.Annotations = map[string]string{recordKey: record}
	}
	return rs
}

func owners(t *testing.T, c client.Client, obj client.Object) []string {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range obj.GetOwnerReferences() {
		out = append(out, o.Kind+"/"+o.Name)
	}
	slices.Sort(out)
	return out
}

// Adopt hands each copy the Deployment owns to the ReplicaSets that name
// it, keeps another workload's ownership, leaves alone the copies it does
// not own, objects not labelled copies, and the ReplicaSets of another
// Deployment; a second Adopt changes nothing.
func TestAdoptDeployment(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	byD := ownerOf("Deployment", "web", "d-uid", false)
	other := ownerOf("Deployment", "api", "api-uid", false)
	objs := []client.Object{d,
		replicaSet("web-1", "rs1-uid", ownerOf("Deployment", "web", "d-uid", true), "configmap/app=aaaaaaaaaaaa,configmap/x=dddddddddddd"),
		replicaSet("web-2", "rs2-uid", ownerOf("Deployment", "web", "d-uid", true), "configmap/app=bbbbbbbbbbbb,secret/db=cccccccccccc"),
		replicaSet("web-3", "rs3-uid", ownerOf("Deployment", "web", "d-uid", true), ""),
		replicaSet("api-1", "rs4-uid", ownerOf("Deployment", "api", "api-uid", true), "configmap/app=aaaaaaaaaaaa"),
		copyObject("ConfigMap", "app-r-aaaaaaaaaaaa", true, byD, other),
		copyObject("ConfigMap", "app-r-bbbbbbbbbbbb", true, byD),
		copyObject("Secret", "db-r-cccccccccccc", true, byD),
		copyObject("ConfigMap", "x-r-dddddddddddd", false, byD),
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
	cp := Copier{Client: c, API: c}
	want := map[string][]string{
		"app-r-aaaaaaaaaaaa": {"Deployment/api", "ReplicaSet/web-1"},
		"app-r-bbbbbbbbbbbb": {"ReplicaSet/web-2"},
		"db-r-cccccccccccc":  {"ReplicaSet/web-2"},
		"x-r-dddddddddddd":   {"Deployment/web"},
	}
	for round := 1; round <= 2; round++ {
		if err := cp.Adopt(t.Context(), d, recordKey); err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			obj := copyObject("ConfigMap", name, false)
			if name == "db-r-cccccccccccc" {
				obj = copyObject("Secret", name, false)
			}
			if got := owners(t, c, obj); !slices.Equal(got, w) {
				t.Errorf("round %d: %s is owned by %v, want %v", round, name, got, w)
			}
		}
	}
}

// A StatefulSet's copies go to the ControllerRevisions whose template
// patch names them.
func TestAdoptStatefulSet(t *testing.T) {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "s-uid"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{recordKey: "configmap/app=aaaaaaaaaaaa"}}, "$patch": "replace"}}})
	if err != nil {
		t.Fatal(err)
	}
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-7c9", UID: "cr-uid", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{ownerOf("StatefulSet", "db", "s-uid", true)}}, Data: runtime.RawExtension{Raw: patch}, Revision: 1}
	cm := copyObject("ConfigMap", "app-r-aaaaaaaaaaaa", true, ownerOf("StatefulSet", "db", "s-uid", false))
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(s, cr, cm).Build()
	if err := (Copier{Client: c, API: c}).Adopt(t.Context(), s, recordKey); err != nil {
		t.Fatal(err)
	}
	if got := owners(t, c, cm); !slices.Equal(got, []string{"ControllerRevision/db-7c9"}) {
		t.Errorf("the copy is owned by %v, want the ControllerRevision", got)
	}
}

// 32 Deployments sharing a copy complete their rollouts at once: every
// hand-over lands (none lost to another's conflict), and the copy ends
// owned by the 32 ReplicaSets alone.
func TestAdoptTogether(t *testing.T) {
	const n = 32
	var objs []client.Object
	var byDeployments []metav1.OwnerReference
	ds := make([]*appsv1.Deployment, n)
	for i := range n {
		name, uid := fmt.Sprintf("d%02d", i), types.UID(fmt.Sprintf("d%02d-uid", i))
		ds[i] = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
		rs := replicaSet(name+"-1", types.UID(name+"-rs"), ownerOf("Deployment", name, uid, true), "configmap/app=aaaaaaaaaaaa")
		rs.Labels = map[string]string{"app": name}
		objs = append(objs, ds[i], rs)
		byDeployments = append(byDeployments, ownerOf("Deployment", name, uid, false))
	}
	cm := copyObject("ConfigMap", "app-r-aaaaaaaaaaaa", true, byDeployments...)
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(append(objs, cm)...).Build()
	cp := Copier{Client: c, API: c, Verified: &Verified{}}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, d := range ds {
		wg.Go(func() { errs <- cp.Adopt(t.Context(), d, recordKey) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	got := owners(t, c, cm)
	if len(got) != n || slices.ContainsFunc(got, func(o string) bool { return !strings.HasPrefix(o, "ReplicaSet/") }) {
		t.Errorf("the copy is owned by %v, want the %d ReplicaSets alone", got, n)
	}
}
