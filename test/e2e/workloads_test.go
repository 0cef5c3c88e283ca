package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// Annotation keys the tests set or read. They are spelled out rather than
// taken from Ripple's packages: they are the public contract.
const (
	autoAnnotation        = "reloader.stakater.com/auto"
	configMapReloadAnnot  = "configmap.reloader.stakater.com/reload"
	secretReloadAnnot     = "secret.reloader.stakater.com/reload"
	appliedAnnotation     = "ripple.dev/applied"
	lastReloadedFromAnnot = "reloader.stakater.com/last-reloaded-from"
)

// Replicas of the test workloads; a DaemonSet runs one pod per fake node.
const (
	defaultReplicas         = int32(2)
	statefulSetReplicaCount = int32(3)
)

// quiet is how long a negative check watches for a rollout that must not
// happen: three default settle windows. Every negative check is followed by
// a positive one, so a dead Ripple cannot pass it.
const quiet = 3 * time.Second

// afterRollout is how long a positive check watches for a second rollout
// after the expected one completed: two default settle windows, enough for
// Ripple to react to its own write.
const afterRollout = 2 * time.Second

// workload names one workload of the cluster.
type workload struct {
	kind     *kit.WorkloadKind
	ns, name string
}

func (w workload) String() string { return fmt.Sprintf("%s %s/%s", w.kind, w.ns, w.name) }

// spec describes the pod template of a test workload: a single container
// that takes the named ConfigMaps and Secrets through envFrom.
type spec struct {
	configMaps, secrets []string
	// mounted are ConfigMaps read as volumes too.
	mounted []string
	// annotations go on the workload metadata, e.g. autoAnnotation.
	annotations map[string]string
	// env is extra env on the container, e.g. Reloader's STAKATER_ vars.
	env []corev1.EnvVar
}

func auto() map[string]string { return map[string]string{autoAnnotation: "true"} }

func (s spec) template(app string) corev1.PodTemplateSpec {
	tpl := podTemplate(app)
	c := &tpl.Spec.Containers[0]
	for _, name := range s.configMaps {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
	for _, name := range s.secrets {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
	for _, name := range s.mounted {
		tpl.Spec.Volumes = append(tpl.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/etc/" + name})
	}
	c.Env = append(c.Env, s.env...)
	return tpl
}

// create creates the workload: 2 replicas for a Deployment, 3 for a
// StatefulSet, one pod per fake node for a DaemonSet.
func (w workload) create(t *testing.T, cs kubernetes.Interface, s spec) {
	t.Helper()
	meta := metav1.ObjectMeta{Name: w.name, Annotations: s.annotations}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.name}}
	var (
		obj runtime.Object
		err error
	)
	switch w.kind {
	case kit.Deployment:
		obj, err = cs.AppsV1().Deployments(w.ns).Create(t.Context(), &appsv1.Deployment{
			ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(defaultReplicas),
				Selector: selector,
				Template: s.template(w.name),
			},
		}, metav1.CreateOptions{})
	case kit.StatefulSet:
		obj, err = cs.AppsV1().StatefulSets(w.ns).Create(t.Context(), &appsv1.StatefulSet{
			ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To(statefulSetReplicaCount),
				ServiceName: w.name,
				Selector:    selector,
				Template:    s.template(w.name),
			},
		}, metav1.CreateOptions{})
	case kit.DaemonSet:
		obj, err = cs.AppsV1().DaemonSets(w.ns).Create(t.Context(), &appsv1.DaemonSet{
			ObjectMeta: meta,
			Spec: appsv1.DaemonSetSpec{
				Selector: selector,
				Template: s.template(w.name),
			},
		}, metav1.CreateOptions{})
	default:
		t.Fatalf("unknown kind %q", w.kind)
	}
	if err != nil {
		t.Fatalf("creating %s: %v", w, err)
	}
	watchTemplate(t, cs, w, obj)
}

