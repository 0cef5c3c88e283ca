package gather

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// With --namespace-defaults the workload's Namespace's annotations are
// gathered (metadata only); without it they are nil. A Namespace the
// reader may not read (ripple explain or approve with credentials that
// may not) is an error naming the permission, never the flag's default.
func TestInputNamespaceAnnotations(t *testing.T) {
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{keys.ReloadWindow: "Sat 00:00-24:00 UTC"}}}
	forbidden := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if key.Namespace == "" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, key.Name, nil)
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	for _, tc := range []struct {
		name     string
		defaults bool
		funcs    *interceptor.Funcs
		want     map[string]string
		err      string
	}{
		{name: "on", defaults: true, want: nsObj.Annotations},
		{name: "off", defaults: false},
		{name: "forbidden", defaults: true, funcs: &forbidden, err: `cannot read Namespace "shop" (needs get on namespaces) to resolve its reload policy`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := web()
			b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(nsObj.DeepCopy(), d, cm("cfg", "v1"))
			if tc.funcs != nil {
				b.WithInterceptorFuncs(*tc.funcs)
			}
			g := Gatherer{Reader: b.Build(), Settings: plan.Settings{Keys: keys, NamespaceDefaults: tc.defaults}}
			in, err := g.Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := in.Workload.NamespaceAnnotations
			if len(got) != len(tc.want) || got[keys.ReloadWindow] != tc.want[keys.ReloadWindow] {
				t.Errorf("namespace annotations %v, want %v", got, tc.want)
			}
			if v, from := in.Workload.Governing(keys.ReloadWindow, ""); tc.want != nil && (v != "Sat 00:00-24:00 UTC" || from != plan.FromNamespace) {
				t.Errorf("governing window %q from %s", v, from)
			}
		})
	}
}

// A Secret the reader may not read (ripple explain or history on the
// built-in view role) is an error naming the Secret and the right, never
// a missing source: a plan without it would report a deletion.
func TestInputSecretForbidden(t *testing.T) {
	d := web()
	d.Annotations = nil
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(d, cm("cfg", "v1"), secret("db")).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, nil)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	g := Gatherer{Reader: c, Settings: plan.Settings{Keys: keys, SourceKinds: []refs.Kind{refs.ConfigMap, refs.Secret}}}
	_, err := g.Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
	want := "cannot read Secret shop/db, which the workload may use (needs get on secrets in namespace shop; the built-in view role has none"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}
