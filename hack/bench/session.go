package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ripple-dev/ripple/hack/cluster"
)

// runner runs scenarios one after the other, each against a control plane
// of its own, so that no scenario's objects weigh on the next one's
// controller.
type runner struct {
	log        *slog.Logger
	logDir     string
	kubeconfig string   // external cluster; "" to start local control planes
	command    []string // controller command template, split
	vars       map[string]string
	proxy      bool
	baseline   string        // baseline annotation; "" for none
	warmup     time.Duration // wait after ready when there is no baseline annotation
	seed       uint64
	nsPrefix   string
	// extraFlags are appended to every scenario's controller flags
	// (--controller-flags).
	extraFlags []string
}

// session is one scenario run: a control plane, the benchmark's client and
// watch, the proxy, and the controller.
type session struct {
	r      *runner
	res    *Result
	log    *slog.Logger
	config *rest.Config // the benchmark's own client config (admin)
	cs     kubernetes.Interface
	create creator
	obs    *observer
	obsCtx context.Context // ends the observer's watches
	// observing is set once the observer runs.
	observing  bool
	kubeconfig string // the controller's
	px         *proxy
	ctl        *controllerProc
	flags      []string

	readyAt      time.Time
	reqAtReady   counts
	measureStart time.Time
	reqAtMeasure counts
	restAtStart  map[string]float64
	recAtStart   float64
	recOK        bool
	cpuAtStart   float64

	cleanups []func() error
}

// scenario runs body against a fresh control plane (the full cluster when
// full) and returns its result; whatever body started is stopped when it
// returns. A failing body still yields a result: what was measured, and
// why it stopped.
func (r *runner) scenario(ctx context.Context, res Result, full bool, body func(context.Context, *session) error) Result {
	start := time.Now()
	res.NewReplicaSets, res.RolloutsPerChangeSet, res.Reconciles = -1, -1, -1
	s := &session{r: r, res: &res, log: r.log.With("scenario", res.Name)}
	s.log.Info("scenario starting", "description", res.Description)
	err := s.run(ctx, full, body)
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		err = errors.Join(err, s.cleanups[i]())
	}
	if err != nil {
		res.Errors.Failure = err.Error()
		s.log.Error("scenario failed", "err", err)
	}
	res.DurationS = round3(time.Since(start).Seconds())
	s.log.Info("scenario done", "seconds", res.DurationS)
	return res
}

// onCleanup registers f to run when the scenario ends, after everything
// registered later: the controller stops before the API server it uses.
func (s *session) onCleanup(f func() error) { s.cleanups = append(s.cleanups, f) }

func (s *session) run(ctx context.Context, full bool, body func(context.Context, *session) error) error {
	t := time.Now()
	cfg, err := s.startControlPlane(ctx, full)
	if err != nil {
		return err
	}
	s.log.Info("control plane up", "kind", s.res.ControlPlane, "seconds", round3(time.Since(t).Seconds()))
	// The benchmark's own client may go fast: it creates tens of thousands
	// of objects, and its requests are not what is measured.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.UserAgent = "ripple-bench"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return ackTransport{next: rt} })
	s.config = cfg
	if s.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	s.create = creator{cs: s.cs, workers: 16}
	obsCtx, cancel := context.WithCancel(ctx)
	s.onCleanup(func() error { cancel(); return nil })
	s.obs = newObserver(s.cs, s.r.baseline)
	s.obsCtx = obsCtx
	return body(ctx, s)
}

// startControlPlane starts etcd and kube-apiserver, or the full cluster,
// or connects to --kubeconfig, and registers their cleanup.
func (s *session) startControlPlane(ctx context.Context, full bool) (*rest.Config, error) {
	if s.r.kubeconfig != "" {
		s.res.ControlPlane = "external"
		cfg, err := clientcmd.BuildConfigFromFlags("", s.r.kubeconfig)
		if err != nil {
			return nil, err
		}
		s.onCleanup(func() error { return s.deleteNamespaces(ctx, cfg) })
		return cfg, nil
	}
	var api *cluster.API
	if full {
		s.res.ControlPlane = "cluster"
		c, err := cluster.Start(ctx, cluster.Options{Nodes: 3})
		if err != nil {
			return nil, err
		}
		s.onCleanup(c.Stop)
		api = c.API
	} else {
		s.res.ControlPlane = "api"
		a, err := cluster.StartAPI(cluster.APIOptions{})
		if err != nil {
			return nil, err
		}
		s.onCleanup(a.Stop)
		api = a
	}
	// Ripple's own CRD, as the chart installs it: the change controller's
	// writes count with the rest (docs/config-rollouts.md).
	if err := api.InstallCRDs(ctx, cluster.ConfigRolloutCRD); err != nil {
		return nil, err
	}
	return api.Config, nil
}

