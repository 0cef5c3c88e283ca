package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Every reload flag reaches the planner's settings, the storm breaker and
// the rollout caps included: explain builds them here too.
func TestPlanSettings(t *testing.T) {
	cfg, err := parse(t, nil, "--auto-reload-all", "--reload-on-create", "--reload-on-delete", "--sync-after-restart",
		"--dry-run", "--settle-window=3s", "--min-rollout-interval=5m", "--flap-threshold=4", "--flap-window=2m",
		"--flap-quiet-period=20s", "--max-concurrent-rollouts=7", "--max-concurrent-rollouts-per-namespace=2",
		"--rollout-timeout=1m", "--reload-strategy=annotations", "--resources-to-ignore=secrets", "--restart-method=Evict",
		"--approval-max-age=2h", "--approvals-verified", "--tighten-only")
	if err != nil {
		t.Fatal(err)
	}
	started := time.Unix(1000, 0)
	s := cfg.PlanSettings(started)
	want := plan.Settings{
		Keys: cfg.Keys, Strategy: cfg.Strategy, SourceKinds: []refs.Kind{refs.ConfigMap},
		AutoReloadAll: true, ReloadOnCreate: true, ReloadOnDelete: true, SyncAfterRestart: true, DryRun: true,
		SettleWindow: 3 * time.Second, MinRolloutInterval: 5 * time.Minute,
		Flap:     plan.Flap{Threshold: 4, Window: 2 * time.Minute, Quiet: 20 * time.Second},
		Rollouts: plan.RolloutLimits{Max: 7, MaxPerNamespace: 2, Timeout: time.Minute},
		Started:  started, RestartMethod: "evict", Canary: canary.Spec{Bake: canary.DefaultBake},
		ApprovalMaxAge: 2 * time.Hour, ApprovalsVerified: true, TightenOnly: true,
	}
	if s.Strategy.Name() != "annotations" || len(s.SourceKinds) != 1 || s.SourceKinds[0] != refs.ConfigMap {
		t.Fatalf("strategy %s, kinds %v; want annotations, [ConfigMap]", s.Strategy.Name(), s.SourceKinds)
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("PlanSettings =\n%+v\nwant\n%+v", s, want)
	}
}
