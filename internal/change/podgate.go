package change

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

const (
	// maxStrays is how many pods a canary's selector may match beyond the
	// ones it wants that it does not own (another workload's, a tenant's
	// decoys) before the gate stops watching them: each costs the API
	// server's sending it, though the gate keeps nothing of it.
	maxStrays = 100
	// maxPodRecords bounds the pods the pod gate keeps a record of across
	// the cluster (a few hundred bytes each): past it, a change's watch
	// waits for other bakes to end.
	maxPodRecords = 50_000
	// maxPodContainers and maxReason bound what a record keeps of a pod's
	// containers: names and reasons are its owner's strings. A container
	// name is a DNS label (63 bytes).
	maxPodContainers = 32
	maxContainerName = 63
	maxReason        = 64
	// maxListing bounds the watches listing their pods at once across the
	// cluster: while a list streams, the pods it decodes are in memory,
	// and a tenant's can be large (every canary of a change starts its
	// list at the bake's start). A list is short: a selector's own pods,
	// or maxStrays of the others.
	maxListing = 2
)

// podGate is the canary's pod gate (Gate): while a change bakes, it
// watches its canaries' pods only (a watch per canary, by its selector in
// its namespace, ended with the bake, so memory does not grow with the
// fleet), and the first container restart, CrashLoopBackOff or pod turned
// unready fails it. The workload's status can miss those: a container
// that restarts and is Ready again between two status updates. Of each
// pod it keeps a small record, only if the canary owns it: a selector
// also matches other pods, which a tenant can make many and large.
type podGate struct {
	pods kubernetes.Interface
	// object reads a canary from the cache, with its kind (nil: gone).
	object func(ctx context.Context, w workload.Ref) (client.Object, workload.Kind, error)
	// look queues a change whose canary's pod failed the gate; base is
	// the change controller's context, which every watch ends with (nil
	// before it started).
	look func(Key)
	base func() context.Context

	watches bakes[podWatch]
	// kept is how many pods' records every watch keeps, bound by
	// maxPodRecords.
	kept atomic.Int64
	// lists holds a slot per watch listing its pods (maxListing).
	listsOnce sync.Once
	lists     chan struct{}
}

func (g *podGate) listSlots() chan struct{} {
	g.listsOnce.Do(func() { g.lists = make(chan struct{}, maxListing) })
	return g.lists
}

// podWatch is the watch of one baking change's canaries' pods, the first
// signal it saw, and why it cannot judge them (hold: it cannot watch a
// canary's pods, or stopped): a gate that cannot see holds the change
// rather than pass it.
type podWatch struct {
	// since is when the bake started (status.canary.since, to the
	// second, rounded up): a pod first seen with a container whose last
	// run ended in that second or later restarted during the bake, while
	// Ripple did not watch (before its list, or while it was down).
	since time.Time

	mu           sync.Mutex
	signal, hold string
	// pods are the records of each canary's pods: until each has listed
	// its pods, the gate has seen nothing and holds the change.
	pods []*podRecords
}

func (w *podWatch) cannot(c workload.Ref, err error) {
	w.held(fmt.Sprintf("cannot watch the pods of %s %q: %v", c.Kind, c.Name, err))
}

// held keeps why the gate holds the change, the first reason said.
func (w *podWatch) held(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hold == "" {
		w.hold = why
	}
}

