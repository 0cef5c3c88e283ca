package pin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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
	c := apiLike(&counts{}, cm, token)
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
	other := apiLike(&counts{}, cm, foreign)
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

// With Verified, a copy checked once costs each further workload that
// pins it one patch (no read of the config or the copy, no refused
// create), and a workload it made an owner none; a copy deleted since is
// made again, and an object put in its place is checked afresh (and
// refused when not Ripple's copy); a workload whose copies were handed to
// its revisions is made an owner again.
func TestEnsureVerified(t *testing.T) {
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"k": "v"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Data: map[string][]byte{"p": []byte("s")}}
	var n counts
	c := apiLike(&n, cm, sec)
	var d digest.Digester
	copier := Copier{Client: c, API: c, Digester: func() digest.Digester { return d }, Verified: &Verified{}}
	pa, err := New(refs.Ref{Kind: refs.ConfigMap, Name: "app"}, d.ConfigMap(cm).Digest)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := New(refs.Ref{Kind: refs.Secret, Name: "db"}, d.Secret(sec).Digest)
	if err != nil {
		t.Fatal(err)
	}
	pins := []Pin{pa, pd}
	workload := func(name string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("u-" + name)}}
	}
	ensure := func(w *appsv1.Deployment, wantReads, wantCreates, wantPatches int32) {
		t.Helper()
		reads, creates, patches := n.reads.Load(), n.creates.Load(), n.patches.Load()
		if err := copier.Ensure(ctx, w, pins); err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		reads, creates, patches = n.reads.Load()-reads, n.creates.Load()-creates, n.patches.Load()-patches
		if reads != wantReads || creates != wantCreates || patches != wantPatches {
			t.Errorf("%s: %d reads, %d creates, %d patches; want %d, %d, %d", w.Name, reads, creates, patches, wantReads, wantCreates, wantPatches)
		}
	}
	copyOfApp := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pa.Name()}}
	ensure(workload("web"), 2, 2, 0)
	ensure(workload("api"), 0, 0, 2)
	ensure(workload("api"), 0, 0, 0)
	if o := owners(t, c, copyOfApp); strings.Join(o, ",") != "Deployment/api,Deployment/web" {
		t.Errorf("owners %v, want both Deployments once", o)
	}

	// Handed to its revisions, web is made an owner again at its next
	// rollout to the same data.
	rs := replicaSet("web-1", "rs-uid", ownerOf("Deployment", "web", "u-web", true), pa.Ref.String()+"="+pa.Digest)
	rs.Spec.Template.Annotations[recordKey] = "configmap/app=" + pa.Digest + ",secret/db=" + pd.Digest
	web := workload("web")
	web.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	if err := c.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if err := copier.Adopt(ctx, web, recordKey); err != nil {
		t.Fatal(err)
	}
	ensure(web, 0, 0, 2)
	if o := owners(t, c, copyOfApp); strings.Join(o, ",") != "Deployment/api,Deployment/web,ReplicaSet/web-1" {
		t.Errorf("owners %v, want api, the ReplicaSet and web again", o)
	}

	// Deleted since: made again.
	if err := c.Delete(ctx, copyOfApp); err != nil {
		t.Fatal(err)
	}
	ensure(workload("gone"), 1, 1, 2)
	// Replaced by an object not Ripple's: refused.
	if err := c.Delete(ctx, copyOfApp); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: pa.Name()}, Data: map[string]string{"k": "forged"}}); err != nil {
		t.Fatal(err)
	}
	if err := copier.Ensure(ctx, workload("late"), pins); err == nil || !strings.Contains(err.Error(), "is not Ripple's copy") {
		t.Errorf("over a replaced copy: %v, want it refused", err)
	}
}

// counts are the requests apiLike served.
type counts struct{ reads, creates, patches atomic.Int32 }

// apiLike is a fake client that gives a created object a UID and answers
// a JSON patch that does not apply 422, as the API server does, counting
// reads, creates and patches.
func apiLike(n *counts, objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			n.reads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n.creates.Add(1))))
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			n.patches.Add(1)
			err := c.Patch(ctx, obj, patch, opts...)
			var status apierrors.APIStatus
			if err != nil && !errors.As(err, &status) {
				// A JSON patch that does not apply (a failed test, a
				// missing path): the API server answers 422.
				return apierrors.NewInvalid(obj.GetObjectKind().GroupVersionKind().GroupKind(), obj.GetName(), nil)
			}
			return err
		},
	}).Build()
}

// 64 workloads pinning one config at once: one read of it, one create,
// every workload an owner of the copy exactly once, and fewer patches
// than workloads (those that ask while a patch is written are added by
// the next one).
func TestEnsureTogether(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"k": "v"}}
	var n counts
	c := apiLike(&n, cm)
	var d digest.Digester
	copier := Copier{Client: c, API: c, Digester: func() digest.Digester { return d }, Verified: &Verified{}}
	p, err := New(refs.Ref{Kind: refs.ConfigMap, Name: "app"}, d.ConfigMap(cm).Digest)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			w := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("w%02d", i), UID: types.UID(fmt.Sprintf("u%02d", i))}}
			errs <- copier.Ensure(t.Context(), w, []Pin{p})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: p.Name()}}
	o := owners(t, c, got)
	if len(o) != workers || len(slices.Compact(o)) != workers {
		t.Errorf("%d owners (%d distinct), want each of the %d workloads once: %v", len(o), len(slices.Compact(o)), workers, o)
	}
	if r, cr, pa := n.reads.Load()-1, n.creates.Load(), n.patches.Load(); r != 1 || cr != 1 || pa >= workers {
		t.Errorf("%d reads of the config, %d creates, %d patches; want 1, 1 and fewer than %d", r, cr, pa, workers)
	}
}

// A copy left without owners (its workload deleted with
// --cascade=orphan) is Ripple's still: a workload that pins its data
// becomes its owner, remembered or not.
func TestEnsureOrphanedCopy(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"k": "v"}}
	var d digest.Digester
	p, err := New(refs.Ref{Kind: refs.ConfigMap, Name: "app"}, d.ConfigMap(cm).Digest)
	if err != nil {
		t.Fatal(err)
	}
	orphan := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: p.Name(), UID: "copy-uid", Labels: map[string]string{CopyLabel: "true"}},
		Immutable: new(true), Data: cm.Data}
	c := apiLike(&counts{}, cm, orphan)
	copier := Copier{Client: c, API: c, Digester: func() digest.Digester { return d }, Verified: &Verified{}}
	// Remembered with an owner that is gone since: the append fails, and
	// the copy is read again.
	copier.Verified.remember(client.ObjectKeyFromObject(orphan), "copy-uid", "gone-uid")
	for _, name := range []string{"web", "api"} {
		w := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}}
		if err := copier.Ensure(t.Context(), w, []Pin{p}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if o := owners(t, c, orphan); strings.Join(o, ",") != "Deployment/api,Deployment/web" {
		t.Errorf("owners %v, want both Deployments", o)
	}
}
