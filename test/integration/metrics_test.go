package integration

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
)

// After known actions, /metrics holds exact counts of Reloader's metrics
// (each event counted once) and of Ripple's own.
func TestMetricsCountExactly(t *testing.T) {
	e := newEnv(t) // not parallel: the only Ripple on the real registry
	e.globalMetrics = true
	addr := freeAddr(t)
	e.run(t, "--metrics-bind-address="+addr)
	deploy, sts := kit.Deployment, kit.StatefulSet
	cm1, cm2 := refs.Ref{Kind: refs.ConfigMap, Name: "cm1"}, refs.Ref{Kind: refs.ConfigMap, Name: "cm2"}
	e.newConfig(t, cm1)
	e.newConfig(t, cm2)
	a := e.newWorkload(t, deploy, "a", ann(autoKey, "true"), envFrom(cm1.Kind, cm1.Name), envFrom(cm2.Kind, cm2.Name))
	b := e.newWorkload(t, deploy, "b", ann(cmReloadKey, "cm1"), envFrom(cm1.Kind, cm1.Name))
	e.newWorkload(t, sts, "c", nil, envFrom(cm1.Kind, cm1.Name))
	e.waitFor(t, a, "the baseline record", hasBaseline)
	e.waitFor(t, b, "the baseline record", hasBaseline)

	sum1 := e.setConfig(t, cm1, "v2")
	e.waitApplied(t, deploy, a, cm1, sum1)
	e.waitApplied(t, deploy, b, cm1, sum1)
	e.waitApplied(t, deploy, a, cm2, e.setConfig(t, cm2, "v2"))
	cfg := configObject(e.ns, cm1, nil, "")
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(cfg), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.SetLabels(map[string]string{"only": "labels"})
	if err := e.c.Update(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // let the label-only event arrive

	got := kit.Scrape(t, addr)
	want := map[string]float64{
		`reloader_reload_executed_total{success="true"}`:                                 3,
		`reloader_reload_executed_total{success="false"}`:                                0,
		`reloader_action_total{result="success",workload_kind="Deployment"}`:             3,
		`reloader_workloads_matched_total{kind="Deployment"}`:                            3,
		`reloader_reconcile_total{result="success"}`:                                     3,
		`reloader_skipped_total{reason="no_data_change"}`:                                1,
		`reloader_events_received_total{event_type="add",resource_type="configmaps"}`:    2,
		`reloader_events_received_total{event_type="update",resource_type="configmaps"}`: 3,
		`reloader_action_latency_seconds_count{workload_kind="Deployment"}`:              3,
		`ripple_reloads_total{kind="Deployment",result="success"}`:                       3,
		`ripple_decision_latency_seconds_count{}`:                                        3,
		`ripple_coalesced_changes_count{}`:                                               3,
		`ripple_coalesced_changes_sum{}`:                                                 3,
		`ripple_leader{}`:                                                                1,
		// Reloader's events_processed_total with its real event type (it
		// always said "unknown"): the label-only update is dropped.
		`reloader_events_processed_total{event_type="add",resource_type="configmaps",result="success"}`:    2,
		`reloader_events_processed_total{event_type="update",resource_type="configmaps",result="success"}`: 2,
		`reloader_events_processed_total{event_type="update",resource_type="configmaps",result="dropped"}`: 1,
		`ripple_cache_objects{kind="ConfigMap"}`:                                                           2,
		`ripple_cache_objects{kind="Deployment"}`:                                                          2,
		`ripple_cache_objects{kind="StatefulSet"}`:                                                         1,
		// Series with known labels exist from the start, at 0, so that
		// rate() and absent() alerts work on a quiet cluster.
		`reloader_action_total{result="error",workload_kind="Deployment"}`:                                 0,
		`reloader_action_total{result="success",workload_kind="DaemonSet"}`:                                0,
		`reloader_reconcile_total{result="error"}`:                                                         0,
		`reloader_events_received_total{event_type="delete",resource_type="secrets"}`:                      0,
		`ripple_rollouts_stalled_total{kind="StatefulSet"}`:                                                0,
		`reloader_events_processed_total{event_type="delete",resource_type="configmaps",result="success"}`: 0,
		// Everything was reconciled: the queues are empty.
		`reloader_workqueue_depth{}`:                       0,
		`ripple_workqueue_depth{controller="Deployment"}`:  0,
		`ripple_workqueue_depth{controller="StatefulSet"}`: 0,
	}
	for _, key := range []string{`reloader_workqueue_adds_total{}`, `reloader_workqueue_latency_seconds_count{}`} {
		if got[key] < 3 { // at least the three reloads went through a queue
			t.Errorf("%s = %v, want at least 3", key, got[key])
		}
	}
	for key, v := range want {
		if g, ok := got[key]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", key, g, ok, v)
		}
	}
	for _, key := range []string{`reloader_skipped_total{reason="strategy_not_updated"}`, `reloader_skipped_total{reason="ignored_or_not_selected"}`} {
		if _, ok := got[key]; !ok {
			t.Errorf("%s is absent, want it from the start", key)
		}
	}
	for key := range got {
		if strings.HasPrefix(key, "reloader_reload_executed_total_by_namespace") {
			t.Errorf("%s is registered without METRICS_COUNT_BY_NAMESPACE=enabled", key)
		}
	}
}