// deleteNamespaces removes what the scenario created on an external
// cluster and waits for it to be gone, so the next scenario starts clean.
// It is a cleanup, so it runs in full when ctx is already cancelled (an
// interrupted run).
func (s *session) deleteNamespaces(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: benchLabel + "=true"}
	list, err := cs.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return err
	}
	for _, ns := range list.Items {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Namespaces().List(ctx, sel)
		return err == nil && len(l.Items) == 0, nil
	})
}

// setup creates the scenario's objects and records how long that took.
func (s *session) setup(ctx context.Context, create func(context.Context, *session) error) error {
	t := time.Now()
	if err := create(ctx, s); err != nil {
		return err
	}
	s.res.SetupS = round3(time.Since(t).Seconds())
	s.log.Info("objects created", "objects", s.res.Scale.Objects(), "seconds", s.res.SetupS)
	return nil
}

// ns returns the name of the benchmark's i-th namespace.
func (s *session) ns(i int) string { return fmt.Sprintf("%s-%03d", s.r.nsPrefix, i) }

// namespaces creates n namespaces.
func (s *session) namespaces(ctx context.Context, n int) error {
	names := make([]string, n)
	for i := range names {
		names[i] = s.ns(i)
	}
	s.res.Scale.Namespaces = n
	return s.create.namespaces(ctx, names)
}

// startController starts the observer, the proxy and the controller, waits
// until the controller is ready and has written its baseline on the given
// number of workloads, and records what that cost.
func (s *session) startController(ctx context.Context, workloads int, flags []string) error {
	if err := s.startReady(ctx, flags); err != nil {
		return err
	}
	return s.waitBaseline(ctx, workloads)
}

// startReady starts the observer, the proxy and the controller with the
// scenario's flags and the run's, and waits until the controller is
// ready.
func (s *session) startReady(ctx context.Context, flags []string) error {
	var added []string
	if s.res.ControlPlane == "api" {
		// No controller-manager runs here, so no rollout ever completes:
		// the rollout cap would hold every reload after the first wave.
		added = append(added, noRolloutCap)
	}
	added = append(added, s.r.extraFlags...)
	s.flags = append(slices.Clone(flags), added...)
	s.res.Flags, s.res.AddedFlags = flags, added
	if err := s.startObserver(false); err != nil {
		return err
	}
	kubeconfig := ""
	if s.r.proxy {
		px, err := startProxy(ctx, s.config, s.r.logDir)
		if err != nil {
			return err
		}
		s.px = px
		s.onCleanup(func() error { return px.shutdown(ctx) })
		kubeconfig = px.Kubeconfig
	} else {
		kubeconfig = filepath.Join(s.r.logDir, "direct.kubeconfig")
		if err := writeKubeconfig(s.config, kubeconfig); err != nil {
			return err
		}
	}
	s.kubeconfig = kubeconfig
	st, err := s.launch(ctx, kubeconfig, s.res.Name)
	if err != nil {
		return err
	}
	s.res.Startup = st
	return nil
}

// waitBaseline waits until the controller has written its baseline on the
// given number of workloads (or, without a baseline annotation, the
// warm-up), and records what that cost.
func (s *session) waitBaseline(ctx context.Context, workloads int) error {
	if s.r.baseline == "" {
		s.log.Info("no baseline annotation to wait for: warming up", "duration", s.r.warmup)
		return sleep(ctx, s.r.warmup)
	}
	timeout := time.Minute + time.Duration(float64(workloads)/qpsOf(s.flags)*3*float64(time.Second))
	if err := s.obs.waitBaselined(ctx, workloads, timeout); err != nil {
		return fmt.Errorf("waiting for the controller's baseline: %w", err)
	}
	s.res.Startup.BaselineS = round3(time.Since(s.readyAt).Seconds())
	// Let trailing events and writes of the start-up drain, so the
	// measurement sees only what the scenario causes. (The watch can show
	// the last baseline before the proxy has counted its PATCH.)
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	s.res.Startup.RequestsToBaseline = s.requests().sub(s.reqAtReady).byVerb(true)
	s.log.Info("baseline written", "workloads", workloads, "seconds", s.res.Startup.BaselineS)
	samples := s.ctl.memSince(time.Now().Add(-time.Second))
	s.res.Memory.HeapAfterSync, s.res.Memory.RSSAfterSync, s.res.Memory.LiveAfterSync = medianMem(samples)
	return nil
}

