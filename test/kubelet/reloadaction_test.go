package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/hack/kubeletnode"
)

// The reload-action e2e tests: a Deployment annotated with
// ripple.dev/reload-action is reloaded by an HTTP call to each of its
// pods, made by the Ripple binary, after ripple.dev/reload-delay, when the
// kubelet has written the changed ConfigMap into the pods' volumes. The
// test serves each pod's endpoint itself, on the pod's address (the fake
// runtime's, in 127.1.0.0/16: Linux routes all of 127.0.0.0/8 to the
// loopback interface), and reads, at each call, the pod's file through
// the kubelet's mount namespace: what the app would read when told to
// reload.

// The annotations the tests write, and the one Ripple writes.
const (
	actionKey         = "ripple.dev/reload-action"
	delayKey          = "ripple.dev/reload-delay"
	fallbackKey       = "ripple.dev/in-place-fallback"
	maxUnavailableKey = "ripple.dev/max-unavailable"
	restartedAtKey    = "ripple.dev/restarted-at"
	revisionKey       = "deployment.kubernetes.io/revision"
)

// The reload-action Deployments' shape: the ConfigMap's key confKey is
// the file confKey in the directory confDir of the container; the
// endpoint is actionPath on a port chosen per test.
const (
	actionReplicas = 6
	actionPath     = "/-/reload"
	confKey        = "app.conf"
	confDir        = "/etc/app"
	oldConf        = "level=old\n"
	newConf        = "level=new\n"
	// reloadDelay is longer than the kubelet's longest wait to rewrite a
	// configMap volume: SyncFrequency (5 s) times 1.5, its jitter.
	reloadDelay = 10 * time.Second
	// callHold is how long a test endpoint takes to answer: long enough
	// that calls made at once are seen in flight together.
	callHold = 500 * time.Millisecond
	// actionDone bounds a reload by action, change to the last call
	// answered: reload-delay, then 6 calls 2 at a time (half a second
	// each), or 3 tries 2 s and 4 s apart; the bound leaves room for a
	// loaded machine.
	actionDone = 2 * time.Minute
)

// TestReloadActionCallsEachPodOnce: a ConfigMap change reloads each of the
// 6 pods of a reload-action Deployment by one successful call of its
// endpoint (the pod whose endpoint fails once by a second one), with the
// annotated method and path, not before restarted-at plus reload-delay,
// each call seeing the new file in the pod's volume, at most
// max-unavailable calls in flight at once; no pod is created, deleted,
// restarted or made not Ready, the template and ReplicaSet do not change,
// and restarted-at is removed at the end.
func TestReloadActionCallsEachPodOnce(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-action")
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, "kubelet-action-", nil)
	ctx := t.Context()

	port := freePort(t)
	cm := createConfigMap(t, cs, ns, "settings", map[string]string{confKey: oldConf})
	dep := createActionDeployment(t, cs, ns, "app", actionReplicas, map[string]string{
		actionKey:         fmt.Sprintf(":%d%s", port, actionPath),
		delayKey:          reloadDelay.String(),
		maxUnavailableKey: fmt.Sprint(maxUnavailable),
	}, actionSpec(node.Name, cm.Name))
	before := waitFleetReady(t, cs, ns, "app", actionReplicas)
	rs := onlyReplicaSet(t, cs, ns, dep.UID)
	e, failing := serveFleet(t, node, listApp(t, cs, ns, "app"), port)
	r := startRipple(t, ns, "")
	w := watchPods(t, cs, ns)
	// Pods that just started are synced by the kubelet at each change of
	// their status, which rewrites their volumes within a second of a
	// ConfigMap change; settled ones once each SyncFrequency (with
	// jitter), the case reload-delay is for. A Ripple calling at once
	// (reload-delay 0s) is seen calling pods whose file is old only after
	// this wait.
	time.Sleep(kubeletnode.SyncFrequency)

	cm.Data[confKey] = newConf
	changed := time.Now()
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	at := restartedAt(t, cs, ns, "app", changed)
	e.waitAnswered(actionDone, actionReplicas)
	r.WaitLog(actionDone, 1, "restart complete")
	waitNoAnnotation(t, cs, ns, "app", restartedAtKey)
	w.sync()

	calls, maxInFlight := e.snapshot()
	t.Logf("restarted-at %s, %d calls from %v to %v after the change, at most %d in flight",
		at.Format(time.RFC3339), len(calls), calls[0].at.Sub(changed).Round(100*time.Millisecond),
		calls[len(calls)-1].at.Sub(changed).Round(100*time.Millisecond), maxInFlight)
	assertCalls(t, calls, failing, at.Add(reloadDelay))
	if maxInFlight > maxUnavailable {
		t.Errorf("%d calls were in flight at once, max-unavailable is %d", maxInFlight, maxUnavailable)
	}
	if n := len(r.Out.Lines("reloaded pod")); n != actionReplicas {
		t.Errorf("Ripple logged %d reloaded pods, expected %d", n, actionReplicas)
	}
	if g := gaps(calls, failing); len(g) != 1 || g[0] < 2*time.Second {
		t.Errorf("the failing pod's endpoint was called again %v after its first call, expected once, 2 s later at the earliest", g)
	}
	assertPodsKept(t, w, before, listApp(t, cs, ns, "app"))
	assertTemplateKept(t, cs, dep, rs)
}

