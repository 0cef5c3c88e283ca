package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// wavesPlan is Workloads one-replica Deployments on the full cluster that
// share one Secret, changed once. Cap is --max-concurrent-rollouts; -1
// runs the controller's defaults (a cap of 100).
type wavesPlan struct {
	Workloads int
	Cap       int
	// Canary runs the controller's defaults with --canary=1 and
	// --canary-bake=canaryBake: one Deployment rolls and bakes first.
	Canary bool
}

// canaryBake is the bake of the canaried waves point.
const canaryBake = 10 * time.Second

// stormPlan is Workloads one-replica Deployments on the full cluster that
// share one ConfigMap, changed Every for For. Breaker false runs with
// --flap-threshold=0; true, with the controller's defaults.
type stormPlan struct {
	Workloads int
	Every     time.Duration
	For       time.Duration
	Breaker   bool
}

// Safety is what the waves and storm scenarios measure beyond the common
// numbers.
type Safety struct {
	// PeakInProgress is the most Deployments whose rollout was in
	// progress by their status at once, sampled every SampleMs.
	PeakInProgress int     `json:"peak_in_progress"`
	SampleMs       float64 `json:"sample_ms"`
	// CompleteS is from the change to every Deployment changed and its
	// rollout complete (waves).
	CompleteS float64 `json:"complete_s,omitempty"`
	// FinalS is from the storm's last acknowledged change to the last
	// template change seen (storm).
	FinalS float64 `json:"final_s,omitempty"`
}

// sampleEvery is how often the waves scenario counts rollouts in progress.
const sampleEvery = 200 * time.Millisecond

// flags returns the plan's controller flags and its name's suffix.
func (p wavesPlan) flags() ([]string, string) {
	if p.Canary {
		return []string{"--canary=1", "--canary-bake=" + canaryBake.String()}, "canary"
	}
	if p.Cap < 0 {
		return nil, "defaults"
	}
	return []string{fmt.Sprintf("--max-concurrent-rollouts=%d", p.Cap)}, fmt.Sprintf("cap%d", p.Cap)
}

// waves: one Secret shared by every Deployment changes once; the rollout
// cap lets at most so many roll at a time.
func (r *runner) waves(ctx context.Context, p wavesPlan) Result {
	flags, suffix := p.flags()
	res := Result{
		Name:     fmt.Sprintf("waves/%d-%s", p.Workloads, suffix),
		Scenario: "waves",
		Description: fmt.Sprintf("one Secret used by %d Deployments (1 replica, full cluster) changed once; rollouts in progress sampled every %s",
			p.Workloads, sampleEvery),
		Scale: Scale{Workloads: p.Workloads, Secrets: 1, ConfigBytes: len(smallPayload())},
	}
	timeout := 2*time.Minute + time.Duration(p.Workloads)*300*time.Millisecond
	return r.scenario(ctx, res, true, func(ctx context.Context, s *session) error {
		ref, keys, err := s.sharedConfig(ctx, p.Workloads, true, timeout)
		if err != nil {
			return err
		}
		if err := s.startController(ctx, p.Workloads, flags); err != nil {
			return err
		}
		// The baseline annotation bumps each Deployment's generation, which
		// counts as in progress until the deployment controller has seen
		// it; Ripple counts only the rollouts it started.
		if _, _, err := s.sampleRollouts(ctx, keys, time.Time{}, timeout); err != nil {
			return fmt.Errorf("waiting for the baseline's generations to be observed: %w", err)
		}
		s.beginMeasure(ctx)
		set, err := s.update(ctx, ref, 1, nil, keys)
		if err != nil {
			return err
		}
		s.res.Updates = 1
		peak, took, err := s.sampleRollouts(ctx, keys, set.Start, timeout)
		s.res.Safety = &Safety{PeakInProgress: peak, SampleMs: float64(sampleEvery.Milliseconds()), CompleteS: round3(took.Seconds())}
		if err != nil {
			s.res.Errors.Notes = append(s.res.Errors.Notes, err.Error())
		}
		s.log.Info("wave done", "peakInProgress", peak, "seconds", s.res.Safety.CompleteS)
		return s.countRollouts(ctx, set, keys)
	})
}

