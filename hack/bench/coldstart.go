package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// firstReloadTimeout bounds the wait for the first reload after a start:
// a controller that takes the changed config for the workload's baseline
// never rolls it, which is reported as missed.
const firstReloadTimeout = time.Minute

// coldStart: the controller starts when many workloads exist; one of them
// is reloaded right after /readyz; then it is restarted once they all
// carry its baseline, which must roll nothing but a second such reload.
func (r *runner) coldStart(ctx context.Context, p coldStartPlan) Result {
	return r.startScenario(ctx, "cold-start", fastFlags(), p)
}

// largeScale: a cold start at the large set's scales, then single changes
// with the settle window off, then a restart.
func (r *runner) largeScale(ctx context.Context, p coldStartPlan) Result {
	return r.startScenario(ctx, "large-scale", append([]string{"--settle-window=0"}, fastFlags()...), p)
}

func (r *runner) startScenario(ctx context.Context, scenario string, flags []string, p coldStartPlan) Result {
	workloads := p.Namespaces * p.WorkloadsPerNS
	cms, secrets := p.Namespaces*p.ConfigMapsPerNS, p.Namespaces*p.SecretsPerNS
	desc := fmt.Sprintf("start with %d Deployments in %d namespaces using %s", workloads, p.Namespaces,
		strings.Join(tallies(tally{cms, "ConfigMaps"}, tally{secrets, "Secrets"}), " and "))
	if p.BigEvery > 0 {
		desc += fmt.Sprintf(" (one in %d of %s)", p.BigEvery, sizeName(bigPayload))
	}
	desc += "; reload the last Deployment right after ready"
	if p.Updates > 0 {
		desc += fmt.Sprintf("; %d single changes at %g/s", p.Updates, p.Rate)
	}
	desc += "; restart and reload it again (" + flagsText(flags, nil) + ")"
	res := Result{
		Name:        fmt.Sprintf("%s/%d", scenario, workloads),
		Scenario:    scenario,
		Description: desc,
		// The first reload's ConfigMap is one more.
		Scale: Scale{Workloads: workloads, ConfigMaps: cms + 1, Secrets: secrets, ConfigBytes: len(smallPayload())},
	}
	return r.scenario(ctx, res, false, func(ctx context.Context, s *session) error {
		if err := s.setup(ctx, p.create); err != nil {
			return err
		}
		probe, key := p.probe(s)
		if err := s.startReady(ctx, flags); err != nil {
			return err
		}
		first := s.firstReload(ctx, probe, 1, key)
		err := s.waitBaseline(ctx, workloads)
		s.res.Startup.FirstReload = first()
		if err != nil {
			return err
		}

		s.beginMeasure(ctx)
		sets, err := p.changes(ctx, s, r.seed)
		if err != nil {
			return err
		}
		if err := s.endMeasure(ctx, sets, 2*time.Second); err != nil {
			return err
		}
		return s.restart(ctx, probe, key)
	})
}

// restart stops the controller and starts it again once every workload
// carries its baseline: it must roll nothing but the workload whose
// config changes right after it is ready.
func (s *session) restart(ctx context.Context, probe configRef, key string) error {
	if err := s.ctl.stop(15 * time.Second); err != nil {
		return err
	}
	st, err := s.launch(ctx, s.kubeconfig, s.res.Name+"-restart")
	if err != nil {
		return err
	}
	quiet := time.Now().Add(3 * time.Second)
	st.FirstReload = s.firstReload(ctx, probe, 2, key)()
	if err := sleep(ctx, time.Until(quiet)); err != nil {
		return err
	}
	if s.px != nil {
		patches := s.px.patchesSince(s.readyAt)
		delete(patches, key)
		st.PatchesAfter = total(patches)
	}
	changes := s.obs.changesSince(s.readyAt)
	delete(changes, key)
	st.TemplateChangesAfter = total(changes)
	s.res.Restart = &st
	s.log.Info("restarted", "seconds", st.ReadyS, "requests", sumMap(st.RequestsToReady),
		"patchesAfter", st.PatchesAfter, "templateChangesAfter", st.TemplateChangesAfter)
	return nil
}

// firstReload changes ref, which only the workload key uses, and returns a
// function that waits until that workload's template changed or
// firstReloadTimeout passed. The wait runs meanwhile, so that the caller
// can time something else (the baselines) at the same time.
func (s *session) firstReload(ctx context.Context, ref configRef, version int, key string) func() *FirstReload {
	fr := &FirstReload{Workload: key, TimeoutS: firstReloadTimeout.Seconds()}
	set, err := s.update(ctx, ref, version, nil, []string{key})
	if err != nil {
		fr.Missed = true
		s.res.Errors.Notes = append(s.res.Errors.Notes, err.Error())
		return func() *FirstReload { return fr }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.obs.waitChanged(ctx, set.Workloads, set.Start, firstReloadTimeout); err != nil {
			fr.Missed = true
			s.log.Warn("first reload missed", "workload", key, "err", err)
			return
		}
		lat, _ := reactionLatencies([]ChangeSet{set}, s.obs.changesSince(set.Start))
		fr.Ms = round3(float64(lat[0]) / float64(time.Millisecond))
		s.log.Info("first reload", "workload", key, "ms", fr.Ms)
	}()
	return func() *FirstReload { <-done; return fr }
}