// startObserver starts the benchmark's watch of its Deployments (and
// their ReplicaSets) once.
func (s *session) startObserver(replicaSets bool) error {
	if s.observing {
		return nil
	}
	if err := s.obs.start(s.obsCtx, replicaSets); err != nil {
		return fmt.Errorf("starting the benchmark's watch: %w", err)
	}
	s.observing = true
	return nil
}

// update changes one config's data and returns the change set it makes for
// the given workloads: from just before the request to its acknowledgement.
//
// The acknowledgement is when the API server's response headers arrived:
// the change is committed then, and a controller may already be reacting
// to it while the client is still reading a large response body.
func (s *session) update(ctx context.Context, ref configRef, version int, payload []byte, workloads []string) (ChangeSet, error) {
	var ack time.Time
	start := time.Now()
	err := changeData(withAck(ctx, &ack), s.cs, ref, version, payload)
	if err != nil {
		return ChangeSet{}, fmt.Errorf("changing %s: %w", ref, err)
	}
	if ack.IsZero() {
		ack = time.Now()
	}
	return ChangeSet{Start: start, End: ack, Workloads: workloads}, nil
}

// ackKey is the context key under which ackTransport records when a
// request's response headers arrived.
type ackKey struct{}

func withAck(ctx context.Context, at *time.Time) context.Context {
	return context.WithValue(ctx, ackKey{}, at)
}

// ackTransport records, for requests whose context asks for it, when the
// response headers arrived (RoundTrip returns then, before the body is
// read).
type ackTransport struct{ next http.RoundTripper }

func (t ackTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if at, ok := req.Context().Value(ackKey{}).(*time.Time); ok && err == nil {
		*at = time.Now()
	}
	return resp, err
}

// launch starts the controller and waits until it is ready.
func (s *session) launch(ctx context.Context, kubeconfig, logName string) (Startup, error) {
	vars := map[string]string{"kubeconfig": kubeconfig}
	for k, v := range s.r.vars {
		vars[k] = v
	}
	before := s.requests()
	logPath := filepath.Join(s.r.logDir, strings.NewReplacer("/", "_", " ", "_").Replace(logName)+".log")
	ctl, err := startController(ctx, s.r.command, vars, s.flags, logPath)
	if err != nil {
		return Startup{}, err
	}
	s.ctl = ctl
	s.onCleanup(func() error { return ctl.stop(15 * time.Second) })
	readyAt, err := ctl.waitReady(ctx, 5*time.Minute)
	if err != nil {
		return Startup{}, err
	}
	s.readyAt = readyAt
	s.reqAtReady = s.requests()
	st := Startup{
		ReadyS:          round3(readyAt.Sub(ctl.started).Seconds()),
		RequestsToReady: s.requests().sub(before).byVerb(true),
	}
	s.log.Info("controller ready", "seconds", st.ReadyS, "requests", sumMap(st.RequestsToReady))
	return st, nil
}

// requests snapshots the proxy's counts (empty without the proxy).
func (s *session) requests() counts {
	if s.px == nil {
		return counts{}
	}
	return s.px.snapshot()
}

// beginMeasure marks the start of the measurement.
func (s *session) beginMeasure(ctx context.Context) {
	s.measureStart = time.Now()
	s.reqAtMeasure = s.requests()
	s.cpuAtStart = s.ctl.cpuSeconds()
	if m, err := s.ctl.scrape(ctx); err == nil {
		s.restAtStart = restClientCounts(m)
		s.recAtStart, s.recOK = m.value("controller_runtime_reconcile_total")
	}
}