// Judge starts watching the pods of key's canaries, whose bake started at
// since, once, and returns the first signal since.
func (g *podGate) Judge(ctx context.Context, key Key, since time.Time, canaries []workload.Ref) canary.Verdict {
	base := g.base()
	if base == nil {
		return canary.Verdict{Gate: canary.GatePods, Hold: "the change controller has not started"}
	}
	w, wctx, busy := g.watches.start(base, key, len(canaries), "the pod gate watches the pods of")
	if busy != "" {
		return canary.Verdict{Gate: canary.GatePods, Hold: busy}
	}
	if wctx != nil { // a new watch: not watched since an earlier look
		w.since = since
		if n := g.kept.Load(); n >= maxPodRecords {
			g.watches.done(key) // not started: the next look tries again
			return canary.Verdict{Gate: canary.GatePods, Hold: fmt.Sprintf(
				"the pod gate keeps records of at most %d pods across the cluster (%d now): the change waits for another's bake to end", maxPodRecords, n)}
		}
		for _, c := range canaries {
			if err := g.watch(wctx, key, w, c); err != nil {
				w.cannot(c, err)
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	hold := w.hold
	if hold == "" && slices.ContainsFunc(w.pods, func(p *podRecords) bool { return !p.synced.Load() }) {
		hold = "its watch of the canaries' pods has not listed them yet"
	}
	if w.hold != "" && w.signal == "" {
		ctrl.LoggerFrom(ctx).Info("the pod gate holds a change", "why", w.hold)
	}
	return canary.Verdict{Gate: canary.GatePods, Fail: w.signal, Hold: hold}
}

// Done ends the watch of key's change: its bake ended, or it is gone.
func (g *podGate) Done(key Key) { g.watches.done(key) }

// watch starts watching the pods of canary c of key's change, until ctx
// ends. A kind without a pod selector (a declared kind, an Argo Rollout)
// is not watched: its status alone judges it.
func (g *podGate) watch(ctx context.Context, key Key, w *podWatch, c workload.Ref) error {
	obj, kind, err := g.object(ctx, c)
	if err != nil || obj == nil {
		return err
	}
	rs, ok := kind.(workload.Restarter)
	if !ok {
		return nil
	}
	scope, err := rs.Pods(obj)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	s := &podRecords{gate: g, key: key, w: w, canary: c, owns: scope.Owns, want: scope.Want, stop: stop}
	lw := s.listWatch(g.pods.CoreV1().Pods(c.Namespace), scope.Selector.String())
	r := toolscache.NewReflectorWithOptions(toolscache.ToListWatcherWithWatchListSemantics(lw, g.pods), &corev1.Pod{}, s,
		toolscache.ReflectorOptions{Name: "the pods of " + c.Kind + " " + c.Namespace + "/" + c.Name})
	w.mu.Lock()
	w.pods = append(w.pods, s)
	w.mu.Unlock()
	go func() {
		r.RunWithContext(ctx)
		s.end()
	}()
	return nil
}

// listWatch lists and watches the pods sel selects, counting the strays
// of each list as it comes.
func (s *podRecords) listWatch(pods corev1client.PodInterface, sel string) *toolscache.ListWatch {
	// A list or watch refused (no rights on pods) is said, not only
	// logged: the gate holds the change while it cannot see. Other errors
	// (a watch cut, an API server restarting) are retried.
	refused := func(err error) {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			s.w.cannot(s.canary, err)
		}
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			if o.Continue == "" {
				if err := s.listing(ctx); err != nil {
					return nil, err
				}
			}
			l, err := pods.List(ctx, o)
			if err != nil {
				s.listed()
				refused(err)
				return nil, err
			}
			// Strays are counted page by page: past the bound, the
			// list stops before the next page.
			for i := range l.Items {
				s.seeListed(&l.Items[i])
			}
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			streamed := o.SendInitialEvents != nil && *o.SendInitialEvents
			if streamed { // a streamed list: its pods come through Transformer
				if err := s.listing(ctx); err != nil {
					return nil, err
				}
			}
			wi, err := pods.Watch(ctx, o)
			if err != nil {
				if streamed {
					s.listed()
				}
				refused(err)
			}
			return wi, err
		},
	}
}

// saw keeps signal if it is the first: the one the gate fails with.
func (w *podWatch) saw(signal string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.signal != "" {
		return false
	}
	w.signal = signal
	return true
}

// podRecords is the store a canary's pod watch feeds (its reflector's):
// of each pod the canary owns, the record the gate reads; of the others
// (strays), their number only. Each event's pod is judged as it comes and
// then dropped: a tenant's pods cost Ripple what it keeps of its own.
type podRecords struct {
	gate   *podGate
	key    Key
	w      *podWatch
	canary workload.Ref
	owns   func(*corev1.Pod) bool
	want   int
	// stop ends the watch; synced is set by its first list.
	stop   context.CancelFunc
	synced atomic.Bool

	mu      sync.Mutex
	records map[string]podRecord // by pod name
	strays  int
	// strayed is the strays the list under way saw so far: a list past
	// the bound is stopped before it ends. slot: it holds a slot of the
	// gate's lists.
	strayed int
	slot    bool
	ended   bool
}

// podRecord is what the gate reads of an owned pod.
type podRecord struct {
	ready, deleting bool
	containers      []containerRecord
}

type containerRecord struct {
	name         string
	restarts     int32
	crashLooping bool
	// reason and exitCode are its last termination's (terminated), for
	// the signal's message; finished is when that run ended.
	terminated bool
	reason     string
	exitCode   int32
	finished   time.Time
}

// podSeen is a pod as the gate judged it: whether the canary owns it and
// its record if so. The reflector's streamed list keeps it (Transformer)
// in place of the pod, by its name and namespace (ObjectMeta, else
// empty).
type podSeen struct {
	metav1.ObjectMeta
	owned bool
	rec   podRecord
}

func (s *podRecords) see(obj any) *podSeen {
	switch o := obj.(type) {
	case *podSeen:
		return o
	case *corev1.Pod:
		// Copies: nothing the gate keeps, even for a moment, holds on
		// to the decoded pod.
		seen := &podSeen{ObjectMeta: metav1.ObjectMeta{Name: strings.Clone(o.Name), Namespace: strings.Clone(o.Namespace)}, owned: s.owns(o)}
		if seen.owned {
			seen.rec = recordOf(o)
		}
		return seen
	case toolscache.DeletedFinalStateUnknown:
		return s.see(o.Obj)
	}
	return nil
}

// recordOf is what the gate reads of p, bounded.
func recordOf(p *corev1.Pod) podRecord {
	r := podRecord{ready: rollout.PodReady(p), deleting: p.DeletionTimestamp != nil}
	statuses := p.Status.ContainerStatuses
	if len(statuses) > maxPodContainers {
		statuses = statuses[:maxPodContainers]
	}
	r.containers = make([]containerRecord, len(statuses))
	for i, st := range statuses {
		c := containerRecord{name: cut(st.Name, maxContainerName), restarts: st.RestartCount,
			crashLooping: st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff"}
		if t := st.LastTerminationState.Terminated; t != nil {
			c.terminated, c.reason, c.exitCode, c.finished = true, cut(t.Reason, maxReason), t.ExitCode, t.FinishedAt.Time
		}
		r.containers[i] = c
	}
	return r
}

// cut is s in at most n bytes, whole runes, copied: a record keeps no
// part of the decoded pod.
func cut(s string, n int) string {
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.Clone(s)
}

// Transformer judges each pod of a streamed list as it comes: the
// reflector keeps what it returns until the list ends.
func (s *podRecords) Transformer() toolscache.TransformFunc {
	return func(obj any) (any, error) {
		seen := s.see(obj)
		if seen == nil {
			return obj, nil
		}
		if !seen.owned {
			s.after(s.strayListed())
		}
		return seen, nil
	}
}

// listing starts a list, once it has a slot (or the watch ended): its
// strays are counted anew.
func (s *podRecords) listing(ctx context.Context) error {
	s.mu.Lock()
	s.strayed = 0
	slot := s.slot
	s.mu.Unlock()
	if slot { // a list tried again
		return nil
	}
	slots := s.gate.listSlots()
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		<-slots
		return context.Canceled
	}
	s.slot = true
	return nil
}

// listed gives the list's slot back: it ended, failed, or the watch did.
func (s *podRecords) listed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeSlot()
}

