package metainfo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A flag given to explain beats the meta-info ConfigMap, which beats the
// default; each setting says where it came from.
func TestResolveOrder(t *testing.T) {
	fs := pflag.NewFlagSet("explain", pflag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"--settle-window=5s"}); err != nil {
		t.Fatal(err)
	}
	meta := Info{Origin: "ConfigMap ops/reloader-meta-info", Options: map[string]any{
		"settleWindow": "1m0s", "dryRun": true, "namespaceSelectors": []any{"team=a"}, "reloaderAutoAnnotation": "example.com/auto",
	}}
	s, err := f.Resolve(meta)
	if err != nil {
		t.Fatal(err)
	}
	if s.Plan.SettleWindow != 5*time.Second || !s.Plan.DryRun || s.Plan.Keys.Auto != "example.com/auto" || s.Config.NamespaceSelector.String() != "team=a" {
		t.Errorf("settings %+v", s.Plan)
	}
	for flag, want := range map[string]string{
		"settle-window": "--settle-window=5s (given as a flag)", "dry-run": "--dry-run=true (from ConfigMap ops/reloader-meta-info)",
		"reload-strategy": "--reload-strategy=env-vars (the default)", "auto-annotation": "--auto-annotation=example.com/auto (from ConfigMap ops/reloader-meta-info)",
	} {
		if got := s.Flag(flag); got != want {
			t.Errorf("setting %s = %q, want %q", flag, got, want)
		}
	}
	if s.From != meta.Origin {
		t.Errorf("From = %q", s.From)
	}
}

// Credentials that may not read Ripple's settings get an error naming the
// permission or the flag that avoids it, never Ripple's defaults: with
// them explain and approve would decide otherwise than the controller.
func TestReadForbidden(t *testing.T) {
	forbidden := interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "reloader-meta-info", nil)
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", nil)
		},
	}
	c := fake.NewClientBuilder().WithInterceptorFuncs(forbidden).Build()
	for ns, want := range map[string]string{
		"ripple": "cannot read Ripple's settings, ConfigMap ripple/reloader-meta-info (needs get on configmaps in namespace ripple)",
		"":       "without list on configmaps in every namespace: name Ripple's namespace with --ripple-namespace",
	} {
		if _, err := Read(t.Context(), c, ns); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%q): %v, want %q", ns, err, want)
		}
	}
}