// snapshot is what the tests observe of a workload.
type snapshot struct {
	uid             types.UID
	generation      int64
	resourceVersion string
	annotations     map[string]string
	template        corev1.PodTemplateSpec
	// templates counts the pod-template changes since the workload was
	// created, seen one by one through a watch: every rollout Ripple
	// starts, however close to another one.
	templates int
	// revisions counts the rollouts the workload controller made:
	// ReplicaSets of a Deployment, ControllerRevisions of a StatefulSet or
	// DaemonSet.
	revisions int
	// complete: the controller has seen the latest generation, every pod
	// runs the latest template and is Ready, and no old pod is left.
	complete bool
	status   string // for failure messages
}

// observe reads w. The revisions are read before the object, so the object
// is never older than the rollouts they count. The pod-template changes
// are those the watch counted up to the object's resourceVersion, once the
// watch has caught up with it: the count and the template read describe
// the same object, however late the watch delivers.
func (w workload) observe(ctx context.Context, cs kubernetes.Interface) (snapshot, error) {
	var s snapshot
	tw, err := templateWatchOf(w)
	if err != nil {
		return s, err
	}
	if w.kind == kit.Deployment {
		rss, err := kit.ReplicaSets(ctx, cs, w.ns, tw.uid)
		if err != nil {
			return s, err
		}
		s.revisions = len(rss)
	} else {
		revs, err := ownedRevisions(ctx, cs, w.ns, tw.uid)
		if err != nil {
			return s, err
		}
		s.revisions = len(revs)
	}

	var obj metav1.Object
	switch w.kind {
	case kit.Deployment:
		d, err := cs.AppsV1().Deployments(w.ns).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return s, err
		}
		obj, s.template = d, d.Spec.Template
		want, st := ptr.Deref(d.Spec.Replicas, 1), d.Status
		s.complete = st.ObservedGeneration >= d.Generation && st.Replicas == want && st.UpdatedReplicas == want &&
			st.ReadyReplicas == want && st.AvailableReplicas == want
		s.status = fmt.Sprintf("observedGeneration=%d replicas=%d updated=%d ready=%d available=%d",
			st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas)
	case kit.StatefulSet:
		sts, err := cs.AppsV1().StatefulSets(w.ns).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return s, err
		}
		obj, s.template = sts, sts.Spec.Template
		want, st := ptr.Deref(sts.Spec.Replicas, 1), sts.Status
		s.complete = st.ObservedGeneration >= sts.Generation && st.CurrentRevision == st.UpdateRevision &&
			st.Replicas == want && st.UpdatedReplicas == want && st.ReadyReplicas == want && st.AvailableReplicas == want
		s.status = fmt.Sprintf("observedGeneration=%d current=%s update=%s replicas=%d updated=%d ready=%d",
			st.ObservedGeneration, st.CurrentRevision, st.UpdateRevision, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas)
	case kit.DaemonSet:
		ds, err := cs.AppsV1().DaemonSets(w.ns).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return s, err
		}
		obj, s.template = ds, ds.Spec.Template
		want, st := len(kc.Nodes), ds.Status
		s.complete = st.ObservedGeneration >= ds.Generation && int(st.DesiredNumberScheduled) == want &&
			int(st.CurrentNumberScheduled) == want && int(st.UpdatedNumberScheduled) == want &&
			int(st.NumberReady) == want && int(st.NumberAvailable) == want && st.NumberUnavailable == 0
		s.status = fmt.Sprintf("observedGeneration=%d desired=%d current=%d updated=%d ready=%d available=%d",
			st.ObservedGeneration, st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.UpdatedNumberScheduled,
			st.NumberReady, st.NumberAvailable)
	default:
		return s, fmt.Errorf("unknown kind %q", w.kind)
	}
	s.uid, s.generation, s.resourceVersion = obj.GetUID(), obj.GetGeneration(), obj.GetResourceVersion()
	s.annotations = obj.GetAnnotations()
	if s.uid != tw.uid {
		return s, fmt.Errorf("%s was re-created", w)
	}
	if s.templates, err = tw.countAt(ctx, s.resourceVersion); err != nil {
		return s, err
	}
	if s.complete {
		// Every pod Ready and no old pod left, terminating or not.
		want := map[*kit.WorkloadKind]int{
			kit.Deployment:  int(defaultReplicas),
			kit.StatefulSet: int(statefulSetReplicaCount),
			kit.DaemonSet:   len(kc.Nodes),
		}[w.kind]
		s.complete = readyPods(ctx, cs, w.ns, "app="+w.name) == want && allPods(ctx, cs, w.ns, "app="+w.name) == want
	}
	return s, nil
}

