package config

import (
	"time"

	"github.com/ripple-dev/ripple/internal/plan"
)

// PlanSettings are the settings the planner decides with, for a Ripple
// that started watching at started. It is the one place they are built
// from the flags: the controller and ripple explain both use it, so that
// explain decides as the controller does.
func (c Config) PlanSettings(started time.Time) plan.Settings {
	r := c.Reload
	canary, _ := r.canary() // validated
	return plan.Settings{
		Keys: r.Keys, Strategy: r.Strategy, SourceKinds: r.Kinds, AutoReloadAll: r.AutoReloadAll,
		ReloadOnCreate: r.ReloadOnCreate, ReloadOnDelete: r.ReloadOnDelete, SyncAfterRestart: r.SyncAfterRestart,
		SettleWindow: r.SettleWindow, MinRolloutInterval: r.MinRolloutInterval,
		Flap: plan.Flap{Threshold: r.FlapThreshold, Window: r.FlapWindow, Quiet: r.FlapQuietPeriod},
		Rollouts: plan.RolloutLimits{
			Max: r.MaxConcurrentRollouts, MaxPerNamespace: r.MaxConcurrentRolloutsPerNamespace, Timeout: r.RolloutTimeout,
		},
		Started: started, DryRun: r.DryRun,
		ReloadWindow: r.ReloadWindow, ReloadPolicy: r.ReloadPolicy, NamespaceDefaults: r.NamespaceDefaults,
		RestartMethod: c.RestartMethod, Canary: canary, UnkeptRolls: r.CanaryUnkept == UnkeptRoll,
		ApprovalMaxAge: r.ApprovalMaxAge, ApprovalsVerified: r.ApprovalsVerified, TightenOnly: r.TightenOnly,
		DeleteNamespaces: c.DeleteNamespaces, Pinning: r.Pinning,
		Watched: c.Namespaces, Unwatched: c.NamespacesToIgnore,
	}
}
