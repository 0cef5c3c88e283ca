package metainfo

import (
	"context"
	"errors"
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

// Credentials that may not read Ripple's settings get an *Unreadable
// error naming the permission or the flag that avoids it, with the Info
// a read-only command goes on with: Ripple's defaults, marked as such, and
// the namespace the user named. Without that namespace the digest key
// cannot be looked for, and the settings say it was not read.
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
	for ns, want := range map[string]struct{ err, from, key string }{
		"ripple": {
			err:  "cannot read Ripple's settings, ConfigMap ripple/reloader-meta-info (needs get on configmaps in namespace ripple)",
			from: "the defaults: not read, ConfigMap ripple/reloader-meta-info (needs get on configmaps in namespace ripple)",
			key:  `not read (the digest key, Secret ripple/ripple-digest-key: configmaps "reloader-meta-info" is forbidden`,
		},
		"": {
			err:  "(finding it needs list on configmaps in every namespace): name Ripple's namespace with --ripple-namespace",
			from: "the defaults: not read, the reloader-meta-info ConfigMap (finding it needs list on configmaps in every namespace)",
			key:  "not read (the namespace of Ripple is not known: name it with --ripple-namespace)",
		},
	} {
		info, err := Read(t.Context(), c, ns)
		var u *Unreadable
		if !errors.As(err, &u) || !strings.Contains(err.Error(), want.err) || !apierrors.IsForbidden(err) {
			t.Fatalf("Read(%q): %v, want an Unreadable error naming %q", ns, err, want.err)
		}
		if !strings.Contains(u.Warning(), "deciding with Ripple's defaults and the flags given") || info.Namespace != ns {
			t.Errorf("Read(%q): warning %q, namespace %q", ns, u.Warning(), info.Namespace)
		}
		s, err := BindFlags(pflag.NewFlagSet("explain", pflag.ContinueOnError)).Resolve(info)
		if err != nil {
			t.Fatal(err)
		}
		if s.From != want.from || s.Flag("settle-window") != "--settle-window=1s (the default)" {
			t.Errorf("Read(%q): settings from %q, %s; want from %q and the defaults", ns, s.From, s.Flag("settle-window"), want.from)
		}
		s.Digester(t.Context(), c)
		if s.KeyUnread == nil || !strings.Contains(s.Shown[len(s.Shown)-1].Value, want.key) {
			t.Errorf("Read(%q): digest key unread %v, shown %+v; want %q", ns, s.KeyUnread, s.Shown[len(s.Shown)-1], want.key)
		}
	}
}
