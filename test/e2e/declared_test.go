package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

// externalSecrets is the resource of the external-secrets preset's kind,
// a kind reloaded by an annotation (restart: {annotation: force-sync}),
// without a pod template.
var externalSecrets = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}

// externalSecretCRD installs the real ExternalSecret CRD once for the
// tests of the shared cluster: two parallel installs of one CRD race, and
// the second fails as it already exists.
var externalSecretCRD struct {
	once sync.Once
	err  error
}

func installExternalSecretCRD(t *testing.T) {
	t.Helper()
	externalSecretCRD.once.Do(func() {
		externalSecretCRD.err = kc.InstallCRDs(t.Context(), cluster.ExternalSecretCRD) // done before Do returns to any caller
	})
	if externalSecretCRD.err != nil {
		t.Fatal(externalSecretCRD.err)
	}
}

// syncWatch records, from a watch, every write of one ExternalSecret
// (the force-sync value it left), and how far the watch has delivered.
type syncWatch struct {
	mu       sync.Mutex
	writes   []string
	progress *kit.WatchProgress
}

func watchSyncs(t *testing.T, dc dynamic.Interface, ns, name, from string) *syncWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	// A retry watcher: a watch the API server ends is resumed from the
	// last resourceVersion delivered; a plain one would leave the writes
	// after its end unseen.
	w, err := watchtools.NewRetryWatcherWithContext(ctx, from, &toolscache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = "metadata.name=" + name
			return dc.Resource(externalSecrets).Namespace(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &syncWatch{progress: kit.NewWatchProgress(from)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				s.progress.Fail(apierrors.FromObject(ev.Object))
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if ev.Type == watch.Modified {
				s.mu.Lock()
				s.writes = append(s.writes, u.GetAnnotations()["force-sync"])
				s.mu.Unlock()
			}
			s.progress.Saw(u.GetResourceVersion())
		}
		s.progress.Fail(errors.New("the watch of the ExternalSecret ended"))
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return s
}

// settled waits until the watch has delivered the ExternalSecret as the
// API server has it now, or a later write, and returns its writes.
func (s *syncWatch) settled(t *testing.T, dc dynamic.Interface, ns, name string) []string {
	t.Helper()
	cur, err := dc.Resource(externalSecrets).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.progress.Reached(ctx, cur.GetResourceVersion()); err != nil {
		t.Fatalf("watching %s: %v", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

// newExternalSecret creates an ExternalSecret that names the ConfigMap
// cm in Reloader's reload annotation.
func newExternalSecret(t *testing.T, dc dynamic.Interface, ns, name, cm string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": name, "annotations": map[string]any{configMapReloadAnnot: cm}},
		"spec":     map[string]any{"secretStoreRef": map[string]any{"name": "vault", "kind": "SecretStore"}, "target": map[string]any{"name": name}},
	}}
	if _, err := dc.Resource(externalSecrets).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitRecorded waits until the ExternalSecret's applied record holds
// anything and returns it as the API server has it.
func waitRecorded(t *testing.T, dc dynamic.Interface, ns, name string) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		u, err = dc.Resource(externalSecrets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && u.GetAnnotations()["ripple.dev/applied"] != "", nil
	})
	if err != nil {
		t.Fatalf("no applied record on ExternalSecret %s: %v", name, err)
	}
	return u
}

// A kind without a pod template, reloaded by an annotation (the
// external-secrets preset, on its real CRD): a change of the ConfigMap an
// ExternalSecret names sets its force-sync annotation once, and a restart
// of Ripple sets nothing, judged once the restarted Ripple has written the
// baseline of an ExternalSecret created while it was down.
func TestDeclaredRestartAnnotation(t *testing.T) {
	t.Parallel()
	installExternalSecretCRD(t)
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	dc := dynamic.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns, "--workload-kinds-preset=external-secrets")
	waitLog(t, r, "the API is served; watching it") // the one declared kind, ExternalSecret
	createConfigMap(t, cs, ns, configName, "v1")
	newExternalSecret(t, dc, ns, "creds", configName)
	base := waitRecorded(t, dc, ns, "creds")
	syncs := watchSyncs(t, dc, ns, "creds", base.GetResourceVersion())

	setConfigMapValue(t, cs, ns, configName, "v2")
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(syncs.settled(t, dc, ns, "creds")) > 0, nil
	}); err != nil {
		t.Fatalf("force-sync never set after the change: %v", err)
	}
	time.Sleep(afterRollout)
	if got := syncs.settled(t, dc, ns, "creds"); len(got) != 1 {
		t.Fatalf("writes (their force-sync values) after one change: %q, want one that sets it", got)
	} else if got[0] == "" {
		t.Fatalf("the write of the change left force-sync unset")
	}

	r.Stop()
	createConfigMap(t, cs, ns, "sentinel", "v1")
	newExternalSecret(t, dc, ns, "sentinel", "sentinel")
	r.Start()
	waitRecorded(t, dc, ns, "sentinel") // the restarted Ripple has worked through its first list
	time.Sleep(afterRollout)
	if got := syncs.settled(t, dc, ns, "creds"); len(got) != 1 {
		t.Fatalf("writes (their force-sync values) after a restart of Ripple: %q, want only the one of the change", got)
	}
}

