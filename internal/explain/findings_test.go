package explain

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/standing"
)

const offlineManifests = `---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {reloader.stakater.com/auto: "true"}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: app, envFrom: [{configMapRef: {name: app-config}}]}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: quiet}
spec:
  selector: {matchLabels: {app: quiet}}
  template:
    metadata: {labels: {app: quiet}}
    spec: {containers: [{name: app, image: app, envFrom: [{configMapRef: {name: app-config}}]}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: flagged}
spec:
  selector: {matchLabels: {app: flagged}}
  template:
    metadata: {labels: {app: flagged}}
    spec: {containers: [{name: app, image: app}]}
`

// offline explains the manifests as `explain -f` does, with
// settings from args.
func offline(t *testing.T, findings []Finding, args ...string) Explainer {
	t.Helper()
	objs, err := manifest.Load([]string{manifest.Stdin}, strings.NewReader(offlineManifests), "shop")
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("explain", pflag.ContinueOnError)
	f := metainfo.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, err := f.Resolve(metainfo.Info{})
	if err != nil {
		t.Fatal(err)
	}
	return Explainer{Reader: manifest.NewReader(objs), Settings: s, Findings: FindingsFor(findings),
		Now: func() time.Time { return time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC) }}
}

// With Findings, All lists the opted-in workloads and those with
// findings; each report has the findings on the workload and on the
// sources it lists, not those of other objects.
func TestAllWithFindings(t *testing.T) {
	findings := []Finding{
		{Severity: "warning", Object: "ConfigMap shop/app-config", Message: "on the config"},
		{Severity: "error", Object: "Deployment shop/flagged", Message: "on flagged"},
		{Severity: "error", Object: "Pod shop/other", Message: "on no workload"},
	}
	e := offline(t, findings)
	list, err := e.All(t.Context(), Kinds(e.Settings, e.Reader), "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, r := range list.Items {
		for _, f := range r.Findings {
			got[r.Workload.Name] = append(got[r.Workload.Name], f.Message)
		}
		if r.Findings == nil {
			got[r.Workload.Name] = nil
		}
	}
	// quiet uses app-config but is neither opted in nor flagged itself:
	// a finding on a config lists the workloads that use it.
	want := map[string][]string{"flagged": {"on flagged"}, "quiet": {"on the config"}, "web": {"on the config"}}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("findings of %s = %v, want %v", name, got[name], w)
		}
	}
}

// Without Findings (live), All lists opted-in workloads only.
func TestAllWithoutFindingsListsOptedIn(t *testing.T) {
	e := offline(t, nil)
	e.Findings = nil
	list, err := e.All(t.Context(), Kinds(e.Settings, e.Reader), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Workload.Name != "web" {
		t.Errorf("listed %+v, want web only", list.Items)
	}
}

// A namespace whose Namespace object is not in the files counts as
// selected by --namespace-selector: its labels are unknown.
func TestNamespaceNotInFilesIsSelected(t *testing.T) {
	e := offline(t, nil, "--namespace-selector=team=a")
	r, err := e.Explain(t.Context(), mustFind(t, e, "Deployment"), "shop", "web")
	if err != nil {
		t.Fatal(err)
	}
	if r.Reason == "NamespaceOutOfScope" || r.State != standing.Complete {
		t.Errorf("state %s, reason %s: %s", r.State, r.Reason, r.Verdict)
	}
}

func mustFind(t *testing.T, e Explainer, name string) Kind {
	t.Helper()
	k, ok := Find(Kinds(e.Settings, e.Reader), name)
	if !ok {
		t.Fatalf("no kind %s", name)
	}
	return k
}

// A declared kind whose kind is a built-in's (OpenKruise's StatefulSet) is
// found by its name qualified with its group, as kubectl takes it; the
// kind alone is the built-in one.
func TestFindQualifiedDeclaredKind(t *testing.T) {
	srcs, err := declared.Presets([]string{"kruise"})
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := declared.Merge(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	all := Kinds(metainfo.Settings{Config: config.Config{DeclaredKinds: kinds}}, nil)
	for name, want := range map[string]string{
		"StatefulSet.apps.kruise.io": "StatefulSet.apps.kruise.io", "statefulsets.apps.kruise.io": "StatefulSet.apps.kruise.io",
		"daemonset.apps.kruise.io": "DaemonSet.apps.kruise.io", "StatefulSet": "StatefulSet", "cloneset": "CloneSet",
	} {
		if k, ok := Find(all, name); !ok || k.Name() != want {
			t.Errorf("Find(%q) = %v, %v; want %s", name, k.Kind, ok, want)
		}
	}
}

// Credentials that may not read a declared kind get an error naming the
// verb and the resource to grant, not the API server's bare Forbidden.
func TestExplainNamesTheDeclaredKindsPermission(t *testing.T) {
	srcs, err := declared.Presets([]string{"external-secrets"})
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := declared.Merge(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	forbid := interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: "external-secrets.io", Resource: "externalsecrets"}, key.Name, nil)
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: "external-secrets.io", Resource: "externalsecrets"}, "", nil)
		},
	}
	e := Explainer{Reader: fake.NewClientBuilder().WithInterceptorFuncs(forbid).Build(), Settings: metainfo.Settings{Config: config.Config{DeclaredKinds: kinds}}}
	all := Kinds(e.Settings, e.Reader)
	k, ok := Find(all, "externalsecret")
	if !ok {
		t.Fatal("no ExternalSecret kind")
	}
	if _, err := e.Explain(t.Context(), k, "shop", "creds"); err == nil || !strings.Contains(err.Error(), "needs get on externalsecrets.external-secrets.io in namespace shop") {
		t.Errorf("Explain: %v, want the get permission named", err)
	}
	// A kind that may not be listed does not stop the others: it is told.
	l, err := e.All(t.Context(), []Kind{k}, "")
	if err != nil || len(l.Unlisted) != 1 || l.Unlisted[0].Kind != k.Name() ||
		!strings.Contains(l.Unlisted[0].Why, "needs list on externalsecrets.external-secrets.io in every namespace") {
		t.Errorf("All: %+v, %v; want the kind unlisted, naming the list permission", l.Unlisted, err)
	}
	var b strings.Builder
	if err := PrintList(&b, FormatTable, l, false); err != nil || !strings.Contains(b.String(), "Not planned (with your rights):\nevery "+k.Name()+": cannot read") {
		t.Errorf("printed %q (%v), want the kind under Not planned", b.String(), err)
	}
}
