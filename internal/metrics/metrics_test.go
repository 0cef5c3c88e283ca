package metrics

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ripple-dev/ripple/internal/refs"
)

// series gathers reg into name{label="value",...} -> value (a histogram's
// sample count and sum as name_count and name_sum).
func series(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(labels)
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[strings.Replace(key, "{", "_count{", 1)] = float64(m.GetHistogram().GetSampleCount())
				out[strings.Replace(key, "{", "_sum{", 1)] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func newMetrics(t *testing.T, byNamespace bool) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(reg, byNamespace)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// Before anything happens, every series with known label values exists at
// 0, so that rate() and absent() alerts work on a quiet cluster.
func TestSeriesExistAtStart(t *testing.T) {
	m, reg := newMetrics(t, false)
	m.InitKinds("Deployment", "CronJob")
	m.NewEventCounter(nil, []refs.Kind{refs.ConfigMap, refs.Secret})
	got := series(t, reg)
	want := []string{
		`reloader_reload_executed_total{success="true"}`,
		`reloader_reload_executed_total{success="false"}`,
		`reloader_reconcile_total{result="success"}`,
		`reloader_reconcile_total{result="error"}`,
		`reloader_reconcile_total{result="skipped"}`,
		`reloader_reconcile_duration_seconds_count{result="success"}`,
		`reloader_skipped_total{reason="no_data_change"}`,
		`reloader_skipped_total{reason="ignored_or_not_selected"}`,
		`reloader_skipped_total{reason="strategy_not_updated"}`,
		`reloader_errors_total{type="handler_error"}`,
		`reloader_action_total{result="success",workload_kind="Deployment"}`,
		`reloader_action_total{result="error",workload_kind="CronJob"}`,
		`reloader_action_latency_seconds_count{workload_kind="Deployment"}`,
		`reloader_workloads_scanned_total{kind="CronJob"}`,
		`reloader_workloads_matched_total{kind="Deployment"}`,
		`reloader_events_received_total{event_type="add",resource_type="configmaps"}`,
		`reloader_events_received_total{event_type="delete",resource_type="secrets"}`,
		`reloader_events_processed_total{event_type="update",resource_type="secrets",result="dropped"}`,
		`reloader_events_processed_total{event_type="update",resource_type="configmaps",result="success"}`,
		`ripple_reloads_total{kind="Deployment",result="success"}`,
		`ripple_would_reload_total{kind="Deployment"}`,
		`ripple_rollouts_stalled_total{kind="CronJob"}`,
		`ripple_reload_holds_total{kind="Deployment"}`,
		`ripple_rollout_duration_seconds_count{kind="Deployment"}`,
		`reloader_retries_total{}`,
		`ripple_leader{}`,
		`ripple_notifications_failed_total{sink="webhook"}`,
		`ripple_notifications_failed_total{sink="alert"}`,
	}
	for _, s := range want {
		v, ok := got[s]
		if !ok {
			t.Errorf("%s is absent at start, want it at 0", s)
		} else if v != 0 {
			t.Errorf("%s = %v at start, want 0", s, v)
		}
	}
	if _, ok := got[`reloader_action_total{result="success",workload_kind="Rollout"}`]; ok {
		t.Error("a kind Ripple does not reload has series")
	}
}

// A message not delivered counts under its sink only.
func TestNotificationFailed(t *testing.T) {
	m, reg := newMetrics(t, false)
	m.NotificationFailed(SinkAlert)
	m.NotificationFailed(SinkAlert)
	got := series(t, reg)
	if got[`ripple_notifications_failed_total{sink="alert"}`] != 2 || got[`ripple_notifications_failed_total{sink="webhook"}`] != 0 {
		t.Errorf("alert %v, webhook %v; want 2 and 0", got[`ripple_notifications_failed_total{sink="alert"}`], got[`ripple_notifications_failed_total{sink="webhook"}`])
	}
}

// reloader_action_latency_seconds is Reloader's: from the start of the
// workload's update; the settle window is only in
// ripple_decision_latency_seconds.
func TestReloadedLatencies(t *testing.T) {
	m, reg := newMetrics(t, true)
	m.Reloaded("Deployment", "shop", nil, 200*time.Millisecond, 5*time.Second, 2)
	m.Reloaded("Deployment", "shop", errors.New("forbidden"), time.Second, 9*time.Second, 1)
	got := series(t, reg)
	for s, want := range map[string]float64{
		`reloader_action_latency_seconds_count{workload_kind="Deployment"}`:             1,
		`reloader_action_latency_seconds_sum{workload_kind="Deployment"}`:               0.2,
		`ripple_decision_latency_seconds_sum{}`:                                         5,
		`ripple_coalesced_changes_sum{}`:                                                2,
		`reloader_action_total{result="success",workload_kind="Deployment"}`:            1,
		`reloader_action_total{result="error",workload_kind="Deployment"}`:              1,
		`reloader_reload_executed_total{success="true"}`:                                1,
		`reloader_reload_executed_total{success="false"}`:                               1,
		`reloader_reload_executed_total_by_namespace{namespace="shop",success="false"}`: 1,
		`reloader_workloads_matched_total{kind="Deployment"}`:                           1,
	} {
		if got[s] != want {
			t.Errorf("%s = %v, want %v", s, got[s], want)
		}
	}
}

// The start of an update travels on the context; without one the
// fallback is used.
func TestStart(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := Start(WithStart(t.Context(), at), time.Time{}); !got.Equal(at) {
		t.Errorf("Start = %v, want %v", got, at)
	}
	if got := Start(t.Context(), at); !got.Equal(at) {
		t.Errorf("Start without one = %v, want the fallback %v", got, at)
	}
}

// Reconciles count by result, skips by reason, errors as handler errors;
// an update without a data change is dropped and a no_data_change skip.
func TestReconciledAndEvents(t *testing.T) {
	m, reg := newMetrics(t, false)
	m.Reconciled(ResultSkipped, SkipStrategyNotUpdated, time.Millisecond)
	m.Reconciled(ResultError, "", time.Millisecond)
	m.Reconciled(ResultSkipped, "", time.Millisecond)
	m.EventReceived("update", "configmaps", false)
	m.EventReceived("update", "configmaps", true)
	m.Retried()
	got := series(t, reg)
	for s, want := range map[string]float64{
		`reloader_reconcile_total{result="skipped"}`:                                                       2,
		`reloader_reconcile_total{result="error"}`:                                                         1,
		`reloader_skipped_total{reason="strategy_not_updated"}`:                                            1,
		`reloader_skipped_total{reason="no_data_change"}`:                                                  1,
		`reloader_errors_total{type="handler_error"}`:                                                      1,
		`reloader_events_received_total{event_type="update",resource_type="configmaps"}`:                   2,
		`reloader_events_processed_total{event_type="update",resource_type="configmaps",result="dropped"}`: 1,
		`reloader_events_processed_total{event_type="update",resource_type="configmaps",result="success"}`: 1,
		`reloader_retries_total{}`:                                                                         1,
	} {
		if got[s] != want {
			t.Errorf("%s = %v, want %v", s, got[s], want)
		}
	}
}

// The shared queue depth is the sum of the controllers' (Reloader's is the
// last writer's), each controller's depth its own.
func TestQueueDepth(t *testing.T) {
	m, reg := newMetrics(t, false)
	q := m.QueueMetrics()
	a, b := q.NewDepthMetric("Deployment"), q.NewDepthMetric("Job")
	a.Inc()
	a.Inc()
	b.Inc()
	a.Dec()
	q.NewAddsMetric("Job").Inc()
	got := series(t, reg)
	for s, want := range map[string]float64{
		`reloader_workqueue_depth{}`:                      2,
		`ripple_workqueue_depth{controller="Deployment"}`: 1,
		`ripple_workqueue_depth{controller="Job"}`:        1,
		`reloader_workqueue_adds_total{}`:                 1,
	} {
		if got[s] != want {
			t.Errorf("%s = %v, want %v", s, got[s], want)
		}
	}
}

// Holds move the gauge of held workloads up and down.
func TestHolds(t *testing.T) {
	m, reg := newMetrics(t, false)
	m.HoldBegan("Deployment")
	m.HoldBegan("Deployment")
	m.HoldEnded()
	m.SetLeader(true)
	got := series(t, reg)
	for s, want := range map[string]float64{
		`ripple_reloads_held{}`:                        1,
		`ripple_reload_holds_total{kind="Deployment"}`: 2,
		`ripple_leader{}`:                              1,
	} {
		if got[s] != want {
			t.Errorf("%s = %v, want %v", s, got[s], want)
		}
	}
}