// endMeasure waits quiet for late or extra patches, then computes the
// scenario's numbers from what the watch and the proxy recorded.
func (s *session) endMeasure(ctx context.Context, sets []ChangeSet, quiet time.Duration) error {
	if err := sleep(ctx, quiet); err != nil {
		return err
	}
	r := s.res
	end := time.Now()
	r.ChangeSets = len(sets)

	changes := s.obs.changesSince(s.measureStart)
	lat, missed := reactionLatencies(sets, changes)
	r.Latency = summarize(lat)
	r.AllPatched = summarize(completionTimes(sets, changes))
	r.TemplateChanges = total(changes)
	r.Errors.Missed = missed
	if s.px != nil {
		s.measureRequests(sets, end)
	} else {
		r.Errors.Notes = append(r.Errors.Notes, "no proxy: patches counted from the watch only")
		r.Patches = PatchCount{Expected: -1, Patches: r.TemplateChanges}
	}
	s.measureController(ctx, end.Add(-min(quiet, 2*time.Second)))
	if n := s.obs.relistCount(); n > 0 {
		r.Errors.Notes = append(r.Errors.Notes, fmt.Sprintf("the benchmark's own watch relisted %d times; changes seen in a relist are timed at the relist", n))
	}
	s.log.Info("measured",
		"p50Ms", r.Latency.P50, "p99Ms", r.Latency.P99, "maxMs", r.Latency.Max, "allPatchedMs", r.AllPatched.Max,
		"patches", r.Patches.Patches, "expected", r.Patches.Expected, "templateChanges", r.TemplateChanges,
		"requests", r.RequestsTotal, "rssPeakMiB", round3(r.Memory.RSSPeak/(1<<20)))
	return nil
}

// measureRequests computes what the proxy saw during the measurement,
// which ended at end: the controller's requests and its workload PATCHes,
// attributed to the change sets.
func (s *session) measureRequests(sets []ChangeSet, end time.Time) {
	r := s.res
	patches := s.px.patchesSince(s.measureStart)
	r.Patches = attributePatches(sets, patches)
	r.FirstPatch, r.LastPatch, r.PatchRate = patchTimes(sets, patches, end)
	delta := s.requests().sub(s.reqAtMeasure)
	r.Requests = delta.byVerb(true)
	r.RequestsTotal = delta.total()
	r.PatchAttempts = delta.matching(func(verb, res, _ string) bool { return verb == "patch" && isWorkload(res) })
	r.Errors.FailedRequests = delta.failed()
	r.Errors.Conflicts = delta.matching(func(_, _, code string) bool { return code == "409" })
	r.ConfigRelists = delta.matching(func(verb, res, _ string) bool {
		return isList(verb) && (res == "configmaps" || res == "secrets")
	})
	r.ForcedRelists = s.px.forcedRelists()
	r.WorkloadLists = s.requests().sub(s.reqAtReady).matching(func(verb, res, _ string) bool {
		return isList(verb) && isWorkload(res)
	})
}

// patchTimes returns, over the change sets, the time from each set's last
// update to the first and to the last PATCH of one of its workloads, and
// the fastest rate at which a set's PATCHes came. A set's PATCHes are those
// of its workloads from its start until the next set starts (or end).
func patchTimes(sets []ChangeSet, patches map[string][]time.Time, end time.Time) (first, last Latency, fastest float64) {
	var firsts, lasts []time.Duration
	for _, set := range sets {
		next := end
		for _, other := range sets {
			if other.Start.After(set.Start) && other.Start.Before(next) {
				next = other.Start
			}
		}
		var times []time.Time
		for _, w := range set.Workloads {
			for _, t := range patches[w] {
				if !t.Before(set.Start) && t.Before(next) {
					times = append(times, t)
				}
			}
		}
		if len(times) > 0 {
			firsts = append(firsts, slices.MinFunc(times, time.Time.Compare).Sub(set.End))
			lasts = append(lasts, slices.MaxFunc(times, time.Time.Compare).Sub(set.End))
		}
		fastest = max(fastest, round3(rate(times)))
	}
	return summarize(firsts), summarize(lasts), fastest
}

