package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// smallPayload is the data of an ordinary config: a few hundred bytes.
func smallPayload() []byte { return payload(256, 0) }

// payload returns n printable bytes that differ with seed, so that
// configs and their versions have distinct digests.
func payload(n int, seed uint64) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return b
}

// keysOf returns the Deployment keys for names in ns.
func keysOf(n int, key func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = key(i)
	}
	return out
}

// changeTimeout bounds the wait for one change set: generous, scaled by
// the number of patches and the controller's client QPS.
func changeTimeout(workloads int, flags []string) time.Duration {
	return 30*time.Second + time.Duration(float64(workloads)/qpsOf(flags)*2*float64(time.Second))
}

// fanOut: one ConfigMap used by n Deployments, changed one change set at a
// time; each change must patch every Deployment once.
func (r *runner) fanOut(ctx context.Context, p fanOutPoint) Result {
	flags := append([]string{"--settle-window=0"}, fastFlags()...)
	name := fmt.Sprintf("fan-out/%d", p.Workloads)
	desc := fmt.Sprintf("one ConfigMap used by %d Deployments, changed %d times (settle window off, client QPS 500)", p.Workloads, p.ChangeSets)
	// Between change sets, time for an extra patch to show: with the
	// settle window off one would follow within milliseconds.
	gap := 300 * time.Millisecond
	if p.Defaults {
		flags = nil
		name += "-defaults"
		desc = fmt.Sprintf("one ConfigMap used by %d Deployments, changed %d times, controller default flags", p.Workloads, p.ChangeSets)
		gap = 2 * time.Second // the default settle window is 1s: an extra patch would come after it
		if p.FastClient {
			flags = fastFlags()
			name = fmt.Sprintf("fan-out/%d-qps500", p.Workloads)
			desc = fmt.Sprintf("one ConfigMap used by %d Deployments, changed %d times, controller defaults but client QPS 500", p.Workloads, p.ChangeSets)
		}
	}
	res := Result{Name: name, Scenario: "fan-out", Description: desc,
		Scale: Scale{Workloads: p.Workloads, ConfigMaps: 1, ConfigBytes: len(smallPayload())}}
	return r.scenario(ctx, res, false, func(ctx context.Context, s *session) error {
		t := time.Now()
		if err := s.namespaces(ctx, 1); err != nil {
			return err
		}
		ns := s.ns(0)
		if err := s.create.configMaps(ctx, 1, func(int) string { return ns }, func(int) string { return "shared" }, smallPayload()); err != nil {
			return err
		}
		appName := func(i int) string { return fmt.Sprintf("app-%04d", i) }
		if err := s.create.deployments(ctx, p.Workloads, func(i int) *appsv1.Deployment {
			return deployment(ns, appName(i), []string{"shared"}, nil, 1)
		}); err != nil {
			return err
		}
		keys := keysOf(p.Workloads, func(i int) string { return deploymentKey(ns, appName(i)) })
		s.res.SetupS = round3(time.Since(t).Seconds())
		if err := s.startController(ctx, p.Workloads, flags); err != nil {
			return err
		}
		s.beginMeasure()
		var sets []ChangeSet
		ref := configRef{Namespace: ns, Name: "shared"}
		for c := range p.ChangeSets {
			set, err := s.update(ctx, ref, c+1, nil, keys)
			if err != nil {
				return err
			}
			sets = append(sets, set)
			s.res.Updates++
			if err := s.waitChanged(ctx, set, changeTimeout(p.Workloads, flags)); err != nil {
				return err
			}
			if c < p.ChangeSets-1 {
				if err := sleep(ctx, gap); err != nil {
					return err
				}
			}
		}
		return s.endMeasure(ctx, sets, max(gap, time.Second))
	})
}