// create makes the plan's namespaces, configs and Deployments.
func (p coldStartPlan) create(ctx context.Context, s *session) error {
	if err := s.namespaces(ctx, p.Namespaces); err != nil {
		return err
	}
	small, big := smallPayload(), payload(bigPayload, 1)
	// Config c of a kind is config k of namespace c/perNS; g counts every
	// config, ConfigMaps before Secrets, to pick the big ones.
	makeConfigs := func(perNS, offset int, create func(context.Context, int, func(int) string, func(int) string, func(int) []byte) error, name func(int) string) error {
		if perNS == 0 {
			return nil
		}
		return create(ctx, p.Namespaces*perNS, func(c int) string { return s.ns(c / perNS) }, func(c int) string { return name(c % perNS) },
			func(c int) []byte {
				g := (c/perNS)*(p.ConfigMapsPerNS+p.SecretsPerNS) + offset + c%perNS
				if p.BigEvery > 0 && g%p.BigEvery == 0 {
					return big
				}
				return small
			})
	}
	if err := makeConfigs(p.ConfigMapsPerNS, 0, s.create.configMaps, p.cmName); err != nil {
		return err
	}
	if err := makeConfigs(p.SecretsPerNS, p.ConfigMapsPerNS, s.create.secrets, p.secretName); err != nil {
		return err
	}
	probe, key := p.probe(s)
	if err := s.create.configMaps(ctx, 1, func(int) string { return probe.Namespace }, func(int) string { return probe.Name }, constant(small)); err != nil {
		return err
	}
	return s.create.deployments(ctx, p.Namespaces*p.WorkloadsPerNS, func(i int) *appsv1.Deployment {
		ns, j := s.ns(i/p.WorkloadsPerNS), i%p.WorkloadsPerNS
		cms, secrets := p.uses(j)
		if deploymentKey(ns, p.appName(j)) == key {
			cms = append(cms, probe.Name)
		}
		return deployment(ns, p.appName(j), cms, secrets)
	})
}

// uses returns the configs Deployment j of a namespace uses.
func (p coldStartPlan) uses(j int) (cms, secrets []string) {
	if p.ConfigMapsPerNS > 0 {
		cms = []string{p.cmName(j % p.ConfigMapsPerNS)}
	}
	if p.SecretsPerNS > 0 {
		secrets = []string{p.secretName(j % p.SecretsPerNS)}
	}
	return cms, secrets
}

func (coldStartPlan) cmName(k int) string     { return fmt.Sprintf("cm-%02d", k) }
func (coldStartPlan) secretName(k int) string { return fmt.Sprintf("secret-%02d", k) }
func (coldStartPlan) appName(j int) string    { return fmt.Sprintf("app-%03d", j) }

// probe returns the ConfigMap of the first reload and the one Deployment
// that uses it: the last Deployment of the last namespace, which the
// controller's initial list delivers last (lists are in key order).
func (p coldStartPlan) probe(s *session) (configRef, string) {
	ns := s.ns(p.Namespaces - 1)
	return configRef{Namespace: ns, Name: "first-reload"}, deploymentKey(ns, p.appName(p.WorkloadsPerNS-1))
}

// changes makes the plan's single config changes, open loop, each to a
// config picked at random, and waits for the Deployments that use it.
// A config that shares a user with one picked before is passed over: two
// changes that reach one Deployment close together may rightly become one
// PATCH, which would count as a missing one.
func (p coldStartPlan) changes(ctx context.Context, s *session, seed uint64) ([]ChangeSet, error) {
	if p.Updates == 0 {
		return nil, nil
	}
	refs, users := p.picks(s, seed)
	sets, err := openLoop(ctx, len(refs), p.Rate, func(ctx context.Context, u int) (ChangeSet, error) {
		return s.update(ctx, refs[u], 1, nil, users[u])
	})
	s.res.Updates = len(sets)
	if err != nil {
		return nil, err
	}
	return sets, s.waitAll(ctx, sets)
}

// picks returns the configs to change and their users, no Deployment in
// two of them.
func (p coldStartPlan) picks(s *session, seed uint64) ([]configRef, [][]string) {
	perNS := p.ConfigMapsPerNS + p.SecretsPerNS
	var refs []configRef
	var users [][]string
	used := map[string]bool{}
	for _, c := range seeded(seed, 5).Perm(p.Namespaces * perNS) {
		ref, keys := p.config(s, c/perNS, c%perNS)
		if slices.ContainsFunc(keys, func(k string) bool { return used[k] }) {
			continue
		}
		for _, k := range keys {
			used[k] = true
		}
		refs, users = append(refs, ref), append(users, keys)
		if len(refs) == p.Updates {
			break
		}
	}
	return refs, users
}

// config returns config k of namespace ns (ConfigMaps first, then Secrets)
// and the Deployments that use it.
func (p coldStartPlan) config(s *session, ns, k int) (configRef, []string) {
	ref, perKind := configRef{Namespace: s.ns(ns), Name: p.cmName(k)}, p.ConfigMapsPerNS
	if k >= p.ConfigMapsPerNS {
		k -= p.ConfigMapsPerNS
		ref, perKind = configRef{Secret: true, Namespace: s.ns(ns), Name: p.secretName(k)}, p.SecretsPerNS
	}
	var keys []string
	for j := k; j < p.WorkloadsPerNS; j += perKind {
		keys = append(keys, deploymentKey(ref.Namespace, p.appName(j)))
	}
	return ref, keys
}
