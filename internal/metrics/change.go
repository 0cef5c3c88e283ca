package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// changes are the metrics of the change controller (ConfigRollouts).
type changes struct {
	propagation *prometheus.HistogramVec
	stale       *prometheus.GaugeVec
	writes      *prometheus.CounterVec
	refused     *prometheus.CounterVec
}

func newChanges() changes {
	return changes{
		propagation: histogramVec("ripple_change_propagation_seconds",
			"Time from a config change being seen to every consumer Ripple manages running it (its ConfigRollout's Propagated condition), by config kind.",
			[]float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600}, "kind"),
		stale: gaugeVec("ripple_stale_consumers",
			"Workloads that read a config but keep its old data until someone restarts them (not opted in, or under the notify policy), in the latest change of each config, by config kind.", "kind"),
		writes: counterVec("ripple_config_rollout_writes_total",
			"Writes of ConfigRollouts by the change controller, by operation (create, status, label: the latest label moved off an older change, delete).", "op"),
		refused: counterVec("ripple_config_rollouts_refused_total",
			"Changes whose ConfigRollout could not be made, by why: full (the namespace has --config-rollouts-per-namespace changes in flight) or forbidden (the API server refused the create: no right, a quota). A canaried change among them is held (CanaryUnkept).", "why"),
	}
}

func (c changes) changeCollectors() []prometheus.Collector {
	return []prometheus.Collector{c.propagation, c.stale, c.writes, c.refused}
}

// Propagated records a change of a config of kind that propagated d after
// it was seen.
func (m *Metrics) Propagated(kind string, d time.Duration) {
	m.propagation.WithLabelValues(kind).Observe(d.Seconds())
}

// StaleConsumers sets how many stale consumers the latest changes of
// configs of kind have.
func (m *Metrics) StaleConsumers(kind string, n int) { m.stale.WithLabelValues(kind).Set(float64(n)) }

// ChangeRefused counts one change whose ConfigRollout could not be made
// (why: full, forbidden).
func (m *Metrics) ChangeRefused(why string) { m.refused.WithLabelValues(why).Inc() }

// ChangeWrite counts one write of a ConfigRollout (op: create, status,
// label, delete).
func (m *Metrics) ChangeWrite(op string) { m.writes.WithLabelValues(op).Inc() }