// TestReloadActionFallsBack: pods whose endpoint keeps failing (keep's
// answer 503, evict's refuse the connection) are called 3 times each and
// get a ReloadActionFailed Warning; with in-place-fallback: evict they are
// then evicted and replaced, without it they are left as they are.
func TestReloadActionFallsBack(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-action-fail")
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, "kubelet-action-fail-", nil)
	ctx := t.Context()

	port := freePort(t)
	cm := createConfigMap(t, cs, ns, "settings", map[string]string{confKey: oldConf})
	spec := actionSpec(node.Name, cm.Name)
	ann := map[string]string{actionKey: fmt.Sprintf(":%d%s", port, actionPath), delayKey: "2s"}
	createActionDeployment(t, cs, ns, "keep", 2, ann, spec)
	ann[fallbackKey] = "evict"
	createActionDeployment(t, cs, ns, "evict", 2, ann, spec)
	keep := waitFleetReady(t, cs, ns, "keep", 2)
	evict := waitFleetReady(t, cs, ns, "evict", 2)
	names := podNames(append(listApp(t, cs, ns, "keep"), listApp(t, cs, ns, "evict")...)...)
	// keep's endpoints answer 503; nothing listens at evict's.
	e := newEndpoints(t, node, 0)
	for _, p := range listApp(t, cs, ns, "keep") {
		e.serve(p.Status.PodIP, port, "", func(int) int { return http.StatusServiceUnavailable })
	}
	r := startRipple(t, ns, "")
	w := watchPods(t, cs, ns)

	cm.Data[confKey] = newConf
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.WaitLog(actionDone, 2, "restart complete")
	waitFleet(t, cs, ns, "evict", 2, func(p *corev1.Pod) bool { return !evict[p.UID] && kit.PodReady(p) })
	keepNotes := waitEvents(t, cs, ns, "keep", "ReloadActionFailed", 2)
	evictNotes := waitEvents(t, cs, ns, "evict", "ReloadActionFailed", 2)
	waitNoAnnotation(t, cs, ns, "keep", restartedAtKey)
	waitNoAnnotation(t, cs, ns, "evict", restartedAtKey)
	w.sync()

	assertNotes(t, keepNotes, keep, names, "failed 3 times", "keeps its old configuration")
	assertNotes(t, evictNotes, evict, names, "failed 3 times", "evicting it instead")
	assertDeleted(t, w.snapshot().deleted, keep, evict)
	for _, p := range listApp(t, cs, ns, "keep") {
		if !keep[p.UID] || restartCount(&p) != 0 {
			t.Errorf("pod %s (%s) of keep, which has no fallback, is new or restarted (%d restarts)", p.Name, p.UID, restartCount(&p))
		}
	}
	calls, _ := e.snapshot()
	assertTries(t, calls, listApp(t, cs, ns, "keep"))
	t.Logf("keep's Warning: %s", keepNotes[0])
	t.Logf("evict's Warning: %s", evictNotes[0])
	if n := len(r.Out.Lines("reloaded pod")); n != 0 {
		t.Errorf("Ripple logged %d reloaded pods, none answered 2xx", n)
	}
}