// get returns the current snapshot of w, failing the test on error.
func (w workload) get(t *testing.T, cs kubernetes.Interface) snapshot {
	t.Helper()
	s, err := w.observe(t.Context(), cs)
	if err != nil {
		t.Fatalf("reading %s: %v", w, err)
	}
	return s
}

// allPods counts the pods matching selector, including those being deleted.
func allPods(ctx context.Context, cs kubernetes.Interface, ns, selector string) int {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return -1
	}
	return len(pods.Items)
}

// ownedRevisions returns the ControllerRevisions controlled by the
// StatefulSet or DaemonSet with uid: one per distinct pod template.
func ownedRevisions(ctx context.Context, cs kubernetes.Interface, ns string, owner types.UID) ([]appsv1.ControllerRevision, error) {
	list, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return kit.Controlled(list.Items, owner), nil
}

// waitRolledOut waits until every workload completed its rollout and
// returns their snapshots.
func waitRolledOut(t *testing.T, cs kubernetes.Interface, ws ...workload) map[workload]snapshot {
	t.Helper()
	out := map[workload]snapshot{}
	for _, w := range ws {
		var last snapshot
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			s, err := w.observe(ctx, cs)
			if err != nil {
				return false, err
			}
			last = s
			return s.complete, nil
		})
		if err != nil {
			t.Fatalf("waiting for %s to roll out: %v (last seen: %s)\n%s", w, err, last.status, describe(t.Context(), cs, w))
		}
		out[w] = last
	}
	return out
}

// templateCheck is a condition on a rolled-out pod template.
type templateCheck func(*corev1.PodTemplateSpec) error

// envIs checks that the template sets env var name to value.
func envIs(name, value string) templateCheck {
	return func(tpl *corev1.PodTemplateSpec) error {
		got, ok := envValue(tpl, name)
		if !ok {
			return fmt.Errorf("no env var %s", name)
		}
		if got != value {
			return fmt.Errorf("env var %s=%s, want %s", name, got, value)
		}
		return nil
	}
}

// lastReloadedFrom checks the annotations strategy's pod-template
// annotation: Reloader's JSON naming the config and its new hash.
func lastReloadedFrom(typ, name, hash string) templateCheck {
	return func(tpl *corev1.PodTemplateSpec) error {
		raw, ok := tpl.Annotations[lastReloadedFromAnnot]
		if !ok {
			return fmt.Errorf("no %s annotation on the pod template", lastReloadedFromAnnot)
		}
		var src struct {
			Type, Name, Namespace, Hash string
			ContainerRefs               []string
		}
		if err := json.Unmarshal([]byte(raw), &src); err != nil {
			return fmt.Errorf("%s: %w", lastReloadedFromAnnot, err)
		}
		if src.Type != typ || src.Name != name || src.Hash != hash {
			return fmt.Errorf("%s = %s, want type %s, name %s, hash %s", lastReloadedFromAnnot, raw, typ, name, hash)
		}
		return nil
	}
}

// noStakaterEnv checks that the template has no Reloader env var at all.
func noStakaterEnv(tpl *corev1.PodTemplateSpec) error {
	for _, c := range tpl.Spec.Containers {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "STAKATER_") {
				return fmt.Errorf("unexpected env var %s on container %s", e.Name, c.Name)
			}
		}
	}
	return nil
}

