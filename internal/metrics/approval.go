package metrics

import "github.com/prometheus/client_golang/prometheus"

// approval are the metrics of the manual reload policy.
type approval struct {
	pending prometheus.Gauge
}

func newApproval() approval {
	return approval{
		pending: gauge("ripple_reloads_pending", "Workloads whose reload waits for an approval now (reload policy manual; ReloadPending events name them)."),
	}
}

// ReloadsPending sets how many workloads wait for an approval.
func (m *Metrics) ReloadsPending(n int) { m.pending.Set(float64(n)) }