// highCardinality: many configs and workloads across many namespaces;
// single configs changed at a steady rate, open loop, each change to a
// different workload, with the settle window off.
func (r *runner) highCardinality(ctx context.Context, p highCardPlan) Result {
	flags := append([]string{"--settle-window=0"}, fastFlags()...)
	workloads := p.Namespaces * p.WorkloadsPerNS
	res := Result{
		Name:     fmt.Sprintf("high-cardinality/%d", workloads),
		Scenario: "high-cardinality",
		Description: fmt.Sprintf("%d ConfigMaps and %d Secrets in %d namespaces, %d Deployments using 2 of each; %d single changes at %g/s (settle window off)",
			p.Namespaces*p.ConfigsPerNS, p.Namespaces*p.ConfigsPerNS, p.Namespaces, workloads, p.Updates, p.Rate),
		Scale: Scale{Workloads: workloads, ConfigMaps: p.Namespaces * p.ConfigsPerNS, Secrets: p.Namespaces * p.ConfigsPerNS, ConfigBytes: len(smallPayload())},
	}
	return r.scenario(ctx, res, false, func(ctx context.Context, s *session) error {
		t := time.Now()
		if err := s.namespaces(ctx, p.Namespaces); err != nil {
			return err
		}
		configs := p.Namespaces * p.ConfigsPerNS
		cfgNS := func(i int) string { return s.ns(i / p.ConfigsPerNS) }
		cmName := func(i int) string { return fmt.Sprintf("cm-%03d", i%p.ConfigsPerNS) }
		secName := func(i int) string { return fmt.Sprintf("secret-%03d", i%p.ConfigsPerNS) }
		if err := s.create.configMaps(ctx, configs, cfgNS, cmName, smallPayload()); err != nil {
			return err
		}
		small := smallPayload()
		if err := s.create.secrets(ctx, configs, cfgNS, secName, func(int) []byte { return small }); err != nil {
			return err
		}
		// Workload j of a namespace uses configs 2j and 2j+1 of each kind,
		// so every config has exactly one user.
		perNS := p.WorkloadsPerNS
		uses := func(j int) (cms, secrets []string) {
			for k := 2 * j; k < 2*j+2 && k < p.ConfigsPerNS; k++ {
				cms = append(cms, fmt.Sprintf("cm-%03d", k))
				secrets = append(secrets, fmt.Sprintf("secret-%03d", k))
			}
			return cms, secrets
		}
		appName := func(j int) string { return fmt.Sprintf("app-%03d", j) }
		if err := s.create.deployments(ctx, workloads, func(i int) *appsv1.Deployment {
			cms, secrets := uses(i % perNS)
			return deployment(s.ns(i/perNS), appName(i%perNS), cms, secrets, 1)
		}); err != nil {
			return err
		}
		s.res.SetupS = round3(time.Since(t).Seconds())
		s.progress("created %d objects in %.1fs", s.res.Scale.Objects(), s.res.SetupS)
		if err := s.startController(ctx, workloads, flags); err != nil {
			return err
		}

		rng := rand.New(rand.NewPCG(r.seed, 2))
		picks := rng.Perm(workloads)[:min(p.Updates, workloads)]
		s.beginMeasure()
		sets, err := openLoop(ctx, len(picks), p.Rate, func(ctx context.Context, u int) (ChangeSet, error) {
			i := picks[u]
			ns, j := s.ns(i/perNS), i%perNS
			cms, secrets := uses(j)
			ref := configRef{Namespace: ns, Name: cms[u%len(cms)]}
			if u%2 == 1 {
				ref = configRef{Secret: true, Namespace: ns, Name: secrets[u%len(secrets)]}
			}
			return s.update(ctx, ref, 1, nil, []string{deploymentKey(ns, appName(j))})
		})
		s.res.Updates = len(sets)
		if err != nil {
			return err
		}
		all := ChangeSet{Start: sets[0].Start}
		for _, set := range sets {
			all.Workloads = append(all.Workloads, set.Workloads...)
		}
		if err := s.waitChanged(ctx, all, changeTimeout(len(picks), flags)); err != nil {
			return err
		}
		return s.endMeasure(ctx, sets, 2*time.Second)
	})
}