// storm: one ConfigMap shared by the Deployments changes every few hundred
// milliseconds; the storm breaker holds them until it is quiet.
func (r *runner) storm(ctx context.Context, p stormPlan) Result {
	var flags []string
	name := fmt.Sprintf("storm/%d-defaults", p.Workloads)
	if !p.Breaker {
		flags = []string{"--flap-threshold=0"}
		name = fmt.Sprintf("storm/%d-breaker-off", p.Workloads)
	}
	changes := int(p.For / p.Every)
	res := Result{
		Name:     name,
		Scenario: "storm",
		Description: fmt.Sprintf("one ConfigMap used by %d Deployments (1 replica, full cluster) changed every %s for %s (%d changes)",
			p.Workloads, p.Every, p.For, changes),
		Scale: Scale{Workloads: p.Workloads, ConfigMaps: 1, ConfigBytes: len(smallPayload())},
	}
	return r.scenario(ctx, res, true, func(ctx context.Context, s *session) error {
		ref, keys, err := s.sharedConfig(ctx, p.Workloads, false, 2*time.Minute)
		if err != nil {
			return err
		}
		if err := s.startController(ctx, p.Workloads, flags); err != nil {
			return err
		}
		s.beginMeasure(ctx)
		sets, err := openLoop(ctx, changes, 1/p.Every.Seconds(), func(ctx context.Context, u int) (ChangeSet, error) {
			return s.update(ctx, ref, u+1, nil, keys)
		})
		s.res.Updates = len(sets)
		if err != nil {
			return err
		}
		set := ChangeSet{Start: sets[0].Start, Workloads: keys}
		for _, u := range sets {
			set.End = maxTime(set.End, u.End)
		}
		// The last rollout comes after the storm: at once without the
		// breaker (after the settle window), after the quiet period with it.
		if err := s.waitChanged(ctx, ChangeSet{Start: set.End, Workloads: keys}, 2*time.Minute); err != nil {
			return err
		}
		if err := s.countRollouts(ctx, set, keys); err != nil {
			return err
		}
		s.res.Safety = &Safety{FinalS: round3(lastChange(s.obs.changesSince(set.End)).Sub(set.End).Seconds())}
		// Rollouts during a storm come before its last change: reaction
		// times from that change would be negative. Final is the storm's.
		s.res.Latency, s.res.AllPatched, s.res.FirstPatch = Latency{}, Latency{}, Latency{}
		return nil
	})
}

// sharedConfig creates a namespace, one config (a Secret when secret)
// and n Deployments that use it, and waits until every Deployment's first
// rollout is complete. It returns the config and the Deployments' keys.
func (s *session) sharedConfig(ctx context.Context, n int, secret bool, timeout time.Duration) (configRef, []string, error) {
	t := time.Now()
	if err := s.namespaces(ctx, 1); err != nil {
		return configRef{}, nil, err
	}
	ns := s.ns(0)
	ref := configRef{Secret: secret, Namespace: ns, Name: "shared"}
	one, name := func(int) string { return ns }, func(int) string { return ref.Name }
	var cms, secrets []string
	var err error
	if secret {
		secrets = []string{ref.Name}
		err = s.create.secrets(ctx, 1, one, name, func(int) []byte { return smallPayload() })
	} else {
		cms = []string{ref.Name}
		err = s.create.configMaps(ctx, 1, one, name, constant(smallPayload()))
	}
	if err != nil {
		return configRef{}, nil, err
	}
	appName := func(i int) string { return fmt.Sprintf("app-%04d", i) }
	if err := s.create.deployments(ctx, n, func(i int) *appsv1.Deployment {
		return deployment(ns, appName(i), cms, secrets)
	}); err != nil {
		return configRef{}, nil, err
	}
	keys := keysOf(n, func(i int) string { return deploymentKey(ns, appName(i)) })
	if err := s.startObserver(true); err != nil {
		return configRef{}, nil, err
	}
	if _, _, err := s.sampleRollouts(ctx, keys, time.Time{}, timeout); err != nil {
		return configRef{}, nil, fmt.Errorf("waiting for the first rollouts: %w", err)
	}
	s.res.SetupS = round3(time.Since(t).Seconds())
	return ref, keys, nil
}

// sampleRollouts counts, every sampleEvery, the Deployments of keys whose
// rollout is in progress, until each has changed at or after since (any
// time, when since is zero) and none is in progress. It returns the peak
// count and the time from since (or from the call) to the end.
func (s *session) sampleRollouts(ctx context.Context, keys []string, since time.Time, timeout time.Duration) (int, time.Duration, error) {
	from := since
	if from.IsZero() {
		from = time.Now()
	}
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	deadline := time.After(timeout)
	peak := 0
	for {
		rolling, unchanged := s.obs.rollingCount(keys, since)
		if since.IsZero() {
			unchanged = 0
		}
		peak = max(peak, rolling)
		if rolling == 0 && unchanged == 0 {
			return peak, time.Since(from), nil
		}
		select {
		case <-ctx.Done():
			return peak, time.Since(from), context.Cause(ctx)
		case <-deadline:
			return peak, time.Since(from), fmt.Errorf("timed out after %s: %d Deployments rolling, %d not changed", timeout, rolling, unchanged)
		case <-tick.C:
		}
	}
}

// lastChange returns the latest of the times in m.
func lastChange(m map[string][]time.Time) time.Time {
	var last time.Time
	for _, times := range m {
		for _, t := range times {
			last = maxTime(last, t)
		}
	}
	return last
}