// TestReloadActionRefusesEnv: a Deployment with a reload action whose
// container reads the changed ConfigMap through envFrom cannot be reloaded
// by it: an InvalidAnnotation Warning names the annotation, and the change
// rolls as a template write (a new ReplicaSet, whose pods run the new
// value); no endpoint is called.
func TestReloadActionRefusesEnv(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-action-env")
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, "kubelet-action-env-", nil)
	ctx := t.Context()

	port := freePort(t)
	cm := createConfigMap(t, cs, ns, "settings", map[string]string{"GREETING": "hello-old", confKey: oldConf})
	spec := actionSpec(node.Name, cm.Name)
	spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}
	dep := createActionDeployment(t, cs, ns, "app", 2, map[string]string{
		actionKey: fmt.Sprintf(":%d%s", port, actionPath), delayKey: "2s"}, spec)
	before := waitFleetReady(t, cs, ns, "app", 2)
	rs := onlyReplicaSet(t, cs, ns, dep.UID)
	e := newEndpoints(t, node, 0)
	for _, p := range listApp(t, cs, ns, "app") {
		e.serve(p.Status.PodIP, port, "", func(int) int { return http.StatusOK })
	}
	r := startRipple(t, ns, "")

	cm.Data["GREETING"] = "hello-new"
	changed := time.Now()
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	notes := waitEvents(t, cs, ns, "app", "InvalidAnnotation", 1)
	replaced := waitFleet(t, cs, ns, "app", 2, func(p *corev1.Pod) bool { return !before[p.UID] && kit.PodReady(p) })
	// A call would come reload-delay after the change at the earliest;
	// the wait leaves a few seconds more.
	time.Sleep(time.Until(changed.Add(5 * time.Second)))

	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, actionKey) && strings.Contains(n, "environment variables")
	}) {
		t.Errorf("the InvalidAnnotation Warnings say %q: expected one naming %s and why (environment variables)", notes, actionKey)
	}
	t.Logf("InvalidAnnotation: %q", notes)
	assertRolled(t, cs, dep, rs)
	assertRecords(t, node, replaced, "hello-new", "")
	if calls, _ := e.snapshot(); len(calls) > 0 {
		t.Errorf("%d calls of the reload endpoints: expected none, the action is refused (%+v)", len(calls), calls)
	}
	if n := len(r.Out.Lines("reload action failed")) + len(r.Out.Lines("reloaded pod")); n > 0 {
		t.Errorf("Ripple logged %d reload-action calls; expected none", n)
	}
}

// actionSpec is a pod on node mounting the ConfigMap cm as a volume at
// confDir (no env, no subPath), with a readiness probe (see inPlaceSpec).
func actionSpec(node, cm string) corev1.PodSpec {
	spec := podSpec(node)
	c := &spec.Containers[0]
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(inPlaceRequests), corev1.ResourceMemory: resource.MustParse("16Mi")}
	c.Resources = corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 1, PeriodSeconds: 1,
	}
	spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: confDir}}
	return spec
}

// createActionDeployment creates a Deployment that reloads on changes of
// the configs it references, with annotations added and no restart
// method: what the reload action falls back to is the template write.
func createActionDeployment(t testing.TB, cs kubernetes.Interface, ns, name string, n int32, annotations map[string]string, spec corev1.PodSpec) *appsv1.Deployment {
	t.Helper()
	ann := map[string]string{"reloader.stakater.com/auto": "true"}
	for k, v := range annotations {
		ann[k] = v
	}
	labels := map[string]string{"app": name}
	dep, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// freePort returns a TCP port free on 127.0.0.1 now, for the endpoints:
// the pods' addresses are fresh, so it is free on them too.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		t.Fatalf("listener address %v", ln.Addr())
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr.Port
}

// serveFleet serves the endpoint of each of pods at port, each call
// reading the pod's file confKey; the pod with the first name answers 500
// to its first call, the others 200. It returns the endpoints and the
// failing pod's address.
func serveFleet(t *testing.T, node *kubeletnode.Node, pods []corev1.Pod, port int) (*endpoints, string) {
	t.Helper()
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	e := newEndpoints(t, node, callHold)
	failing := pods[0].Status.PodIP
	for i := range pods {
		p := &pods[i]
		file := mountAt(t, waitRecord(t, node, p, 0), confDir).HostPath + "/" + confKey
		if b, err := node.ReadFile(file); err != nil || string(b) != oldConf {
			t.Fatalf("pod %s's %s holds %q (%v), expected %q", p.Name, file, b, err, oldConf)
		}
		answer := func(int) int { return http.StatusOK }
		if p.Status.PodIP == failing {
			answer = func(n int) int {
				if n == 1 {
					return http.StatusInternalServerError
				}
				return http.StatusOK
			}
		}
		e.serve(p.Status.PodIP, port, file, answer)
	}
	return e, failing
}

