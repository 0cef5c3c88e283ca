// Package metrics defines Ripple's Prometheus metrics: Reloader's reloader_*
// set with its names, types and labels (so dashboards keep working, each
// event counted once), and Ripple's ripple_* additions. Labels hold kinds,
// results and reasons only, never a config's name: cardinality stays
// bounded and no Secret name leaks, except for the namespace-labelled
// counter that METRICS_COUNT_BY_NAMESPACE=enabled asks for.
package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Skip reasons of reloader_skipped_total.
const (
	SkipNoDataChange       = "no_data_change"
	SkipIgnoredNotSelected = "ignored_or_not_selected"
	SkipStrategyNotUpdated = "strategy_not_updated"
	ResultSuccess          = "success"
	ResultError            = "error"
	ResultSkipped          = "skipped"
)

// Metrics records what Ripple does.
type Metrics struct {
	reloadExecuted      *prometheus.CounterVec
	reloadByNamespace   *prometheus.CounterVec // nil unless enabled
	reconcileTotal      *prometheus.CounterVec
	reconcileDuration   *prometheus.HistogramVec
	actionTotal         *prometheus.CounterVec
	actionLatency       *prometheus.HistogramVec
	skipped             *prometheus.CounterVec
	errors              *prometheus.CounterVec
	retries             prometheus.Counter
	eventsReceived      *prometheus.CounterVec
	workloadsScanned    *prometheus.CounterVec
	workloadsMatched    *prometheus.CounterVec
	reloads             *prometheus.CounterVec
	decisionLatency     prometheus.Histogram
	coalesced           prometheus.Histogram
	leader              prometheus.Gauge
	notificationDropped prometheus.Counter
	notificationFailed  *prometheus.CounterVec
	eventDropped        prometheus.Counter
	eventsProcessed     *prometheus.CounterVec
	cacheObjects        *prometheus.GaugeVec
	queueDepth          prometheus.Gauge
	queueAdds           prometheus.Counter
	queueLatency        prometheus.Histogram
	controllerDepth     *prometheus.GaugeVec
	wouldReload         *prometheus.CounterVec
	safety
	approval
	changes
}

// safety are the metrics of the safety settings: rollout verification and
// waves, and the storm breaker.
type safety struct {
	rolloutDuration    *prometheus.HistogramVec
	rolloutsStalled    *prometheus.CounterVec
	rolloutsInProgress prometheus.Gauge
	rolloutsWaiting    prometheus.Gauge
	held               prometheus.Gauge
	deferred           prometheus.Gauge
	holds              *prometheus.CounterVec
	reverted           *prometheus.CounterVec
	changesHalted      *prometheus.CounterVec
}

func newSafety() safety {
	return safety{
		rolloutDuration: histogramVec("ripple_rollout_duration_seconds",
			"Time from Ripple's write to the rollout being complete by the workload's status, by workload kind.",
			[]float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800}, "kind"),
		rolloutsStalled: counterVec("ripple_rollouts_stalled_total",
			"Rollouts Ripple started that stalled (progress deadline exceeded, degraded, or not complete within --rollout-timeout), by workload kind.", "kind"),
		rolloutsInProgress: gauge("ripple_rollouts_in_progress", "Rollouts Ripple started that are in progress; --max-concurrent-rollouts caps them."),
		rolloutsWaiting:    gauge("ripple_rollouts_waiting", "Workloads whose rollout waits for a slot under --max-concurrent-rollouts or --max-concurrent-rollouts-per-namespace."),
		held:               gauge("ripple_reloads_held", "Workloads the flap breaker holds now: their configs keep changing (ReloadHeld events name them)."),
		deferred:           gauge("ripple_reloads_deferred", "Workloads whose reload waits for their reload window to open (ReloadDeferred events name them)."),
		holds:              counterVec("ripple_reload_holds_total", "Holds the flap breaker began, by workload kind.", "kind"),
		reverted: counterVec("ripple_reloads_reverted_total",
			"Reloads another manager undid (ReloadReverted events), and rollouts held after being undone twice, by workload kind.", "kind"),
		changesHalted: counterVec("ripple_changes_halted_total",
			"Canaried config changes a canary halted (RolloutHalted events on the config), by config kind.", "kind"),
	}
}

func (s safety) safetyCollectors() []prometheus.Collector {
	return []prometheus.Collector{s.rolloutDuration, s.rolloutsStalled, s.rolloutsInProgress, s.rolloutsWaiting, s.held, s.deferred, s.holds, s.reverted, s.changesHalted}
}

