package manifest

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const readerManifests = `---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: a}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b-config, labels: {app: web}}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a-config, namespace: other}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, labels: {app: web}}
stringData: {password: p}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: app}]}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: canary}
spec: {replicas: 2}
---
apiVersion: secrets-store.csi.x-k8s.io/v1
kind: SecretProviderClass
metadata: {name: vault, annotations: {a: b}}
`

func newTestReader(t *testing.T) *Reader {
	t.Helper()
	objs, err := Load([]string{Stdin}, strings.NewReader(readerManifests), "shop")
	if err != nil {
		t.Fatal(err)
	}
	return NewReader(objs)
}

func unstructuredOf(gv schema.GroupVersion, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gv.WithKind(kind))
	return u
}

func partialOf(gv schema.GroupVersion, kind string) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{}
	p.SetGroupVersionKind(gv.WithKind(kind))
	return p
}

func TestReaderGet(t *testing.T) {
	argo := schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}
	csi := schema.GroupVersion{Group: "secrets-store.csi.x-k8s.io", Version: "v1"}
	tests := []struct {
		name  string
		key   client.ObjectKey
		obj   client.Object
		check func(t *testing.T, obj client.Object)
	}{
		{"typed ConfigMap", client.ObjectKey{Namespace: "shop", Name: "b-config"}, &corev1.ConfigMap{}, func(t *testing.T, obj client.Object) {
			if cm := obj.(*corev1.ConfigMap); cm.Data["a"] != "1" || cm.Labels["app"] != "web" {
				t.Errorf("got %+v", cm)
			}
		}},
		{"typed Secret, stringData merged", client.ObjectKey{Namespace: "shop", Name: "creds"}, &corev1.Secret{}, func(t *testing.T, obj client.Object) {
			if s := obj.(*corev1.Secret); string(s.Data["password"]) != "p" {
				t.Errorf("data %v", s.Data)
			}
		}},
		{"typed Deployment", client.ObjectKey{Namespace: "shop", Name: "web"}, &appsv1.Deployment{}, func(t *testing.T, obj client.Object) {
			if d := obj.(*appsv1.Deployment); len(d.Spec.Template.Spec.Containers) != 1 {
				t.Errorf("got %+v", d.Spec)
			}
		}},
		{"unstructured Rollout", client.ObjectKey{Namespace: "shop", Name: "canary"}, unstructuredOf(argo, "Rollout"), func(t *testing.T, obj client.Object) {
			if n, _, _ := unstructured.NestedInt64(obj.(*unstructured.Unstructured).Object, "spec", "replicas"); n != 2 {
				t.Errorf("replicas %d", n)
			}
		}},
		{"metadata-only SecretProviderClass", client.ObjectKey{Namespace: "shop", Name: "vault"}, partialOf(csi, "SecretProviderClass"), func(t *testing.T, obj client.Object) {
			if obj.GetAnnotations()["a"] != "b" {
				t.Errorf("annotations %v", obj.GetAnnotations())
			}
		}},
		{"unstructured file object read as a typed Namespace", client.ObjectKey{Name: "shop"}, &corev1.Namespace{}, func(t *testing.T, obj client.Object) {
			if obj.GetLabels()["team"] != "a" {
				t.Errorf("labels %v", obj.GetLabels())
			}
		}},
	}
	r := newTestReader(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := r.Get(t.Context(), tt.key, tt.obj); err != nil {
				t.Fatalf("Get: %v", err)
			}
			if tt.obj.GetName() != tt.key.Name || tt.obj.GetNamespace() != tt.key.Namespace {
				t.Errorf("got %s/%s", tt.obj.GetNamespace(), tt.obj.GetName())
			}
			tt.check(t, tt.obj)
		})
	}
}

func TestReaderGetNotFound(t *testing.T) {
	r := newTestReader(t)
	for name, tc := range map[string]struct {
		key client.ObjectKey
		obj client.Object
	}{
		"other namespace":   {client.ObjectKey{Namespace: "other", Name: "b-config"}, &corev1.ConfigMap{}},
		"other name":        {client.ObjectKey{Namespace: "shop", Name: "nope"}, &corev1.ConfigMap{}},
		"other kind":        {client.ObjectKey{Namespace: "shop", Name: "web"}, &appsv1.StatefulSet{}},
		"other version":     {client.ObjectKey{Namespace: "shop", Name: "canary"}, unstructuredOf(schema.GroupVersion{Group: "argoproj.io", Version: "v1"}, "Rollout")},
		"namespace missing": {client.ObjectKey{Name: "other"}, &corev1.Namespace{}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := r.Get(t.Context(), tc.key, tc.obj); !apierrors.IsNotFound(err) {
				t.Errorf("Get = %v, want NotFound", err)
			}
		})
	}
}

// A read is a copy: changing it changes nothing in the reader.
func TestReaderGetReturnsCopies(t *testing.T) {
	r := newTestReader(t)
	key := client.ObjectKey{Namespace: "shop", Name: "b-config"}
	cm := &corev1.ConfigMap{}
	if err := r.Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["a"] = "changed"
	again := &corev1.ConfigMap{}
	if err := r.Get(t.Context(), key, again); err != nil || again.Data["a"] != "1" {
		t.Errorf("second read %v, %v", again.Data, err)
	}
}

func TestReaderList(t *testing.T) {
	tests := []struct {
		name string
		list client.ObjectList
		opts []client.ListOption
		want []string
	}{
		{"typed, every namespace, sorted", &corev1.ConfigMapList{}, nil, []string{"other/a-config", "shop/b-config"}},
		{"typed, in a namespace", &corev1.ConfigMapList{}, []client.ListOption{client.InNamespace("other")}, []string{"other/a-config"}},
		{"label selector", &corev1.ConfigMapList{}, []client.ListOption{client.MatchingLabels{"app": "web"}}, []string{"shop/b-config"}},
		{"has labels", &corev1.SecretList{}, []client.ListOption{client.HasLabels{"app"}}, []string{"shop/creds"}},
		{"none match", &corev1.SecretList{}, []client.ListOption{client.HasLabels{"nope"}}, nil},
		{"a kind not in the files", &appsv1.StatefulSetList{}, nil, nil},
		{"unstructured", unstructuredListOf("argoproj.io/v1alpha1", "RolloutList"), nil, []string{"shop/canary"}},
		{"metadata-only", partialListOf(), []client.ListOption{client.InNamespace("shop")}, []string{"shop/vault"}},
	}
	r := newTestReader(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := r.List(t.Context(), tt.list, tt.opts...); err != nil {
				t.Fatalf("List: %v", err)
			}
			var got []string
			items, err := metaItems(tt.list)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range items {
				got = append(got, o.GetNamespace()+"/"+o.GetName())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("List = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReaderListRejectsFieldSelectors(t *testing.T) {
	r := newTestReader(t)
	err := r.List(t.Context(), &corev1.ConfigMapList{}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", "x")})
	if err == nil || !strings.Contains(err.Error(), "field selector") {
		t.Errorf("List = %v, want a field selector error", err)
	}
}

func unstructuredListOf(apiVersion, kind string) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(apiVersion)
	l.SetKind(kind)
	return l
}

func partialListOf() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClassList"})
	return l
}

func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	objs, err := apimeta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		m, err := apimeta.Accessor(o)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