// actionCall is one call of a test endpoint.
type actionCall struct {
	ip, method, path string
	at               time.Time // when it arrived
	status           int       // the answer
	file             string    // the pod's file when it arrived, or why it could not be read
}

// endpoints are the test's reload endpoints, one server per pod address;
// each records its calls.
type endpoints struct {
	t    *testing.T
	node *kubeletnode.Node
	hold time.Duration

	mu          sync.Mutex
	calls       []actionCall
	count       map[string]int // calls arrived, by address
	inFlight    int
	maxInFlight int
	moved       chan struct{} // closed, and replaced, at each answer
}

func newEndpoints(t *testing.T, node *kubeletnode.Node, hold time.Duration) *endpoints {
	return &endpoints{t: t, node: node, hold: hold, count: map[string]int{}, moved: make(chan struct{})}
}

// serve listens on ip:port (ip must be a loopback address) until the test
// ends. Each call is answered after e.hold with the status answer gives
// for the call's number at ip (1 for the first); file, when not empty, is
// read in the kubelet's mount namespace as the call arrives.
func (e *endpoints) serve(ip string, port int, file string, answer func(n int) int) {
	e.t.Helper()
	if a := net.ParseIP(ip); a == nil || !a.IsLoopback() {
		e.t.Fatalf("pod address %q is not a loopback address: the test serves only on loopback", ip)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		e.t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := actionCall{ip: ip, method: r.Method, path: r.URL.RequestURI(), at: time.Now()}
		e.mu.Lock()
		e.count[ip]++
		n := e.count[ip]
		e.inFlight++
		e.maxInFlight = max(e.maxInFlight, e.inFlight)
		e.mu.Unlock()
		if file != "" {
			b, err := e.node.ReadFile(file)
			c.file = string(b)
			if err != nil {
				c.file = "error: " + err.Error()
			}
		}
		select {
		case <-time.After(e.hold):
		case <-r.Context().Done():
		}
		c.status = answer(n)
		e.mu.Lock()
		e.inFlight--
		e.calls = append(e.calls, c)
		close(e.moved)
		e.moved = make(chan struct{})
		e.mu.Unlock()
		w.WriteHeader(c.status)
	})}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.t.Errorf("serving %s: %v", ln.Addr(), err)
		}
	}()
	e.t.Cleanup(func() { _ = srv.Close() })
}

// snapshot returns the calls answered so far, in the order they were
// answered, and the most calls in flight at once.
func (e *endpoints) snapshot() ([]actionCall, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls), e.maxInFlight
}

// waitAnswered waits until n addresses have answered a call 2xx.
func (e *endpoints) waitAnswered(timeout time.Duration, n int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), timeout)
	defer cancel()
	for {
		e.mu.Lock()
		ok := map[string]bool{}
		for _, c := range e.calls {
			if c.status/100 == 2 {
				ok[c.ip] = true
			}
		}
		moved := e.moved
		e.mu.Unlock()
		if len(ok) >= n {
			return
		}
		select {
		case <-moved:
		case <-ctx.Done():
			e.t.Fatalf("%d pods' endpoints answered a call 2xx within %v, expected %d", len(ok), timeout, n)
		}
	}
}

// assertCalls checks the calls of TestReloadActionCallsEachPodOnce: POST
// actionPath, none before notBefore, each seeing the new file; one per
// address, answered 200, but at failing: a 500, then a 200.
func assertCalls(t *testing.T, calls []actionCall, failing string, notBefore time.Time) {
	t.Helper()
	byIP := map[string][]int{}
	for _, c := range calls {
		byIP[c.ip] = append(byIP[c.ip], c.status)
		if c.method != http.MethodPost || c.path != actionPath {
			t.Errorf("pod %s was called %s %s, expected POST %s", c.ip, c.method, c.path, actionPath)
		}
		if c.at.Before(notBefore) {
			t.Errorf("pod %s was called at %s, before restarted-at plus reload-delay (%s)", c.ip, c.at.Format(time.RFC3339Nano), notBefore.Format(time.RFC3339Nano))
		}
		if c.file != newConf {
			t.Errorf("pod %s was called while its file held %q, expected the new %q", c.ip, c.file, newConf)
		}
	}
	if len(byIP) != actionReplicas {
		t.Errorf("%d pods were called, expected %d: %v", len(byIP), actionReplicas, byIP)
	}
	for ip, got := range byIP {
		want := []int{http.StatusOK}
		if ip == failing {
			want = []int{http.StatusInternalServerError, http.StatusOK}
		}
		if !slices.Equal(got, want) {
			t.Errorf("pod %s's endpoint answered %v, expected %v", ip, got, want)
		}
	}
}