// New registers the metrics on reg. byNamespace adds Reloader's
// reloader_reload_executed_total_by_namespace.
func New(reg prometheus.Registerer, byNamespace bool) (*Metrics, error) {
	m := &Metrics{
		reloadExecuted: counterVec("reloader_reload_executed_total", "Reloads of workloads, by success.", "success"),
		reconcileTotal: counterVec("reloader_reconcile_total", "Reconciles of workloads, by result.", "result"),
		reconcileDuration: histogramVec("reloader_reconcile_duration_seconds", "Duration of a reconcile of a workload, by result.",
			[]float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "result"),
		actionTotal: counterVec("reloader_action_total", "Reload writes, by workload kind and result.", "workload_kind", "result"),
		actionLatency: histogramVec("reloader_action_latency_seconds",
			"Time from the start of a workload's update (its reconcile) to its reload being accepted, by workload kind; ripple_decision_latency_seconds counts from the change being seen.",
			[]float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}, "workload_kind"),
		skipped: counterVec("reloader_skipped_total", "Config events or reconciles that reloaded nothing, by reason.", "reason"),
		errors:  counterVec("reloader_errors_total", "Errors, by type.", "type"),
		retries: counter("reloader_retries_total", "Reconciles retried after an error or a write conflict."),
		eventsReceived: counterVec("reloader_events_received_total", "Config events received, by event and resource type.",
			"event_type", "resource_type"),
		workloadsScanned: counterVec("reloader_workloads_scanned_total",
			"Workloads looked at for config events (from the index, never listed from the API), by kind.", "kind"),
		workloadsMatched: counterVec("reloader_workloads_matched_total", "Workloads reloaded, by kind.", "kind"),
		reloads:          counterVec("ripple_reloads_total", "Rollouts Ripple started, by workload kind and result.", "kind", "result"),
		decisionLatency: histogram("ripple_decision_latency_seconds",
			"Time from a config change being seen to the reload being accepted by the API server, settle window included.",
			prometheus.ExponentialBuckets(0.005, 2, 14)), // 5ms to 41s
		coalesced: histogram("ripple_coalesced_changes", "Config changes carried by one rollout (the settle window merges changes).",
			[]float64{1, 2, 3, 5, 10, 20, 50}),
		leader: gauge("ripple_leader", "1 while this replica leads (or runs without leader election), else 0."),
		notificationDropped: counter("ripple_notifications_dropped_total",
			"Webhook or alert messages dropped because their queue was full: the namespace with the most messages waiting loses its oldest."),
		notificationFailed: counterVec("ripple_notifications_failed_total",
			"Webhook or alert messages not delivered: refused or unanswered after their attempts, or (alerts) an --alert-template that failed or rendered past its bound, by sink (webhook: --webhook-url; alert).", "sink"),
		eventDropped: counter("ripple_events_dropped_total",
			"Kubernetes Events Ripple did not record because its Event queue was full: the namespace with the most Events waiting loses its oldest."),
		eventsProcessed: counterVec("reloader_events_processed_total",
			"Config events, by event and resource type: success if they could change a reload, dropped if not (no data change).",
			"event_type", "resource_type", "result"),
		cacheObjects: gaugeVec("ripple_cache_objects", "Objects in Ripple's cache, by kind.", "kind"),
		queueDepth:   gauge("reloader_workqueue_depth", "Workloads waiting in the work queues, all controllers together."),
		queueAdds:    counter("reloader_workqueue_adds_total", "Workloads added to the work queues."),
		queueLatency: histogram("reloader_workqueue_latency_seconds", "Time a workload waits in a work queue before it is reconciled.",
			[]float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}),
		controllerDepth: gaugeVec("ripple_workqueue_depth", "Workloads waiting in the work queue, by controller (workload kind).", "controller"),
		wouldReload:     counterVec("ripple_would_reload_total", "Rollouts --dry-run or the notify reload policy decided but did not write, by workload kind.", "kind"),
		safety:          newSafety(),
		approval:        newApproval(),
		changes:         newChanges(),
	}
	if byNamespace {
		m.reloadByNamespace = counterVec("reloader_reload_executed_total_by_namespace",
			"Reloads of workloads, by success and namespace.", "success", "namespace")
	}
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.initKnown()
	return m, nil
}

// collectors are every metric of m, to register.
func (m *Metrics) collectors() []prometheus.Collector {
	collectors := []prometheus.Collector{m.reloadExecuted, m.reconcileTotal, m.reconcileDuration, m.actionTotal, m.actionLatency,
		m.skipped, m.errors, m.retries, m.eventsReceived, m.workloadsScanned, m.workloadsMatched,
		m.reloads, m.decisionLatency, m.coalesced, m.leader, m.notificationDropped, m.notificationFailed, m.eventDropped,
		m.eventsProcessed, m.cacheObjects, m.queueDepth, m.queueAdds, m.queueLatency, m.controllerDepth, m.wouldReload}
	collectors = append(collectors, m.safetyCollectors()...)
	collectors = append(collectors, m.pending)
	collectors = append(collectors, m.changeCollectors()...)
	if m.reloadByNamespace != nil {
		collectors = append(collectors, m.reloadByNamespace)
	}
	return collectors
}