// openLoop calls f n times at rate per second, each call in a goroutine of
// its own so that a slow call does not delay the next (an open loop, as
// real changes arrive), and returns the change sets in order of start.
func openLoop(ctx context.Context, n int, rate float64, f func(context.Context, int) (ChangeSet, error)) ([]ChangeSet, error) {
	var (
		mu   sync.Mutex
		sets []ChangeSet
		errs []error
		wg   sync.WaitGroup
	)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for u := range n {
		if u > 0 {
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-tick.C:
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			set, err := f(ctx, u)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			sets = append(sets, set)
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return sets, fmt.Errorf("%d of %d updates failed, the first: %w", len(errs), n, errs[0])
	}
	slices.SortFunc(sets, func(a, b ChangeSet) int { return a.Start.Compare(b.Start) })
	return sets, nil
}

// largeObjects: many big Secrets, a few of them used and changed. What the
// controller caches must not grow with the size of the data.
func (r *runner) largeObjects(ctx context.Context, p largePlan) Result {
	flags := append([]string{"--settle-window=0"}, fastFlags()...)
	const namespaces = 10
	res := Result{
		Name:     fmt.Sprintf("large-objects/%dx%s", p.Secrets, sizeName(p.Bytes)),
		Scenario: "large-objects",
		Description: fmt.Sprintf("%d Secrets of %s in %d namespaces, %d used by a Deployment each; %d changes with a new payload (settle window off)",
			p.Secrets, sizeName(p.Bytes), namespaces, p.Workloads, p.Updates),
		Scale: Scale{Workloads: p.Workloads, Secrets: p.Secrets, ConfigBytes: p.Bytes},
	}
	return r.scenario(ctx, res, false, func(ctx context.Context, s *session) error {
		t := time.Now()
		if err := s.namespaces(ctx, namespaces); err != nil {
			return err
		}
		base := payload(p.Bytes, r.seed)
		// Each Secret gets its own copy, marked with its index, built when
		// it is sent and dropped after: the benchmark holds one payload.
		mark := func(i int) []byte {
			b := slices.Clone(base)
			copy(b, fmt.Sprintf("%08d", i))
			return b
		}
		secNS := func(i int) string { return s.ns(i % namespaces) }
		secName := func(i int) string { return fmt.Sprintf("big-%04d", i) }
		c := s.create
		c.workers = 4 // 4 x 500 KiB in flight is enough to keep etcd busy
		if err := c.secrets(ctx, p.Secrets, secNS, secName, mark); err != nil {
			return err
		}
		if err := s.create.deployments(ctx, p.Workloads, func(j int) *appsv1.Deployment {
			return deployment(secNS(j), fmt.Sprintf("app-%04d", j), nil, []string{secName(j)}, 1)
		}); err != nil {
			return err
		}
		s.res.SetupS = round3(time.Since(t).Seconds())
		s.progress("created %d Secrets (%d MiB) in %.1fs", p.Secrets, p.Secrets*p.Bytes>>20, s.res.SetupS)
		if err := s.startController(ctx, p.Workloads, flags); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(r.seed, 3))
		picks := rng.Perm(p.Workloads)[:min(p.Updates, p.Workloads)]
		s.beginMeasure()
		var sets []ChangeSet
		for u, j := range picks {
			ref := configRef{Secret: true, Namespace: secNS(j), Name: secName(j)}
			set, err := s.update(ctx, ref, 1, mark(p.Secrets+u), []string{deploymentKey(secNS(j), fmt.Sprintf("app-%04d", j))})
			if err != nil {
				return err
			}
			sets = append(sets, set)
			s.res.Updates++
			if err := s.waitChanged(ctx, set, changeTimeout(1, flags)); err != nil {
				return err
			}
		}
		return s.endMeasure(ctx, sets, 2*time.Second)
	})
}