// gaps returns the times between the calls at ip, in order.
func gaps(calls []actionCall, ip string) []time.Duration {
	var out []time.Duration
	var last time.Time
	for _, c := range calls {
		if c.ip != ip {
			continue
		}
		if !last.IsZero() {
			out = append(out, c.at.Sub(last))
		}
		last = c.at
	}
	return out
}

// assertTries checks the calls of pods, whose endpoints answer 503: POST
// actionPath, 3 tries for each, the second at least 2 s after the first,
// the third at least 4 s after the second.
func assertTries(t *testing.T, calls []actionCall, pods []corev1.Pod) {
	t.Helper()
	for _, c := range calls {
		if c.status != http.StatusServiceUnavailable || c.method != http.MethodPost || c.path != actionPath {
			t.Errorf("call %+v: expected POST %s, answered 503", c, actionPath)
		}
	}
	for _, p := range pods {
		g := gaps(calls, p.Status.PodIP)
		t.Logf("pod %s's endpoint was called %d times, %v apart", p.Name, len(g)+1, g)
		if len(g) != 2 {
			t.Errorf("the endpoint of pod %s (%s) was called %d times, expected 3 tries", p.Name, p.Status.PodIP, len(g)+1)
		} else if g[0] < 2*time.Second || g[1] < 4*time.Second {
			t.Errorf("the tries at pod %s were %v apart, expected at least 2 s, then 4 s", p.Name, g)
		}
	}
}

// assertPodsKept checks that the watch w saw no pod created, deleted or
// not Ready, and that pods are those of before, their containers never
// restarted.
func assertPodsKept(t *testing.T, w *podWatch, before map[types.UID]bool, pods []corev1.Pod) {
	t.Helper()
	s := w.snapshot()
	if len(s.added) > 0 || len(s.deleted) > 0 || s.maxNotReady > 0 {
		t.Errorf("pods were created (%v), deleted (%v) or not Ready (%d at most at once); a reload action touches no pod", s.added, s.deleted, s.maxNotReady)
	}
	if len(pods) != len(before) {
		t.Errorf("the Deployment has %d pods, expected %d", len(pods), len(before))
	}
	for _, p := range pods {
		if !before[p.UID] || restartCount(&p) != 0 {
			t.Errorf("pod %s (%s) is new or its container restarted (%d restarts)", p.Name, p.UID, restartCount(&p))
		}
	}
}

// assertRolled checks that dep rolled once as a template write: revision
// 2, no restarted-at, its ReplicaSet rs and one new one.
func assertRolled(t *testing.T, cs kubernetes.Interface, dep *appsv1.Deployment, rs types.UID) {
	t.Helper()
	after, err := cs.AppsV1().Deployments(dep.Namespace).Get(t.Context(), dep.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev := after.Annotations[revisionKey]; rev != "2" {
		t.Errorf("the Deployment's revision is %q, expected 2 (one template write)", rev)
	}
	if _, ok := after.Annotations[restartedAtKey]; ok {
		t.Errorf("the Deployment has %s: expected a template write, not a pod restart", restartedAtKey)
	}
	rss, err := kit.ReplicaSets(t.Context(), cs, dep.Namespace, dep.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rss) != 2 || !slices.ContainsFunc(rss, func(x appsv1.ReplicaSet) bool { return x.UID == rs }) {
		t.Errorf("the Deployment has %d ReplicaSets, expected the one it had and a new one", len(rss))
	}
}

// onlyReplicaSet returns the UID of the one ReplicaSet of the Deployment
// uid.
func onlyReplicaSet(t *testing.T, cs kubernetes.Interface, ns string, uid types.UID) types.UID {
	t.Helper()
	rss, err := kit.ReplicaSets(t.Context(), cs, ns, uid)
	if err != nil || len(rss) != 1 {
		t.Fatalf("the Deployment has %d ReplicaSets (%v), expected one", len(rss), err)
	}
	return rss[0].UID
}

// assertTemplateKept checks that dep's template is what it was and that
// it has its one ReplicaSet rs, and no other.
func assertTemplateKept(t *testing.T, cs kubernetes.Interface, dep *appsv1.Deployment, rs types.UID) {
	t.Helper()
	after, err := cs.AppsV1().Deployments(dep.Namespace).Get(t.Context(), dep.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(after.Spec.Template, dep.Spec.Template) {
		t.Errorf("the Deployment's template changed:\n%+v\nwas\n%+v", after.Spec.Template, dep.Spec.Template)
	}
	if rss, err := kit.ReplicaSets(t.Context(), cs, dep.Namespace, dep.UID); err != nil {
		t.Fatal(err)
	} else if len(rss) != 1 || rss[0].UID != rs {
		t.Errorf("the Deployment has %d ReplicaSets, expected the one it had", len(rss))
	}
}

// restartedAt waits for Ripple's restarted-at on the Deployment name and
// returns it; it must not be before changed, the change's time (to the
// second: the annotation has no fraction).
func restartedAt(t *testing.T, cs kubernetes.Interface, ns, name string, changed time.Time) time.Time {
	t.Helper()
	var v string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, eventTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v = d.Annotations[restartedAtKey]
		return v != "", nil
	})
	if err != nil {
		t.Fatalf("no %s on the Deployment %s within %v: %v", restartedAtKey, name, eventTimeout, err)
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Fatalf("%s is %q: %v", restartedAtKey, v, err)
	}
	if at.Before(changed.Truncate(time.Second)) || at.After(time.Now()) {
		t.Errorf("%s is %s, expected a time from the change (%s) to now", restartedAtKey, v, changed.Format(time.RFC3339Nano))
	}
	return at
}