// freeSlot is listed with s.mu held.
func (s *podRecords) freeSlot() {
	if s.slot {
		<-s.gate.listSlots()
		s.slot = false
	}
}

// seeListed counts p if it is a stray of a paged list.
func (s *podRecords) seeListed(p *corev1.Pod) {
	if !s.owns(p) {
		s.after(s.strayListed())
	}
}

func (s *podRecords) strayListed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strayed++
	return s.tooMany(s.strayed)
}

// tooMany ends the watch if n strays are past the bound, and says so.
// s.mu is held.
func (s *podRecords) tooMany(n int) bool {
	if s.ended || n <= maxStrays+s.want {
		return false
	}
	s.w.held(fmt.Sprintf("the selector of %s %q matches more than %d pods it does not own (at most %d beyond the %d it wants): the pod gate stopped watching its pods",
		s.canary.Kind, s.canary.Name, maxStrays+s.want, maxStrays, s.want))
	s.endLocked()
	return true
}

// keep keeps rec as name's record unless that passes the cluster's bound,
// which ends the watch. s.mu is held.
func (s *podRecords) keep(name string, rec podRecord) bool {
	if _, ok := s.records[name]; !ok {
		if s.gate.kept.Add(1) > maxPodRecords {
			s.gate.kept.Add(-1)
			s.w.held(fmt.Sprintf("the pod gate keeps records of at most %d pods across the cluster: it stopped watching the pods of %s %q",
				maxPodRecords, s.canary.Kind, s.canary.Name))
			s.endLocked()
			return false
		}
	}
	if s.records == nil {
		s.records = map[string]podRecord{}
	}
	s.records[name] = rec
	return true
}

func (s *podRecords) forget(name string) {
	if _, ok := s.records[name]; ok {
		delete(s.records, name)
		s.gate.kept.Add(-1)
	}
}

// judge fails the gate if name's pod, from old to cur, says so (the
// first signal only). s.mu is held.
func (s *podRecords) judge(name string, old, cur podRecord) bool {
	return s.fail(name, podSignal(old, cur, s.w.since))
}

// judgeFirst fails the gate if name's pod, seen for the first time, says
// so. s.mu is held.
func (s *podRecords) judgeFirst(name string, cur podRecord) bool {
	return s.fail(name, podSignal(podRecord{}, cur, s.w.since))
}

