package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/metainfo"
)

// A namespace tenant may not read Ripple's settings: explain, history and
// resume go on with the defaults and the flags given after one line that
// names what could not be read and what to pass instead; approve (no
// writer for the line) fails, naming the permission.
func TestSettingsUnread(t *testing.T) {
	forbidden := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "reloader-meta-info", nil)
	}}
	c := fake.NewClientBuilder().WithInterceptorFuncs(forbidden).Build()
	f := &clusterFlags{}
	f.bind()
	if err := f.rippleFlags.Parse([]string{"--annotation-prefix=example.com"}); err != nil {
		t.Fatal(err)
	}

	var warn bytes.Buffer
	_, s, err := f.settings(t.Context(), c, "ripple", &warn)
	if err != nil {
		t.Fatalf("settings with a writer for the warning: %v, want the defaults", err)
	}
	want := "warning: Ripple's settings not read, ConfigMap ripple/reloader-meta-info (needs get on configmaps in namespace ripple): deciding with Ripple's defaults and the flags given;"
	if lines := strings.Split(strings.TrimSpace(warn.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("warning %q, want one line starting %q", warn.String(), want)
	}
	if s.Plan.Keys.CanaryResume != "example.com/canary-resume" || s.Flag("annotation-prefix") != "--annotation-prefix=example.com (given as a flag)" ||
		!strings.HasPrefix(s.From, "the defaults: not read") {
		t.Errorf("settings: resume key %q, %s, from %q; want the flag's prefix and the defaults", s.Plan.Keys.CanaryResume, s.Flag("annotation-prefix"), s.From)
	}

	var u *metainfo.Unreadable
	if _, _, err := f.settings(t.Context(), c, "ripple", nil); !errors.As(err, &u) || !strings.Contains(err.Error(), "needs get on configmaps in namespace ripple") {
		t.Errorf("settings without a writer (approve): %v, want an error naming the permission", err)
	}
}

// The commands read as kubectl does: its rate limits unless the
// kubeconfig's own are set.
func TestKubectlRates(t *testing.T) {
	for _, tc := range []struct {
		in, want rest.Config
	}{
		{rest.Config{}, rest.Config{QPS: 50, Burst: 300}},
		{rest.Config{QPS: 7, Burst: 9}, rest.Config{QPS: 7, Burst: 9}},
		{rest.Config{QPS: -1}, rest.Config{QPS: -1, Burst: 300}},
	} {
		rc := tc.in
		kubectlRates(&rc)
		if rc.QPS != tc.want.QPS || rc.Burst != tc.want.Burst {
			t.Errorf("kubectlRates(QPS %v, burst %d) = %v, %d; want %v, %d", tc.in.QPS, tc.in.Burst, rc.QPS, rc.Burst, tc.want.QPS, tc.want.Burst)
		}
	}
}