// waitNoAnnotation waits until the Deployment name has no annotation key.
func waitNoAnnotation(t *testing.T, cs kubernetes.Interface, ns, name, key string) {
	t.Helper()
	var v string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, eventTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v = d.Annotations[key]
		return v == "", nil
	})
	if err != nil {
		t.Fatalf("the Deployment %s still has %s=%q after %v: %v", name, key, v, eventTimeout, err)
	}
}

// waitEvents waits for n Warnings with reason on the Deployment name and
// returns their notes.
func waitEvents(t *testing.T, cs kubernetes.Interface, ns, name, reason string, n int) []string {
	t.Helper()
	var notes []string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, eventTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = kit.EventNotes(ctx, cs, ns, kit.EventMatch{Kind: "Deployment", Name: name, Reason: reason, Type: corev1.EventTypeWarning})
		return len(notes) >= n, err
	})
	if err != nil {
		t.Fatalf("the Deployment %s has %d %s Warnings after %v, expected %d: %v (%q)", name, len(notes), reason, eventTimeout, n, err, notes)
	}
	return notes
}

// assertNotes checks that notes, the ReloadActionFailed Warnings of a
// Deployment whose pods were uids (names gives each one's name), are one
// per pod, each naming its pod and saying each of says.
func assertNotes(t *testing.T, notes []string, uids map[types.UID]bool, names map[types.UID]string, says ...string) {
	t.Helper()
	if len(notes) != len(uids) {
		t.Errorf("%d ReloadActionFailed Warnings, expected one per pod (%d): %q", len(notes), len(uids), notes)
	}
	for uid := range uids {
		name := names[uid]
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "pod "+name+" ") }) {
			t.Errorf("no ReloadActionFailed Warning names pod %s: %q", name, notes)
		}
	}
	for _, n := range notes {
		for _, s := range says {
			if !strings.Contains(n, s) {
				t.Errorf("the ReloadActionFailed Warning %q does not say %q", n, s)
			}
		}
	}
}

// assertDeleted checks deleted, the pods a watch saw deleted: none of
// keep, each of evict.
func assertDeleted(t *testing.T, deleted []string, keep, evict map[types.UID]bool) {
	t.Helper()
	for uid := range keep {
		if slices.ContainsFunc(deleted, func(d string) bool { return strings.Contains(d, string(uid)) }) {
			t.Errorf("pod %s of keep, which has no fallback, was deleted", uid)
		}
	}
	for uid := range evict {
		if !slices.ContainsFunc(deleted, func(d string) bool { return strings.Contains(d, string(uid)) }) {
			t.Errorf("pod %s of evict was not seen deleted: %v", uid, deleted)
		}
	}
}

// podNames returns the names of pods by UID.
func podNames(pods ...corev1.Pod) map[types.UID]string {
	out := map[types.UID]string{}
	for _, p := range pods {
		out[p.UID] = p.Name
	}
	return out
}
