package controller

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/workload"
)

// actionWorld is an inPlaceWorld whose Deployment web mounts ConfigMap cfg
// as a volume and reloads by the action "POST :reload/-/reload" 10 s after
// a change; each pod web-i serves its endpoint on its own loopback port
// (its container's port named reload), answering as codes[pod] says
// (200 when unset), and every call is recorded.
type actionWorld struct {
	*inPlaceWorld
	mu sync.Mutex
	// calls are the pods called, in order; codes are the answers.
	calls []string
	codes map[string]int
	// hold, when set, holds every answer until it is closed: pods that
	// accept the call and do not answer.
	hold chan struct{}
}

func newActionWorld(t *testing.T, n int32, ann map[string]string) *actionWorld {
	t.Helper()
	aw := &actionWorld{codes: map[string]int{}}
	ports := map[string]int32{}
	for i := range n {
		name := fmt.Sprintf("web-%d", i)
		ports[name] = aw.serve(t, name)
	}
	w := newPodWorld(t, n, interceptor.Funcs{}, func(d *appsv1.Deployment, k annotation.Keys) {
		d.Annotations[k.ReloadAction], d.Annotations[k.ReloadDelay] = "POST :reload/-/reload", "10s"
		for key, v := range ann {
			d.Annotations[key] = v
		}
		volumeOf(&d.Spec.Template.Spec)
	}, func(p *corev1.Pod) {
		p.Status.PodIP = "127.0.0.1"
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "reload", ContainerPort: ports[p.Name]}}
	})
	w.deps.Calls = ActionClient()
	aw.inPlaceWorld = w
	return aw
}

// serve starts pod name's endpoint on 127.0.0.1 and returns its port.
func (aw *actionWorld) serve(t *testing.T, name string) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		aw.mu.Lock()
		aw.calls = append(aw.calls, name+" "+r.Method+" "+r.URL.Path)
		code, hold := aw.codes[name], aw.hold
		aw.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
		if code == 0 {
			code = http.StatusOK
		}
		rw.WriteHeader(code)
	})}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { _ = srv.Close() })
	return int32(l.Addr().(*net.TCPAddr).Port) //nolint:gosec // a port
}

func (aw *actionWorld) called() []string {
	aw.mu.Lock()
	defer aw.mu.Unlock()
	return append([]string(nil), aw.calls...)
}

// volumeOf makes the container of s read ConfigMap cfg as a whole volume,
// not as its environment.
func volumeOf(s *corev1.PodSpec) {
	s.Containers[0].EnvFrom = nil
	s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/app"}}
	s.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}
}

// A change under a reload action writes no template: the record and the
// restart time. No pod is called before reload-delay; then each Ready pod
// is called once, one at a time (max-unavailable 1), with the method and
// path annotated; no pod is deleted; the restart time is removed at the
// end, and Reloaded names the action.
func TestReloadActionCallsEachPodOnce(t *testing.T) {
	aw := newActionWorld(t, 3, nil)
	keys := aw.deps.Settings.Keys
	aw.change("Deployment", "v2")
	aw.reconcile("Deployment", "web")
	if aw.applied("web") != "" {
		t.Fatal("the template was written")
	}
	if _, ok := aw.webAnnotations()[keys.RestartedAt]; !ok {
		t.Fatal("no restarted-at on the Deployment")
	}
	ev := aw.wantEvent(aw.drain(), string(reason.Reloaded))
	if !strings.Contains(ev, "reload action POST :reload/-/reload, 10s after the change") {
		t.Errorf("Reloaded = %q, want it to name the action and its delay", ev)
	}
	for range 9 {
		aw.step()
	}
	if got := aw.called(); len(got) != 0 {
		t.Fatalf("called %q before reload-delay", got)
	}
	for range 6 {
		aw.step()
	}
	want := []string{"web-0 POST /-/reload", "web-1 POST /-/reload", "web-2 POST /-/reload"}
	if got := aw.called(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("calls = %q, want %q", got, want)
	}
	if _, ok := aw.webAnnotations()[keys.RestartedAt]; ok {
		t.Error("restarted-at is still there after every pod was called")
	}
	if len(aw.deleted) != 0 {
		t.Errorf("pods deleted or evicted: %q", aw.deleted)
	}
}