func (s *podRecords) fail(name, sig string) bool {
	return sig != "" && s.w.saw(fmt.Sprintf("%s %q: pod %s %s", s.canary.Kind, s.canary.Name, name, sig))
}

// after looks at the change again if the gate has news (a signal, a
// hold, its first list), once s.mu is released.
func (s *podRecords) after(news bool) {
	if news {
		s.gate.look(s.key)
	}
}

func (s *podRecords) Add(obj any) error    { s.after(s.update(obj, true)); return nil }
func (s *podRecords) Update(obj any) error { s.after(s.update(obj, false)); return nil }

// update keeps an owned pod's record, judging it against the one before;
// counts a new stray (added: a pod not seen before).
func (s *podRecords) update(obj any, added bool) bool {
	seen := s.see(obj)
	if seen == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	old, had := s.records[seen.Name]
	switch {
	case seen.owned && had:
		s.records[seen.Name] = seen.rec
		return s.judge(seen.Name, old, seen.rec)
	case seen.owned: // new, or a stray adopted
		if !added && s.strays > 0 {
			s.strays--
		}
		if !s.keep(seen.Name, seen.rec) {
			return true
		}
		return s.judgeFirst(seen.Name, seen.rec)
	case had: // released
		s.forget(seen.Name)
		s.strays++
		return s.tooMany(s.strays)
	case added: // a stray: only counted
		s.strays++
		return s.tooMany(s.strays)
	}
	return false
}

// Delete forgets a pod; one without a record was a stray.
func (s *podRecords) Delete(obj any) error {
	seen := s.see(obj)
	if seen == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, had := s.records[seen.Name]; had {
		s.forget(seen.Name)
	} else if s.strays > 0 {
		s.strays--
	}
	return nil
}

// Replace starts again from a list: its first makes the watch synced. A
// pod it had a record of is judged as if updated, as an informer would.
func (s *podRecords) Replace(items []any, _ string) error {
	s.after(s.replace(items))
	return nil
}

func (s *podRecords) replace(items []any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeSlot()
	if s.ended {
		return false
	}
	old := s.records
	s.gate.kept.Add(-int64(len(old)))
	s.records, s.strays = nil, 0
	news := false
	for _, item := range items {
		seen := s.see(item)
		switch {
		case seen == nil:
		case !seen.owned:
			s.strays++
		default:
			if !s.keep(seen.Name, seen.rec) {
				return true
			}
			was, ok := old[seen.Name]
			if ok && s.judge(seen.Name, was, seen.rec) || !ok && s.judgeFirst(seen.Name, seen.rec) {
				news = true
			}
		}
	}
	if s.tooMany(s.strays) {
		return true
	}
	return s.synced.CompareAndSwap(false, true) || news
}

func (s *podRecords) Resync() error { return nil }

// end forgets every record: the watch ended.
func (s *podRecords) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked()
}

func (s *podRecords) endLocked() {
	if s.ended {
		return
	}
	s.ended = true
	s.stop()
	s.freeSlot()
	s.gate.kept.Add(-int64(len(s.records)))
	s.records = nil
}

// count is how many records s keeps and how many strays it counts.
func (s *podRecords) count() (records, strays int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records), s.strays
}

// podSignal says what, from old to cur, fails the pod gate of a bake
// that started at since: a container that restarted (and how it ended),
// one in CrashLoopBackOff, or the pod turned unready; empty when nothing
// did. A container old does not have (a pod first seen) restarted if its
// last run ended in since's second or later. A pod being deleted says
// nothing: a rollout's old pods go that way.
func podSignal(old, cur podRecord, since time.Time) string {
	if cur.deleting {
		return ""
	}
	for _, c := range cur.containers {
		i := slices.IndexFunc(old.containers, func(b containerRecord) bool { return b.name == c.name })
		var b containerRecord
		if i >= 0 {
			b = old.containers[i]
		}
		switch {
		case i >= 0 && c.restarts > b.restarts,
			i < 0 && c.restarts > 0 && c.terminated && !c.finished.Before(since.Add(-time.Second)):
			return fmt.Sprintf("container %s restarted%s", c.name, c.ended())
		case c.crashLooping && !b.crashLooping:
			return fmt.Sprintf("container %s is in CrashLoopBackOff%s", c.name, c.ended())
		}
	}
	if old.ready && !cur.ready {
		return "turned unready"
	}
	return ""
}

func (c containerRecord) ended() string {
	if !c.terminated {
		return ""
	}
	return fmt.Sprintf(" (%s, exit code %d)", c.reason, c.exitCode)
}