// initKnown creates the series whose label values are known before
// anything happens, at 0, so that rate() and absent() work on a quiet
// cluster (Reloader does so for reloader_reload_executed_total).
func (m *Metrics) initKnown() {
	for _, s := range []string{"true", "false"} {
		m.reloadExecuted.WithLabelValues(s)
	}
	for _, r := range []string{ResultSuccess, ResultError, ResultSkipped} {
		m.reconcileTotal.WithLabelValues(r)
		m.reconcileDuration.WithLabelValues(r)
	}
	for _, r := range []string{SkipNoDataChange, SkipIgnoredNotSelected, SkipStrategyNotUpdated} {
		m.skipped.WithLabelValues(r)
	}
	m.errors.WithLabelValues("handler_error")
	for _, s := range []string{SinkWebhook, SinkAlert} {
		m.notificationFailed.WithLabelValues(s)
	}
}

// InitKinds creates the series of the workload kinds Ripple reloads (by
// their names, such as Deployment) at 0.
func (m *Metrics) InitKinds(kinds ...string) {
	for _, k := range kinds {
		for _, r := range []string{ResultSuccess, ResultError} {
			m.actionTotal.WithLabelValues(k, r)
			m.reloads.WithLabelValues(k, r)
		}
		m.actionLatency.WithLabelValues(k)
		m.workloadsScanned.WithLabelValues(k)
		m.workloadsMatched.WithLabelValues(k)
		m.wouldReload.WithLabelValues(k)
		m.rolloutDuration.WithLabelValues(k)
		m.rolloutsStalled.WithLabelValues(k)
		m.holds.WithLabelValues(k)
		m.reverted.WithLabelValues(k)
	}
}

// initResource creates the event series of a watched resource (configmaps,
// secrets) at 0.
func (m *Metrics) initResource(resource string) {
	for _, e := range []string{"add", "update", "delete"} {
		m.eventsReceived.WithLabelValues(e, resource)
		m.eventsProcessed.WithLabelValues(e, resource, "success")
	}
	m.eventsProcessed.WithLabelValues("update", resource, "dropped")
}

// Shorthands that keep New at one entry per metric.

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// Reloaded records one reload write of a workload of kind in namespace:
// its result; took, the time from the start of the workload's update (its
// reconcile: Reloader's action latency, which starts where Reloader starts
// updating the workload); seen, the time since the change was first seen,
// settle window and waits included; and how many config changes it
// carried.
func (m *Metrics) Reloaded(kind, namespace string, err error, took, seen time.Duration, changes int) {
	ok := err == nil
	result := ResultSuccess
	if !ok {
		result = ResultError
	}
	m.reloadExecuted.WithLabelValues(strconv.FormatBool(ok)).Inc()
	if m.reloadByNamespace != nil {
		m.reloadByNamespace.WithLabelValues(strconv.FormatBool(ok), namespace).Inc()
	}
	m.actionTotal.WithLabelValues(kind, result).Inc()
	m.reloads.WithLabelValues(kind, result).Inc()
	if ok {
		m.actionLatency.WithLabelValues(kind).Observe(took.Seconds())
		m.decisionLatency.Observe(seen.Seconds())
		m.coalesced.Observe(float64(changes))
		m.workloadsMatched.WithLabelValues(kind).Inc()
	}
}

// startKey keys the start of a workload's update on a context.
type startKey struct{}

// WithStart returns ctx carrying t, the start of a workload's update, for
// reloader_action_latency_seconds.
func WithStart(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, startKey{}, t)
}

// Start is the start of the workload's update that WithStart put on ctx,
// else fallback.
func Start(ctx context.Context, fallback time.Time) time.Time {
	if t, ok := ctx.Value(startKey{}).(time.Time); ok {
		return t
	}
	return fallback
}

// WouldReload counts a rollout of a workload of kind that --dry-run did
// not write.
func (m *Metrics) WouldReload(kind string) { m.wouldReload.WithLabelValues(kind).Inc() }

// RolloutCompleted records a rollout of a workload of kind that completed
// d after Ripple's write.
func (m *Metrics) RolloutCompleted(kind string, d time.Duration) {
	m.rolloutDuration.WithLabelValues(kind).Observe(d.Seconds())
}

// RolloutStalled counts a rollout of a workload of kind that stalled.
func (m *Metrics) RolloutStalled(kind string) { m.rolloutsStalled.WithLabelValues(kind).Inc() }