func envValue(tpl *corev1.PodTemplateSpec, name string) (string, bool) {
	for _, c := range tpl.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

// rollouts is what a test expects of one workload since its before
// snapshot: exactly n rollouts, to a template that passes every check.
type rollouts struct {
	before snapshot
	n      int
	checks []templateCheck
}

// expectRollouts waits until every workload rolled out exactly as many
// times as expected since its before snapshot (0 or more), with templates
// that pass the checks, and every rollout completed; then it watches for
// quiet (afterRollout when some rollout was expected) to be sure no
// further rollout follows. It fails as soon as a workload goes past its
// count. It returns the snapshots at the end.
//
// Rollouts are counted by every counter of rolloutCounters: the
// pod-template changes seen through a watch, however close together, the
// revisions the workload controller created, and for StatefulSets and
// DaemonSets the generation.
func expectRollouts(t *testing.T, cs kubernetes.Interface, want map[workload]rollouts) map[workload]snapshot {
	t.Helper()
	ws := slices.SortedFunc(maps.Keys(want), func(a, b workload) int { return strings.Compare(a.String(), b.String()) })
	check := func(ctx context.Context, w workload) (snapshot, bool, error) {
		e := want[w]
		s, err := w.observe(ctx, cs)
		if err != nil {
			return s, false, err
		}
		if s.uid != e.before.uid {
			return s, false, fmt.Errorf("%s was re-created", w)
		}
		done := s.complete
		for name, now := range rolloutCounters(w, s) {
			was := rolloutCounters(w, e.before)[name]
			if now-was > int64(e.n) {
				return s, false, fmt.Errorf("%s rolled %d times by its %s (%d -> %d), want %d\nbefore: template %s\nnow: template %s",
					w, now-was, name, was, now, e.n, toJSON(e.before.template), toJSON(s.template))
			}
			done = done && now-was == int64(e.n)
		}
		if !done {
			return s, false, nil
		}
		for _, c := range e.checks {
			if err := c(&s.template); err != nil {
				return s, false, fmt.Errorf("%s rolled out to a wrong template: %w", w, err)
			}
		}
		return s, true, nil
	}

	out := map[workload]snapshot{}
	for _, w := range ws {
		var last snapshot
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			s, ok, err := check(ctx, w)
			last = s
			return ok, err
		})
		if err != nil {
			t.Fatalf("waiting for %d rollout(s) of %s: %v (last seen: %v, %s)\n%s",
				want[w].n, w, err, rolloutCounters(w, last), last.status, describe(t.Context(), cs, w))
		}
		out[w] = last
	}
	watchFor := quiet
	for _, e := range want {
		if e.n > 0 {
			watchFor = afterRollout
		}
	}
	consistently(t, fmt.Sprintf("no further rollout of %v", ws), watchFor, func(ctx context.Context) error {
		for _, w := range ws {
			s, err := w.observe(ctx, cs)
			if err != nil {
				return err
			}
			if was, now := rolloutCounters(w, out[w]), rolloutCounters(w, s); !maps.Equal(was, now) {
				return fmt.Errorf("%s rolled again: %v -> %v\n%s", w, was, now, describe(t.Context(), cs, w))
			}
		}
		return nil
	})
	return out
}

// expectNoRollout checks for quiet that none of the workloads rolls.
func expectNoRollout(t *testing.T, cs kubernetes.Interface, before map[workload]snapshot) map[workload]snapshot {
	t.Helper()
	want := map[workload]rollouts{}
	for w, s := range before {
		want[w] = rollouts{before: s}
	}
	return expectRollouts(t, cs, want)
}

// rolloutCounters returns the counters of s that grow by one per rollout.
// A Deployment's generation is not one of them: the API server bumps it on
// metadata annotation changes too, because the Deployment controller copies
// annotations to the ReplicaSets.
func rolloutCounters(w workload, s snapshot) map[string]int64 {
	c := map[string]int64{"pod-template changes": int64(s.templates)}
	if w.kind == kit.Deployment {
		c["ReplicaSets"] = int64(s.revisions)
	} else {
		c["ControllerRevisions"] = int64(s.revisions)
		c["generation"] = s.generation
	}
	return c
}

// templateWatches holds the templateWatch of every workload created by
// workload.create.
var templateWatches sync.Map // workload -> *templateWatch

// templateWatch counts a workload's pod-template changes from a watch,
// which delivers every write, so two patches in a row count as two even if
// the workload controller only ever acts on the second. The watch runs
// behind the API server: countAt waits for it to reach a resourceVersion
// before it tells the count there.
type templateWatch struct {
	uid      types.UID // of the object created
	progress *kit.WatchProgress
	mu       sync.Mutex
	// changed holds the resourceVersion of each pod-template change, in
	// order: the count at a resourceVersion is how many are not after it.
	changed []string
}