// Pods that accept the call and do not answer hold no reconcile worker:
// the step that calls them returns with the calls in flight, the next
// step calls none of them again, and once they answer the restart
// completes.
func TestReloadActionHoldsNoWorker(t *testing.T) {
	aw := newActionWorld(t, 3, map[string]string{"ripple.dev/max-unavailable": "3"})
	aw.hold = make(chan struct{})
	aw.change("Deployment", "v2")
	aw.reconcile("Deployment", "web")
	aw.clk.Step(10 * time.Second)
	k := workload.Ref{Kind: "Deployment", Namespace: ns, Name: "web"}
	if _, err := aw.deps.restarts.Reconcile(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	inFlight := func() int {
		aw.deps.Memory.mu.Lock()
		defer aw.deps.Memory.mu.Unlock()
		return aw.deps.Memory.calling
	}
	// The step returned, its three calls unanswered (held until closed).
	if n := inFlight(); n != 3 {
		t.Fatalf("%d calls in flight after the step returned, want 3", n)
	}
	aw.clk.Step(time.Second)
	if _, err := aw.deps.restarts.Reconcile(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if n := inFlight(); n != 3 {
		t.Fatalf("%d calls in flight after a second step, want the same 3", n)
	}
	close(aw.hold)
	aw.deps.Memory.calls.Wait()
	if got := aw.called(); len(got) != 3 {
		t.Fatalf("calls %q, want one per pod", got)
	}
	aw.step()
	if _, ok := aw.webAnnotations()[aw.deps.Settings.Keys.RestartedAt]; ok {
		t.Error("the restart did not complete once every pod answered")
	}
}

// With max-unavailable 2 the calls go two at a time: two steps call all
// three pods.
func TestReloadActionPace(t *testing.T) {
	aw := newActionWorld(t, 3, map[string]string{"ripple.dev/max-unavailable": "2"})
	aw.change("Deployment", "v2")
	aw.reconcile("Deployment", "web")
	aw.clk.Step(10 * time.Second)
	aw.step()
	if got := aw.called(); len(got) != 2 {
		t.Fatalf("first step called %q, want 2 pods", got)
	}
	aw.step()
	if got := aw.called(); len(got) != 3 {
		t.Fatalf("second step: calls %q, want 3", got)
	}
}

// A pod whose endpoint fails is called again 2 s, then 4 s later; after
// its third failure it gets one ReloadActionFailed Warning and, without a
// fallback, is left as it is while the restart completes.
func TestReloadActionRetriesThenTells(t *testing.T) {
	aw := newActionWorld(t, 2, nil)
	aw.codes["web-0"] = http.StatusServiceUnavailable
	aw.change("Deployment", "v2")
	aw.reconcile("Deployment", "web")
	aw.drain()
	aw.clk.Step(10 * time.Second)
	for range 12 {
		aw.step()
	}
	tries := 0
	for _, c := range aw.called() {
		if strings.HasPrefix(c, "web-0 ") {
			tries++
		}
	}
	if tries != actionTries {
		t.Errorf("web-0 called %d times, want %d (calls %q)", tries, actionTries, aw.called())
	}
	ev := aw.wantEvent(aw.drain(), string(reason.ReloadActionFailed))
	for _, want := range []string{"pod web-0", "POST :reload/-/reload", "503", "keeps its old configuration"} {
		if !strings.Contains(ev, want) {
			t.Errorf("ReloadActionFailed = %q, want it to say %q", ev, want)
		}
	}
	if _, ok := aw.webAnnotations()[aw.deps.Settings.Keys.RestartedAt]; ok {
		t.Error("the restart did not complete without the pod that failed")
	}
	if len(aw.deleted) != 0 {
		t.Errorf("pods deleted or evicted without a fallback: %q", aw.deleted)
	}
}

// With in-place-fallback evict a hostNetwork pod is never called and is
// evicted at once, and a pod whose endpoint keeps failing is evicted
// after its third failure (once the first one's replacement is Ready).
func TestReloadActionFallsBackToEviction(t *testing.T) {
	aw := newActionWorld(t, 2, map[string]string{"ripple.dev/in-place-fallback": workload.FallbackEvict})
	aw.codes["web-1"] = http.StatusInternalServerError
	p := aw.getPod("web-0")
	p.Spec.HostNetwork = true
	if err := aw.c.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	aw.change("Deployment", "v2")
	aw.reconcile("Deployment", "web")
	aw.drain()
	aw.clk.Step(10 * time.Second)
	aw.step()
	if strings.Join(aw.deleted, ",") != "web-0" {
		t.Fatalf("evicted %q, want the hostNetwork pod web-0 first", aw.deleted)
	}
	aw.inPlacePod("web-0-new", func(p *corev1.Pod) { p.CreationTimestamp.Time = aw.clk.Now() })
	for range 12 {
		aw.step()
	}
	for _, c := range aw.called() {
		if !strings.HasPrefix(c, "web-1 ") {
			t.Errorf("called %q: only web-1 has an endpoint to call", c)
		}
	}
	if got := strings.Join(aw.deleted, ","); !strings.Contains(got, "web-0") || !strings.Contains(got, "web-1") {
		t.Errorf("evicted %q, want web-0 and web-1", aw.deleted)
	}
	var warned []string
	for _, e := range aw.drain() {
		if strings.Contains(e, string(reason.ReloadActionFailed)) {
			warned = append(warned, e)
			if !strings.Contains(e, "evicting it instead") {
				t.Errorf("ReloadActionFailed = %q, want it to say the pod is evicted", e)
			}
		}
	}
	if len(warned) != 2 {
		t.Errorf("ReloadActionFailed Events %q, want one per pod", warned)
	}
}

// A Deployment reading its ConfigMap as environment variables cannot be
// reloaded by an action: an InvalidAnnotation Warning names the
// annotation and why, no pod is called, and the change is written on the
// template (its restart method).
func TestReloadActionRefusedForEnv(t *testing.T) {
	aw := newActionWorld(t, 1, nil)
	d := &appsv1.Deployment{}
	if err := aw.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Volumes = nil
	d.Spec.Template.Spec.Containers[0].VolumeMounts = nil
	d.Spec.Template.Spec.Containers[0].EnvFrom = deployment("web").Spec.Template.Spec.Containers[0].EnvFrom
	if err := aw.c.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	aw.change("Deployment", "v2")
	aw.reconcile("Deployment", "web")
	events := aw.drain()
	ev := aw.wantEvent(events, string(reason.InvalidAnnotation))
	for _, want := range []string{aw.deps.Settings.Keys.ReloadAction, "environment variables", `restart method "template"`} {
		if !strings.Contains(ev, want) {
			t.Errorf("InvalidAnnotation = %q, want it to say %q", ev, want)
		}
	}
	if aw.applied("web") == "" {
		t.Error("the change was not written on the template")
	}
	aw.clk.Step(time.Minute)
	aw.step()
	if got := aw.called(); len(got) != 0 {
		t.Errorf("called %q", got)
	}
}

// A reload action goes to the pod itself: no proxy, even with HTTP_PROXY
// set, and no redirect followed (a 3xx is a failure, and its target is
// never called).
func TestActionClientGoesDirect(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	var followed atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/reload", func(rw http.ResponseWriter, r *http.Request) { http.Redirect(rw, r, "/elsewhere", http.StatusFound) })
	mux.HandleFunc("/elsewhere", func(http.ResponseWriter, *http.Request) { followed.Store(true) })
	mux.HandleFunc("/ok", func(http.ResponseWriter, *http.Request) {})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: mux}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { _ = srv.Close() })
	r := &Reconciler{Deps: &Deps{Calls: ActionClient()}}
	base := "http://" + l.Addr().String()
	if err := r.callPod(t.Context(), http.MethodPost, base+"/ok"); err != nil {
		t.Errorf("a 200 through no proxy: %v", err)
	}
	err = r.callPod(t.Context(), http.MethodPost, base+"/reload")
	if err == nil || !strings.Contains(err.Error(), "302") || followed.Load() {
		t.Errorf("a redirect: %v, followed %v; want a failure naming 302, not followed", err, followed.Load())
	}
}