// RolloutsInProgress sets how many rollouts Ripple follows.
func (m *Metrics) RolloutsInProgress(n int) { m.rolloutsInProgress.Set(float64(n)) }

// RolloutsWaiting sets how many workloads wait for a rollout slot.
func (m *Metrics) RolloutsWaiting(n int) { m.rolloutsWaiting.Set(float64(n)) }

// ReloadsDeferred sets how many workloads wait for their reload window.
func (m *Metrics) ReloadsDeferred(n int) { m.deferred.Set(float64(n)) }

// HoldBegan counts a hold of a workload of kind by the flap breaker and
// adds it to the workloads held.
func (m *Metrics) HoldBegan(kind string) {
	m.holds.WithLabelValues(kind).Inc()
	m.held.Inc()
}

// Halted counts a canaried change of a config of kind that a canary
// halted.
func (m *Metrics) Halted(kind string) { m.changesHalted.WithLabelValues(kind).Inc() }

// Reverted counts a reload another manager undid, or a rollout held
// after it was undone (ReloadReverted).
func (m *Metrics) Reverted(kind string) { m.reverted.WithLabelValues(kind).Inc() }

// HoldEnded removes a workload from the workloads held.
func (m *Metrics) HoldEnded() { m.held.Dec() }

// Reconciled records one reconcile: success (it reloaded), skipped
// (nothing to do, with a skip reason) or error.
func (m *Metrics) Reconciled(result, skipReason string, d time.Duration) {
	m.reconcileTotal.WithLabelValues(result).Inc()
	m.reconcileDuration.WithLabelValues(result).Observe(d.Seconds())
	switch {
	case result == ResultError:
		m.errors.WithLabelValues("handler_error").Inc()
	case skipReason != "":
		m.skipped.WithLabelValues(skipReason).Inc()
	}
}

// Retried counts a reconcile that will run again after an error or a conflict.
func (m *Metrics) Retried() { m.retries.Inc() }

// EventReceived counts a config event; eventType is add, update or delete,
// resource configmaps or secrets. An update that changed no data is also a
// no_data_change skip.
func (m *Metrics) EventReceived(eventType, resource string, dataChanged bool) {
	m.eventsReceived.WithLabelValues(eventType, resource).Inc()
	result := "success"
	if eventType == "update" && !dataChanged {
		m.skipped.WithLabelValues(SkipNoDataChange).Inc()
		result = "dropped"
	}
	m.eventsProcessed.WithLabelValues(eventType, resource, result).Inc()
}

// CacheObjects adds delta to the count of cached objects of kind.
func (m *Metrics) CacheObjects(kind string, delta int) {
	m.cacheObjects.WithLabelValues(kind).Add(float64(delta))
}

// Scanned counts the workloads of kind that a config event maps to.
func (m *Metrics) Scanned(kind string, n int) {
	m.workloadsScanned.WithLabelValues(kind).Add(float64(n))
}

// SetLeader records whether this replica leads.
func (m *Metrics) SetLeader(leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	m.leader.Set(v)
}

// NotificationDropped counts a message a full queue dropped.
func (m *Metrics) NotificationDropped() { m.notificationDropped.Inc() }

// The sinks of ripple_notifications_failed_total.
const (
	SinkWebhook = "webhook"
	SinkAlert   = "alert"
)

// NotificationFailed counts a message of sink (SinkWebhook, SinkAlert)
// that was not delivered.
func (m *Metrics) NotificationFailed(sink string) { m.notificationFailed.WithLabelValues(sink).Inc() }

// EventDropped counts a Kubernetes Event a full Event queue dropped.
func (m *Metrics) EventDropped() { m.eventDropped.Inc() }

// QueueMetrics is the metrics provider of the controllers' work queues:
// Reloader's reloader_workqueue_* for all of them together (Reloader's
// depth gauge is shared and the last writer wins; here it is the sum), and
// ripple_workqueue_depth per controller.
func (m *Metrics) QueueMetrics() workqueue.MetricsProvider { return queueMetrics{m} }

type queueMetrics struct{ m *Metrics }

func (q queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return depth{q.m.queueDepth, q.m.controllerDepth.WithLabelValues(name)}
}
func (q queueMetrics) NewAddsMetric(string) workqueue.CounterMetric { return q.m.queueAdds }
func (q queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric {
	return q.m.queueLatency
}
func (queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric { return noop{} }
func (queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}
func (queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}
func (queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return noop{} }

// depth moves the total and the per-controller gauge together.
type depth struct{ total, one prometheus.Gauge }

func (d depth) Inc() { d.total.Inc(); d.one.Inc() }
func (d depth) Dec() { d.total.Dec(); d.one.Dec() }

type noop struct{}

func (noop) Inc()            {}
func (noop) Set(float64)     {}
func (noop) Observe(float64) {}