// watchCatchUp bounds how long countAt waits for the watch to deliver a
// resourceVersion the API server has already served.
const watchCatchUp = 30 * time.Second

// countAt returns how many times the pod template changed up to and
// including resourceVersion rv, once the watch has delivered rv.
func (tw *templateWatch) countAt(ctx context.Context, rv string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, watchCatchUp)
	defer cancel()
	if err := tw.progress.Reached(ctx, rv); err != nil {
		return 0, err
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	n := 0
	for _, at := range tw.changed {
		if c, err := resourceversion.CompareResourceVersion(at, rv); err != nil || c > 0 {
			return n, err
		}
		n++
	}
	return n, nil
}

// saw records an event of the watch at rv, a pod-template change or not.
func (tw *templateWatch) saw(rv string, change bool) {
	if change {
		tw.mu.Lock()
		tw.changed = append(tw.changed, rv)
		tw.mu.Unlock()
	}
	tw.progress.Saw(rv)
}

// watchTemplate starts counting the pod-template changes of w from its
// freshly created object; the watch ends with the test.
func watchTemplate(t *testing.T, cs kubernetes.Interface, w workload, created runtime.Object) {
	t.Helper()
	meta, err := apimeta.Accessor(created)
	if err != nil {
		t.Fatal(err)
	}
	tw := &templateWatch{uid: meta.GetUID(), progress: kit.NewWatchProgress(meta.GetResourceVersion())}
	if _, loaded := templateWatches.LoadOrStore(w, tw); loaded {
		t.Fatalf("%s is created twice", w)
	}
	rv, last := objectTemplate(created)
	ctx := t.Context()
	done := make(chan struct{})
	t.Cleanup(func() { <-done; templateWatches.Delete(w) })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			wi, err := w.watch(ctx, cs, metav1.ListOptions{
				FieldSelector:   "metadata.name=" + w.name,
				ResourceVersion: rv,
			})
			if err != nil {
				if ctx.Err() == nil {
					time.Sleep(100 * time.Millisecond)
				}
				continue
			}
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					var tpl *corev1.PodTemplateSpec
					rv, tpl = objectTemplate(ev.Object)
					changed := tpl != nil && !equality.Semantic.DeepEqual(tpl, last)
					if changed {
						last = tpl
					}
					tw.saw(rv, changed)
				case watch.Error:
					// The only error that matters is a resourceVersion
					// that expired: the count can no longer be exact.
					tw.progress.Fail(fmt.Errorf("watching %s: %w", w, apierrors.FromObject(ev.Object)))
					wi.Stop()
					return
				}
			}
			wi.Stop()
		}
	}()
}

// templateWatchOf returns the templateWatch of w.
func templateWatchOf(w workload) (*templateWatch, error) {
	v, ok := templateWatches.Load(w)
	if !ok {
		return nil, fmt.Errorf("%s was not created by workload.create: its template changes are not counted", w)
	}
	return v.(*templateWatch), nil
}

func (w workload) watch(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (watch.Interface, error) {
	switch w.kind {
	case kit.Deployment:
		return cs.AppsV1().Deployments(w.ns).Watch(ctx, opts)
	case kit.StatefulSet:
		return cs.AppsV1().StatefulSets(w.ns).Watch(ctx, opts)
	case kit.DaemonSet:
		return cs.AppsV1().DaemonSets(w.ns).Watch(ctx, opts)
	}
	return nil, fmt.Errorf("unknown kind %q", w.kind)
}

// objectTemplate returns the resourceVersion and pod template of a
// Deployment, StatefulSet or DaemonSet.
func objectTemplate(obj runtime.Object) (string, *corev1.PodTemplateSpec) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.ResourceVersion, &o.Spec.Template
	case *appsv1.StatefulSet:
		return o.ResourceVersion, &o.Spec.Template
	case *appsv1.DaemonSet:
		return o.ResourceVersion, &o.Spec.Template
	}
	return "", nil
}

