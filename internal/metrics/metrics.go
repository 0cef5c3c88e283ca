// Package metrics defines Ripple's Prometheus metrics: Reloader's reloader_*
// set with its names, types and labels (so dashboards keep working, each
// event counted once), and Ripple's ripple_* additions. Labels hold kinds,
// results and reasons only, never a config's name: cardinality stays
// bounded and no Secret name leaks, except for the namespace-labelled
// counter that METRICS_COUNT_BY_NAMESPACE=enabled asks for.
package metrics

import (
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
	eventsProcessed     *prometheus.CounterVec
	cacheObjects        *prometheus.GaugeVec
	queueDepth          prometheus.Gauge
	queueAdds           prometheus.Counter
	queueLatency        prometheus.Histogram
	controllerDepth     *prometheus.GaugeVec
}

// New registers the metrics on reg. byNamespace adds Reloader's
// reloader_reload_executed_total_by_namespace.
func New(reg prometheus.Registerer, byNamespace bool) (*Metrics, error) {
	m := &Metrics{
		reloadExecuted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_reload_executed_total", Help: "Reloads of workloads, by success.",
		}, []string{"success"}),
		reconcileTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_reconcile_total", Help: "Reconciles of workloads, by result.",
		}, []string{"result"}),
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "reloader_reconcile_duration_seconds", Help: "Duration of a reconcile of a workload, by result.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"result"}),
		actionTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_action_total", Help: "Reload writes, by workload kind and result.",
		}, []string{"workload_kind", "result"}),
		actionLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "reloader_action_latency_seconds", Help: "Time from a config change being seen to the workload's reload being accepted.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"workload_kind"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_skipped_total", Help: "Config events or reconciles that reloaded nothing, by reason.",
		}, []string{"reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_errors_total", Help: "Errors, by type.",
		}, []string{"type"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reloader_retries_total", Help: "Reconciles retried after an error or a write conflict.",
		}),
		eventsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_events_received_total", Help: "Config events received, by event and resource type.",
		}, []string{"event_type", "resource_type"}),
		workloadsScanned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_workloads_scanned_total", Help: "Workloads looked at for config events (from the index, never listed from the API), by kind.",
		}, []string{"kind"}),
		workloadsMatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_workloads_matched_total", Help: "Workloads reloaded, by kind.",
		}, []string{"kind"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ripple_reloads_total", Help: "Rollouts Ripple started, by workload kind and result.",
		}, []string{"kind", "result"}),
		decisionLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ripple_decision_latency_seconds", Help: "Time from a config change being seen to the reload being accepted by the API server, settle window included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5ms to 41s
		}),
		coalesced: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ripple_coalesced_changes", Help: "Config changes carried by one rollout (the settle window merges changes).",
			Buckets: []float64{1, 2, 3, 5, 10, 20, 50},
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ripple_leader", Help: "1 while this replica leads (or runs without leader election), else 0.",
		}),
		notificationDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ripple_notifications_dropped_total", Help: "Webhook or alert messages dropped because their queue was full.",
		}),
		eventsProcessed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_events_processed_total", Help: "Config events, by event and resource type: success if they could change a reload, dropped if not (no data change).",
		}, []string{"event_type", "resource_type", "result"}),
		cacheObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ripple_cache_objects", Help: "Objects in Ripple's cache, by kind.",
		}, []string{"kind"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_workqueue_depth", Help: "Workloads waiting in the work queues, all controllers together.",
		}),
		queueAdds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reloader_workqueue_adds_total", Help: "Workloads added to the work queues.",
		}),
		queueLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "reloader_workqueue_latency_seconds", Help: "Time a workload waits in a work queue before it is reconciled.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		controllerDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ripple_workqueue_depth", Help: "Workloads waiting in the work queue, by controller (workload kind).",
		}, []string{"controller"}),
	}
	collectors := []prometheus.Collector{m.reloadExecuted, m.reconcileTotal, m.reconcileDuration, m.actionTotal, m.actionLatency,
		m.skipped, m.errors, m.retries, m.eventsReceived, m.workloadsScanned, m.workloadsMatched,
		m.reloads, m.decisionLatency, m.coalesced, m.leader, m.notificationDropped,
		m.eventsProcessed, m.cacheObjects, m.queueDepth, m.queueAdds, m.queueLatency, m.controllerDepth}
	if byNamespace {
		m.reloadByNamespace = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_reload_executed_total_by_namespace", Help: "Reloads of workloads, by success and namespace.",
		}, []string{"success", "namespace"})
		collectors = append(collectors, m.reloadByNamespace)
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Reloader shows both values from the start; so do we.
	for _, s := range []string{"true", "false"} {
		m.reloadExecuted.WithLabelValues(s)
	}
	return m, nil
}

// Reloaded records one reload write of a workload of kind in namespace:
// its result, how long since the change was first seen, and how many
// config changes it carried.
func (m *Metrics) Reloaded(kind, namespace string, err error, seen time.Duration, changes int) {
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
		m.actionLatency.WithLabelValues(kind).Observe(seen.Seconds())
		m.decisionLatency.Observe(seen.Seconds())
		m.coalesced.Observe(float64(changes))
		m.workloadsMatched.WithLabelValues(kind).Inc()
	}
}

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
