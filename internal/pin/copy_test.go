package pin

import (
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// The marks GitOps tools and kubectl track an object by: a copy must
// carry none, so that no tool takes it for its own and prunes it (or
// reports it out of sync). Argo CD: the tracking label and annotation;
// Flux: its kustomization labels; kubectl apply --prune: the last
// applied configuration; ApplySets: the part-of label; Helm and kapp:
// their owner marks. Ripple's own keys on a config are not copied either.
var tracking = map[string]string{
	"app.kubernetes.io/instance":            "shop",
	"argocd.argoproj.io/tracking-id":        "shop:/ConfigMap:shop/app",
	"kustomize.toolkit.fluxcd.io/name":      "shop",
	"kustomize.toolkit.fluxcd.io/namespace": "flux-system",
	corev1.LastAppliedConfigAnnotation:      `{"kind":"ConfigMap"}`,
	"applyset.kubernetes.io/part-of":        "applyset-0123",
	"app.kubernetes.io/managed-by":          "Helm",
	"meta.helm.sh/release-name":             "shop",
	"kapp.k14s.io/app":                      "1700000000",
	"ripple.dev/canary":                     "1",
}

// A copy holds the config's data and nothing of its metadata but its
// name: it is labelled as Ripple's, immutable, and owned by the workload
// that pins it. A second workload pinning the same data is added to its
// owners; an object of the copy's name that is not Ripple's copy of this
// data, a ServiceAccount token Secret, and data that changed since the
// plan are refused.
func TestEnsure(t *testing.T) {
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", Labels: tracking, Annotations: tracking},
		Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {1}}}
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tok"}, Type: corev1.SecretTypeServiceAccountToken,
		Data: map[string][]byte{"token": []byte("t")}}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-web"}}
	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "api", UID: "u-api"}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(cm, token).Build()
	var d digest.Digester
	copier := Copier{Client: c, API: c, Digester: func() digest.Digester { return d }}
	p, err := New(refs.Ref{Kind: refs.ConfigMap, Name: "app"}, d.ConfigMap(cm).Digest)
	if err != nil {
		t.Fatal(err)
	}
	for _, owner := range []*appsv1.Deployment{web, api, web} {
		if err := copier.Ensure(ctx, owner, []Pin{p}); err != nil {
			t.Fatalf("%s: %v", owner.Name, err)
		}
	}
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: p.Name()}, &got); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Labels, map[string]string{CopyLabel: "true"}) || !maps.Equal(got.Annotations, map[string]string{CopyOf: "app"}) {
		t.Errorf("the copy carries labels %v and annotations %v, want only Ripple's", got.Labels, got.Annotations)
	}
	if got.Immutable == nil || !*got.Immutable || !maps.Equal(got.Data, cm.Data) || !maps.EqualFunc(got.BinaryData, cm.BinaryData, bytesEqual) {
		t.Errorf("copy %+v, want the config's data, immutable", got)
	}
	if o := owners(t, c, &got); strings.Join(o, ",") != "Deployment/api,Deployment/web" {
		t.Errorf("owners %v, want both Deployments once", o)
	}

	tp, err := New(refs.Ref{Kind: refs.Secret, Name: "tok"}, d.Secret(token).Digest)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := New(refs.Ref{Kind: refs.ConfigMap, Name: "app"}, strings.Repeat("0", DigestLen))
	if err != nil {
		t.Fatal(err)
	}
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: p.Name()}, Data: cm.Data}
	other := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(cm, foreign).Build()
	for what, tc := range map[string]struct {
		c    client.Client
		pin  Pin
		want string
	}{
		"a ServiceAccount token":   {c, tp, "a ServiceAccount token Secret is never copied"},
		"data changed since":       {c, stale, "its data changed since the plan saw"},
		"not Ripple's of the name": {other, p, "exists and is not Ripple's copy of this data"},
	} {
		err := Copier{Client: tc.c, API: tc.c, Digester: copier.Digester}.Ensure(ctx, web, []Pin{tc.pin})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", what, err, tc.want)
		}
	}
}