// consistently fails the test if cond reports an error at any time during d.
func consistently(t *testing.T, what string, d time.Duration, cond func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := cond(t.Context()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitBaseline waits until Ripple has recorded on w's metadata the digests
// it treats as applied: proof that it has seen the workload and its configs.
func waitBaseline(t *testing.T, cs kubernetes.Interface, w workload, digests ...string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := w.observe(ctx, cs)
		if err != nil {
			return false, err
		}
		last = s.annotations[appliedAnnotation]
		if last == "" {
			return false, nil
		}
		rec := map[string]string{}
		if err := json.Unmarshal([]byte(last), &rec); err != nil {
			return false, fmt.Errorf("%s=%q is not a JSON object of digests: %w", appliedAnnotation, last, err)
		}
		values := slices.Collect(maps.Values(rec))
		for _, d := range digests {
			if !slices.Contains(values, d) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for Ripple's baseline on %s with digests %v: %v (last %s=%q)", w, digests, err, appliedAnnotation, last)
	}
}

// Configs.

func createConfigMap(t *testing.T, cs kubernetes.Interface, ns, name, value string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"VALUE": value},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// createSecret creates the Secret every scenario uses, secretName, with
// PASSWORD=p1.
func createSecret(t *testing.T, cs kubernetes.Interface, ns string) *corev1.Secret {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName},
		Data:       map[string][]byte{"PASSWORD": []byte("p1")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// updateConfigMap reads a ConfigMap, changes it with mutate and writes it
// back; it returns the stored result's Reloader digest.
func updateConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string, mutate func(*corev1.ConfigMap)) string {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mutate(cm)
	cm, err = cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return digest.ConfigMap(cm)
}

// updateSecret is updateConfigMap for secretName.
func updateSecret(t *testing.T, cs kubernetes.Interface, ns string, mutate func(*corev1.Secret)) string {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(t.Context(), secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mutate(s)
	s, err = cs.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return digest.Secret(s)
}

// setConfigMapValue changes a ConfigMap's data and returns its new digest.
func setConfigMapValue(t *testing.T, cs kubernetes.Interface, ns, name, value string) string {
	t.Helper()
	return updateConfigMap(t, cs, ns, name, func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"VALUE": value} })
}

// setSecretValue changes secretName's data and returns its new digest.
func setSecretValue(t *testing.T, cs kubernetes.Interface, ns, value string) string {
	t.Helper()
	return updateSecret(t, cs, ns, func(s *corev1.Secret) { s.Data = map[string][]byte{"PASSWORD": []byte(value)} })
}

// describe renders what a failure message needs to explain a workload's
// state: who wrote it and when, its pods and the nodes.
func describe(ctx context.Context, cs kubernetes.Interface, w workload) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var b strings.Builder
	var obj metav1.Object
	var err error
	switch w.kind {
	case kit.Deployment:
		obj, err = cs.AppsV1().Deployments(w.ns).Get(ctx, w.name, metav1.GetOptions{})
	case kit.StatefulSet:
		obj, err = cs.AppsV1().StatefulSets(w.ns).Get(ctx, w.name, metav1.GetOptions{})
	case kit.DaemonSet:
		obj, err = cs.AppsV1().DaemonSets(w.ns).Get(ctx, w.name, metav1.GetOptions{})
	}
	if err != nil {
		return err.Error()
	}
	fmt.Fprintf(&b, "%s: generation %d, resourceVersion %s, annotations %v\n", w, obj.GetGeneration(), obj.GetResourceVersion(), obj.GetAnnotations())
	for _, m := range obj.GetManagedFields() {
		fmt.Fprintf(&b, "  written by %s (%s %s) at %v: %s\n", m.Manager, m.Operation, m.Subresource, m.Time, m.FieldsV1)
	}
	pods, err := cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
	if err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "  pod %s on %s: phase %s, ready %v, deleting %v, conditions %v\n",
				p.Name, p.Spec.NodeName, p.Status.Phase, kit.PodReady(&p), p.DeletionTimestamp != nil, p.Status.Conditions)
		}
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					fmt.Fprintf(&b, "  node %s: Ready=%s since %v (heartbeat %v), taints %v\n", n.Name, c.Status, c.LastTransitionTime, c.LastHeartbeatTime, n.Spec.Taints)
				}
			}
		}
	}
	return b.String()
}

func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