// templateFromField is the external-secrets preset's ref to the
// ConfigMaps an ExternalSecret's target template is rendered from.
const templateFromField = "spec.target.template.templateFrom[].configMap.name"

// An ExternalSecret with auto, on the real CRD, whose target template is
// rendered from a ConfigMap it names in templateFrom (the preset's refs,
// no reload annotation naming it): a change of an unrelated ConfigMap
// writes nothing, a change of its template's ConfigMap sets force-sync
// once, recorded under that ConfigMap alone, and explain shows the field
// it is named in.
func TestDeclaredRefsFollowTemplateFrom(t *testing.T) {
	t.Parallel()
	installExternalSecretCRD(t)
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	dc := dynamic.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns, "--workload-kinds-preset=external-secrets")
	waitLog(t, r, "the API is served; watching it")
	createConfigMap(t, cs, ns, "secret-template", "v1")
	createConfigMap(t, cs, ns, "unrelated", "v1")
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "rendered", "annotations": map[string]any{autoAnnotation: "true"}},
		"spec": map[string]any{
			"secretStoreRef": map[string]any{"name": "vault", "kind": "SecretStore"},
			"target": map[string]any{"name": "rendered", "template": map[string]any{"templateFrom": []any{
				map[string]any{"configMap": map[string]any{"name": "secret-template", "items": []any{map[string]any{"key": "VALUE"}}}},
			}}},
		},
	}}
	if _, err := dc.Resource(externalSecrets).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := waitRecorded(t, dc, ns, "rendered")
	syncs := watchSyncs(t, dc, ns, "rendered", base.GetResourceVersion())

	setConfigMapValue(t, cs, ns, "unrelated", "v2")
	time.Sleep(afterRollout)
	if got := syncs.settled(t, dc, ns, "rendered"); len(got) != 0 {
		t.Fatalf("writes (their force-sync values) after a change of an unrelated ConfigMap: %q, want none", got)
	}

	setConfigMapValue(t, cs, ns, "secret-template", "v2")
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(syncs.settled(t, dc, ns, "rendered")) > 0, nil
	}); err != nil {
		t.Fatalf("force-sync never set after a change of the template's ConfigMap: %v", err)
	}
	time.Sleep(afterRollout)
	if got := syncs.settled(t, dc, ns, "rendered"); len(got) != 1 || got[0] == "" {
		t.Fatalf("writes (their force-sync values) after one change of the template's ConfigMap: %q, want one that sets it", got)
	}
	cur, err := dc.Resource(externalSecrets).Namespace(ns).Get(t.Context(), "rendered", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record := cur.GetAnnotations()[appliedAnnotation]
	if !strings.Contains(record, "ConfigMap/secret-template") || strings.Contains(record, "unrelated") {
		t.Fatalf("applied record %q, want it to name ConfigMap/secret-template and not the unrelated one", record)
	}

	out, err := runCommand(t, ns, "explain", "--workload-kinds-preset=external-secrets", "externalsecret/rendered")
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, out)
	}
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "ConfigMap/secret-template") && line == "" {
			line = l // the SOURCES row, before the DECISIONS one
		}
	}
	if !strings.Contains(line, "field "+templateFromField) || !strings.Contains(line, "AutoMatch") || strings.Contains(out, "ConfigMap/unrelated") {
		t.Fatalf("explain's line of the template's ConfigMap: %q, want it used by the field %s and reloading by auto; output:\n%s", line, templateFromField, out)
	}
}
