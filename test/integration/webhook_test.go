package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/announce"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// hookServer records the bodies posted to it.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []announce.Body
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body announce.Body
		if err := json.Unmarshal(b, &body); err != nil || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("bad webhook request %q (%s): %v", b, r.Header.Get("Content-Type"), err)
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) received() []announce.Body {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]announce.Body(nil), h.bodies...)
}

// --webhook-url replaces reloading: each data change is posted with
// Reloader's field plus what changed and which workloads would reload, and
// no workload is touched. Creates and deletes are posted with their flags.
func TestWebhookURLReplacesReloading(t *testing.T) {
	t.Parallel()
	hook := newHookServer(t)
	e := startRipple(t, "--webhook-url="+hook.URL+"/hook", "--reload-on-create=true", "--reload-on-delete=true")
	deploy := kit.Deployment
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	// The create call names the workloads Ripple knows when it handles the
	// create: none yet, if the workloads come after it.
	deadline := time.Now().Add(30 * time.Second)
	for len(hook.received()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	opted := e.newWorkload(t, deploy, "opted-in", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	plain := e.newWorkload(t, deploy, "plain", nil, envFrom(r.Kind, r.Name))
	time.Sleep(time.Second) // let the workloads reach Ripple's cache
	befores := []*corev1.PodTemplateSpec{deploy.Template(opted).DeepCopy(), deploy.Template(plain).DeepCopy()}

	e.setConfig(t, r, "v2")
	cfg := configObject(e.ns, r, nil, "")
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(cfg), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.SetLabels(map[string]string{"only": "labels"}) // no data change: no call
	if err := e.c.Update(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	later := refs.Ref{Kind: refs.Secret, Name: "later"}
	e.newConfig(t, later)
	e.deleteConfig(t, r)

	e.waitFor(t, opted, "four webhook calls", func(client.Object) bool { return len(hook.received()) >= 4 })
	time.Sleep(500 * time.Millisecond) // a spurious fifth call would show
	got := hook.received()
	want := []announce.Body{
		// Created after Ripple started, with --reload-on-create: a call.
		{Webhook: "update successful", Event: "create", Kind: refs.ConfigMap, Namespace: e.ns, Name: "cfg", Workloads: []workload.Ref{}},
		{Webhook: "update successful", Event: "update", Kind: refs.ConfigMap, Namespace: e.ns, Name: "cfg",
			Workloads: []workload.Ref{{Kind: "Deployment", Namespace: e.ns, Name: "opted-in"}}},
		{Webhook: "update successful", Event: "create", Kind: refs.Secret, Namespace: e.ns, Name: "later", Workloads: []workload.Ref{}},
		{Webhook: "update successful", Event: "delete", Kind: refs.ConfigMap, Namespace: e.ns, Name: "cfg",
			Workloads: []workload.Ref{{Kind: "Deployment", Namespace: e.ns, Name: "opted-in"}}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d calls, want %d: %+v", len(got), len(want), got)
	}
	// Each config's calls come in the order of its changes. ConfigMaps and
	// Secrets have informers of their own, so the order between two
	// configs is not defined.
	for _, key := range []string{"ConfigMap/cfg", "Secret/later"} {
		g, w := callsOf(got, key), callsOf(want, key)
		if !slices.Equal(g, w) {
			t.Errorf("calls for %s:\n got %q\nwant %q", key, g, w)
		}
	}
	for i, w := range []client.Object{opted, plain} {
		e.expectNoRollout(t, w, deploy, befores[i])
	}
}

// callsOf returns, in order, the JSON of the calls about one config,
// named "Kind/name".
func callsOf(bodies []announce.Body, key string) []string {
	var out []string
	for _, b := range bodies {
		if string(b.Kind)+"/"+b.Name == key {
			j, _ := json.Marshal(b)
			out = append(out, string(j))
		}
	}
	return out
}