func sizeName(b int) string {
	if b >= 1<<10 && b%(1<<10) == 0 {
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

// burst: many changes in a short time to configs that every workload uses,
// on the full cluster, with the controller's default settle window: one
// change set, which should become one rollout per workload.
func (r *runner) burst(ctx context.Context, p burstPlan) Result {
	flags := fastFlags()
	configs := p.ConfigMaps + p.Secrets
	res := Result{
		Name:     fmt.Sprintf("burst/%d", p.Workloads),
		Scenario: "burst",
		Description: fmt.Sprintf("%d updates in %s to %d configs each used by all %d Deployments (1 replica, full cluster; default settle window)",
			p.Updates, p.Over, configs, p.Workloads),
		Scale: Scale{Workloads: p.Workloads, ConfigMaps: p.ConfigMaps, Secrets: p.Secrets, ConfigBytes: len(smallPayload())},
	}
	return r.scenario(ctx, res, true, func(ctx context.Context, s *session) error {
		t := time.Now()
		if err := s.namespaces(ctx, 1); err != nil {
			return err
		}
		ns := s.ns(0)
		var refs []configRef
		var cms, secrets []string
		for i := range p.ConfigMaps {
			cms = append(cms, fmt.Sprintf("cm-%d", i))
			refs = append(refs, configRef{Namespace: ns, Name: cms[i]})
		}
		for i := range p.Secrets {
			secrets = append(secrets, fmt.Sprintf("secret-%d", i))
			refs = append(refs, configRef{Secret: true, Namespace: ns, Name: secrets[i]})
		}
		small := smallPayload()
		if err := s.create.configMaps(ctx, len(cms), func(int) string { return ns }, func(i int) string { return cms[i] }, small); err != nil {
			return err
		}
		if err := s.create.secrets(ctx, len(secrets), func(int) string { return ns }, func(i int) string { return secrets[i] }, func(int) []byte { return small }); err != nil {
			return err
		}
		appName := func(i int) string { return fmt.Sprintf("app-%02d", i) }
		if err := s.create.deployments(ctx, p.Workloads, func(i int) *appsv1.Deployment {
			return deployment(ns, appName(i), cms, secrets, 1)
		}); err != nil {
			return err
		}
		keys := keysOf(p.Workloads, func(i int) string { return deploymentKey(ns, appName(i)) })
		if err := s.startObserver(true); err != nil {
			return err
		}
		if err := s.obs.waitReplicaSets(ctx, keys, time.Time{}, 2*time.Minute); err != nil {
			return fmt.Errorf("waiting for the first ReplicaSets: %w", err)
		}
		s.res.SetupS = round3(time.Since(t).Seconds())
		if err := s.startController(ctx, p.Workloads, flags); err != nil {
			return err
		}
		s.beginMeasure()
		sets, err := openLoop(ctx, p.Updates, float64(p.Updates)/p.Over.Seconds(), func(ctx context.Context, u int) (ChangeSet, error) {
			return s.update(ctx, refs[u%len(refs)], u+1, nil, keys)
		})
		s.res.Updates = len(sets)
		if err != nil {
			return err
		}
		set := ChangeSet{Start: sets[0].Start, Workloads: keys}
		for _, u := range sets {
			set.End = maxTime(set.End, u.End)
		}
		s.progress("%d updates acknowledged within %.2fs", len(sets), set.End.Sub(set.Start).Seconds())
		if err := s.waitChanged(ctx, set, time.Minute); err != nil {
			return err
		}
		// A second rollout would follow the first within the settle window;
		// the ReplicaSets follow the template changes.
		if err := sleep(ctx, 3*time.Second); err != nil {
			return err
		}
		if err := s.obs.waitReplicaSets(ctx, keys, s.measureStart, time.Minute); err != nil {
			s.res.Errors.Notes = append(s.res.Errors.Notes, err.Error())
		}
		if err := s.endMeasure(ctx, []ChangeSet{set}, 2*time.Second); err != nil {
			return err
		}
		s.res.NewReplicaSets = total(s.obs.replicaSetsSince(s.measureStart))
		s.res.RolloutsPerChangeSet = round3(float64(s.res.NewReplicaSets) / float64(p.Workloads))
		s.progress("%d new ReplicaSets for %d Deployments: %.2f rollouts per change set", s.res.NewReplicaSets, p.Workloads, s.res.RolloutsPerChangeSet)
		return nil
	})
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// noOp: label- and annotation-only edits of configs and workloads, and
// forced relists of every informer, with the controller's default flags:
// none of it may patch anything.
func (r *runner) noOp(ctx context.Context, p noOpPlan) Result {
	workloads := p.Namespaces * p.WorkloadsPerNS
	res := Result{
		Name:     fmt.Sprintf("no-op/%d", workloads),
		Scenario: "no-op",
		Description: fmt.Sprintf("%g label/annotation-only edits per second for %s on %d Deployments and their %d ConfigMaps and %d Secrets, and a forced relist of every informer every %s (controller default flags)",
			p.Rate, p.Duration, workloads, workloads, workloads, p.RelistEvery),
		Scale: Scale{Namespaces: p.Namespaces, Workloads: workloads, ConfigMaps: workloads, Secrets: workloads, ConfigBytes: len(smallPayload())},
	}
	return r.scenario(ctx, res, false, func(ctx context.Context, s *session) error {
		t := time.Now()
		if err := s.namespaces(ctx, p.Namespaces); err != nil {
			return err
		}
		nsOf := func(i int) string { return s.ns(i / p.WorkloadsPerNS) }
		name := func(prefix string) func(int) string {
			return func(i int) string { return fmt.Sprintf("%s-%03d", prefix, i%p.WorkloadsPerNS) }
		}
		small := smallPayload()
		if err := s.create.configMaps(ctx, workloads, nsOf, name("cm"), small); err != nil {
			return err
		}
		if err := s.create.secrets(ctx, workloads, nsOf, name("secret"), func(int) []byte { return small }); err != nil {
			return err
		}
		if err := s.create.deployments(ctx, workloads, func(i int) *appsv1.Deployment {
			return deployment(nsOf(i), name("app")(i), []string{name("cm")(i)}, []string{name("secret")(i)}, 1)
		}); err != nil {
			return err
		}
		s.res.SetupS = round3(time.Since(t).Seconds())
		if err := s.startController(ctx, workloads, nil); err != nil {
			return err
		}
		s.beginMeasure()
		edits := int(p.Rate * p.Duration.Seconds())
		relistCtx, stopRelists := context.WithCancel(ctx)
		relistsDone := make(chan struct{})
		go func() {
			defer close(relistsDone)
			if s.px == nil {
				return
			}
			tick := time.NewTicker(p.RelistEvery)
			defer tick.Stop()
			for {
				select {
				case <-relistCtx.Done():
					return
				case <-tick.C:
					s.px.forceRelist("configmaps", "secrets", "deployments.apps", "statefulsets.apps", "daemonsets.apps")
				}
			}
		}()
		kinds := []string{"configmap", "secret", "deployment"}
		prefixes := []string{"cm", "secret", "app"}
		rng := rand.New(rand.NewPCG(r.seed, 4))
		targets := make([]int, edits)
		for u := range targets {
			targets[u] = rng.IntN(workloads)
		}
		_, err := openLoop(ctx, edits, p.Rate, func(ctx context.Context, u int) (ChangeSet, error) {
			i, k := targets[u], u%len(kinds)
			// Alternate labels and annotations on each kind.
			label := (u/len(kinds))%2 == 0
			return ChangeSet{}, editMetadata(ctx, s.cs, kinds[k], nsOf(i), name(prefixes[k])(i), label, u)
		})
		stopRelists()
		<-relistsDone
		s.res.Edits = edits
		if err != nil {
			return err
		}
		if s.px == nil {
			s.res.Errors.Notes = append(s.res.Errors.Notes, "no proxy: relists could not be forced")
		}
		// The default settle window is 1s: a wrong rollout would come
		// within it.
		return s.endMeasure(ctx, nil, 3*time.Second)
	})
}

// coldStart: the controller starts when many workloads exist; then it is
// restarted once they all carry its baseline, which must roll nothing.
func (r *runner) coldStart(ctx context.Context, p coldStartPlan) Result {
	flags := fastFlags()
	workloads := p.Namespaces * p.WorkloadsPerNS
	res := Result{
		Name:     fmt.Sprintf("cold-start/%d", workloads),
		Scenario: "cold-start",
		Description: fmt.Sprintf("start with %d Deployments in %d namespaces using %d ConfigMaps; then restart (client QPS 500)",
			workloads, p.Namespaces, p.Namespaces*p.ConfigsPerNS),
		Scale: Scale{Workloads: workloads, ConfigMaps: p.Namespaces * p.ConfigsPerNS, ConfigBytes: len(smallPayload())},
	}
	return r.scenario(ctx, res, false, func(ctx context.Context, s *session) error {
		t := time.Now()
		if err := s.namespaces(ctx, p.Namespaces); err != nil {
			return err
		}
		small := smallPayload()
		configs := p.Namespaces * p.ConfigsPerNS
		if err := s.create.configMaps(ctx, configs, func(i int) string { return s.ns(i / p.ConfigsPerNS) },
			func(i int) string { return fmt.Sprintf("cm-%02d", i%p.ConfigsPerNS) }, small); err != nil {
			return err
		}
		if err := s.create.deployments(ctx, workloads, func(i int) *appsv1.Deployment {
			j := i % p.WorkloadsPerNS
			return deployment(s.ns(i/p.WorkloadsPerNS), fmt.Sprintf("app-%03d", j), []string{fmt.Sprintf("cm-%02d", j%p.ConfigsPerNS)}, nil, 1)
		}); err != nil {
			return err
		}
		s.res.SetupS = round3(time.Since(t).Seconds())
		s.progress("created %d objects in %.1fs", s.res.Scale.Objects(), s.res.SetupS)
		if err := s.startController(ctx, workloads, flags); err != nil {
			return err
		}
		s.beginMeasure()
		if err := s.endMeasure(ctx, nil, 2*time.Second); err != nil {
			return err
		}

		// Restart: the new process must find every baseline in place and
		// roll nothing.
		if err := s.ctl.stop(15 * time.Second); err != nil {
			return err
		}
		st, err := s.launch(ctx, s.kubeconfig, s.res.Name+"-restart")
		if err != nil {
			return err
		}
		if err := sleep(ctx, 3*time.Second); err != nil {
			return err
		}
		if s.px != nil {
			st.PatchesAfter = total(s.px.patchesSince(s.readyAt))
		}
		st.TemplateChangesAfter = total(s.obs.changesSince(s.readyAt))
		s.res.Restart = &st
		s.progress("restart: ready in %.2fs, %d API requests; then %d workload patches, %d template changes",
			st.ReadyS, sumMap(st.RequestsToReady), st.PatchesAfter, st.TemplateChangesAfter)
		return nil
	})
}