// measureController reads the controller's own numbers: its metrics (kept
// with its log), CPU, memory (steady from the given time on) and error
// log lines.
func (s *session) measureController(ctx context.Context, steadyFrom time.Time) {
	r := s.res
	base := strings.TrimSuffix(s.ctl.log, ".log")
	if raw, err := s.ctl.scrapeRaw(ctx); err == nil {
		// Kept with the logs: everything else the controller exposes.
		_ = os.WriteFile(base+".metrics.txt", raw, 0o644)
		if m, err := parseMetrics(bytes.NewReader(raw)); err == nil {
			r.RestClient = counterDelta(s.restAtStart, restClientCounts(m))
			if rec, ok := m.value("controller_runtime_reconcile_total"); ok && s.recOK {
				r.Reconciles = int(rec - s.recAtStart + 0.5)
			}
		}
	}
	r.CPU.Measure = round3(s.ctl.cpuSeconds() - s.cpuAtStart)
	r.CPU.Total = round3(s.ctl.cpuSeconds())
	r.Memory.RSSPeak = s.ctl.peakRSS()
	for _, m := range s.ctl.memSince(time.Time{}) {
		r.Memory.HeapPeak = max(r.Memory.HeapPeak, m.heap)
		r.Memory.LivePeak = max(r.Memory.LivePeak, m.live)
	}
	r.Memory.HeapSteady, r.Memory.RSSSteady, r.Memory.LiveSteady = medianMem(s.ctl.memSince(steadyFrom))
	r.Errors.LogErrors = s.ctl.errorLines()
	_ = s.ctl.writeMemoryCSV(base + ".memory.csv")
	r.MeasureStartS = round3(s.measureStart.Sub(s.ctl.started).Seconds())
}

// waitChanged waits for the workloads of a change set and records a
// timeout as a note rather than failing: the missed workloads are counted.
func (s *session) waitChanged(ctx context.Context, set ChangeSet, timeout time.Duration) error {
	err := s.obs.waitChanged(ctx, set.Workloads, set.Start, timeout)
	if err != nil && ctx.Err() == nil {
		s.res.Errors.Notes = append(s.res.Errors.Notes, err.Error())
		return nil
	}
	return err
}

// waitAll waits for every workload of the change sets, as waitChanged.
func (s *session) waitAll(ctx context.Context, sets []ChangeSet) error {
	all := ChangeSet{Start: sets[0].Start}
	for _, set := range sets {
		all.Workloads = append(all.Workloads, set.Workloads...)
	}
	return s.waitChanged(ctx, all, changeTimeout(len(all.Workloads), s.flags))
}

// medianMem returns the median heap in use, RSS and live heap of samples.
func medianMem(samples []memSample) (heap, rss, live float64) {
	var h, r, l []float64
	for _, m := range samples {
		h, r, l = append(h, m.heap), append(r, m.rss), append(l, m.live)
	}
	return median(h), median(r), median(l)
}

func countsAt(m map[string]int, keep func(string) bool) int {
	n := 0
	for k, v := range m {
		if keep(k) {
			n += v
		}
	}
	return n
}

func sumMap(m map[string]int) int { return countsAt(m, func(string) bool { return true }) }

// qpsOf returns the --kube-api-qps in flags, or client-go's and Ripple's
// default of 20.
func qpsOf(flags []string) float64 {
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--kube-api-qps="); ok {
			if q, err := strconv.ParseFloat(v, 64); err == nil && q > 0 {
				return q
			}
		}
	}
	return 20
}

// sleep waits d or until ctx ends. The benchmark sleeps only to let a
// system go quiet; nothing is measured by sleeping.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		return nil
	}
}

// writeKubeconfig writes a kubeconfig with cfg's server and credentials,
// for a controller that talks to the API server directly (--proxy=false).
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos["bench"] = &clientcmdapi.AuthInfo{
		ClientCertificate:     cfg.CertFile,
		ClientCertificateData: cfg.CertData,
		ClientKey:             cfg.KeyFile,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
		Exec:                  cfg.ExecProvider,
	}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	kc.CurrentContext = "bench"
	return clientcmd.WriteToFile(*kc, path)
}

// noRolloutCap lifts the rollout cap on the API-only control plane.
const noRolloutCap = "--max-concurrent-rollouts=0"

// deploymentKey returns the key of a Deployment.
func deploymentKey(ns, name string) string { return ns + "/" + name }
