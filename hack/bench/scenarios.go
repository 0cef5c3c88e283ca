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

// seeded returns a deterministic random source: the same seed makes the
// same choices and payloads, so runs are reproducible. Nothing it produces
// is a secret.
func seeded(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream)) //nolint:gosec // G404: reproducible benchmark choices, not security
}

// payload returns n printable bytes that differ with seed, so that
// configs and their versions have distinct digests.
func payload(n int, seed uint64) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	rng := seeded(seed, 0x5eed)
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
	// Twenty changes of one config 300 ms apart are a storm to the flap
	// breaker, which would hold the reloads (the storm scenario measures
	// that); here each change is timed on its own.
	flags := append([]string{"--settle-window=0", "--flap-threshold=0"}, fastFlags()...)
	name := fmt.Sprintf("fan-out/%d", p.Workloads)
	desc := fmt.Sprintf("one ConfigMap used by %d Deployments, changed %d times (settle window off, flap breaker off, client QPS 500)", p.Workloads, p.ChangeSets)
	// Between change sets, time for an extra patch to show: with the
	// settle window off one would follow within milliseconds.
	gap := 300 * time.Millisecond
	if p.Defaults {
		flags = nil
		name += "-defaults"
		desc = fmt.Sprintf("one ConfigMap used by %d Deployments, changed %d times, controller default flags", p.Workloads, p.ChangeSets)
		gap = 2 * time.Second // the default settle window is 1s: an extra patch would come after it
	}
	res := Result{Name: name, Scenario: "fan-out", Description: desc,
		Scale: Scale{Workloads: p.Workloads, ConfigMaps: 1, ConfigBytes: len(smallPayload())}}
	return r.scenario(ctx, res, false, func(ctx context.Context, s *session) error {
		t := time.Now()
		if err := s.namespaces(ctx, 1); err != nil {
			return err
		}
		ns := s.ns(0)
		if err := s.create.configMaps(ctx, 1, func(int) string { return ns }, func(int) string { return "shared" }, constant(smallPayload())); err != nil {
			return err
		}
		appName := func(i int) string { return fmt.Sprintf("app-%04d", i) }
		if err := s.create.deployments(ctx, p.Workloads, func(i int) *appsv1.Deployment {
			return deployment(ns, appName(i), []string{"shared"}, nil)
		}); err != nil {
			return err
		}
		keys := keysOf(p.Workloads, func(i int) string { return deploymentKey(ns, appName(i)) })
		s.res.SetupS = round3(time.Since(t).Seconds())
		if err := s.startController(ctx, p.Workloads, flags); err != nil {
			return err
		}
		s.beginMeasure(ctx)
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
		if err := s.endMeasure(ctx, sets, max(gap, time.Second)); err != nil || !p.Defaults {
			return err
		}
		return s.measureFloor(ctx, ns, keys, p.ChangeSets, defaultSettleWindow)
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
		if err := s.setup(ctx, p.create); err != nil {
			return err
		}
		if err := s.startController(ctx, workloads, flags); err != nil {
			return err
		}

		rng := seeded(r.seed, 2)
		picks := rng.Perm(workloads)[:min(p.Updates, workloads)]
		s.beginMeasure(ctx)
		sets, err := openLoop(ctx, len(picks), p.Rate, func(ctx context.Context, u int) (ChangeSet, error) {
			ns, j := s.ns(picks[u]/p.WorkloadsPerNS), picks[u]%p.WorkloadsPerNS
			// Alternately one of the workload's ConfigMaps and Secrets.
			cms, secrets := p.uses(j)
			ref := configRef{Namespace: ns, Name: cms[u%len(cms)]}
			if u%2 == 1 {
				ref = configRef{Secret: true, Namespace: ns, Name: secrets[u%len(secrets)]}
			}
			return s.update(ctx, ref, 1, nil, []string{deploymentKey(ns, p.appName(j))})
		})
		s.res.Updates = len(sets)
		if err != nil {
			return err
		}
		if err := s.waitAll(ctx, sets); err != nil {
			return err
		}
		return s.endMeasure(ctx, sets, 2*time.Second)
	})
}

// create makes the namespaces, configs and Deployments of the plan.
func (p highCardPlan) create(ctx context.Context, s *session) error {
	if err := s.namespaces(ctx, p.Namespaces); err != nil {
		return err
	}
	configs := p.Namespaces * p.ConfigsPerNS
	cfgNS := func(i int) string { return s.ns(i / p.ConfigsPerNS) }
	cmName := func(i int) string { return fmt.Sprintf("cm-%03d", i%p.ConfigsPerNS) }
	secName := func(i int) string { return fmt.Sprintf("secret-%03d", i%p.ConfigsPerNS) }
	small := smallPayload()
	if err := s.create.configMaps(ctx, configs, cfgNS, cmName, constant(small)); err != nil {
		return err
	}
	if err := s.create.secrets(ctx, configs, cfgNS, secName, constant(small)); err != nil {
		return err
	}
	return s.create.deployments(ctx, p.Namespaces*p.WorkloadsPerNS, func(i int) *appsv1.Deployment {
		j := i % p.WorkloadsPerNS
		cms, secrets := p.uses(j)
		return deployment(s.ns(i/p.WorkloadsPerNS), p.appName(j), cms, secrets)
	})
}

// uses returns the configs workload j of a namespace uses: configs 2j and
// 2j+1 of each kind, so that every config has exactly one user.
func (p highCardPlan) uses(j int) (cms, secrets []string) {
	for k := 2 * j; k < 2*j+2 && k < p.ConfigsPerNS; k++ {
		cms = append(cms, fmt.Sprintf("cm-%03d", k))
		secrets = append(secrets, fmt.Sprintf("secret-%03d", k))
	}
	return cms, secrets
}

func (highCardPlan) appName(j int) string { return fmt.Sprintf("app-%03d", j) }

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
			return deployment(secNS(j), fmt.Sprintf("app-%04d", j), nil, []string{secName(j)})
		}); err != nil {
			return err
		}
		s.res.SetupS = round3(time.Since(t).Seconds())
		s.log.Info("objects created", "secrets", p.Secrets, "MiB", p.Secrets*p.Bytes>>20, "seconds", s.res.SetupS)
		if err := s.startController(ctx, p.Workloads, flags); err != nil {
			return err
		}
		rng := seeded(r.seed, 3)
		picks := rng.Perm(p.Workloads)[:min(p.Updates, p.Workloads)]
		s.beginMeasure(ctx)
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
	res := Result{
		Name:     fmt.Sprintf("burst/%d", p.Workloads),
		Scenario: "burst",
		Description: fmt.Sprintf("%d updates in %s to %d configs each used by all %d Deployments (1 replica, full cluster; default settle window)",
			p.Updates, p.Over, p.ConfigMaps+p.Secrets, p.Workloads),
		Scale: Scale{Workloads: p.Workloads, ConfigMaps: p.ConfigMaps, Secrets: p.Secrets, ConfigBytes: len(smallPayload())},
	}
	return r.scenario(ctx, res, true, func(ctx context.Context, s *session) error {
		t := time.Now()
		refs, keys, err := p.create(ctx, s)
		if err != nil {
			return err
		}
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
		s.beginMeasure(ctx)
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
		s.log.Info("updates acknowledged", "updates", len(sets), "seconds", round3(set.End.Sub(set.Start).Seconds()))
		if err := s.waitChanged(ctx, set, time.Minute); err != nil {
			return err
		}
		return s.countRollouts(ctx, set, keys)
	})
}

// create makes the burst's namespace, configs and Deployments, and returns
// the configs and the Deployments' keys.
func (p burstPlan) create(ctx context.Context, s *session) ([]configRef, []string, error) {
	if err := s.namespaces(ctx, 1); err != nil {
		return nil, nil, err
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
	if err := s.create.configMaps(ctx, len(cms), func(int) string { return ns }, func(i int) string { return cms[i] }, constant(small)); err != nil {
		return nil, nil, err
	}
	if err := s.create.secrets(ctx, len(secrets), func(int) string { return ns }, func(i int) string { return secrets[i] }, constant(small)); err != nil {
		return nil, nil, err
	}
	appName := func(i int) string { return fmt.Sprintf("app-%02d", i) }
	if err := s.create.deployments(ctx, p.Workloads, func(i int) *appsv1.Deployment {
		return deployment(ns, appName(i), cms, secrets)
	}); err != nil {
		return nil, nil, err
	}
	return refs, keysOf(p.Workloads, func(i int) string { return deploymentKey(ns, appName(i)) }), nil
}

// countRollouts ends the burst's measurement and counts the ReplicaSets
// the change set made: one per Deployment is one rollout per change set.
func (s *session) countRollouts(ctx context.Context, set ChangeSet, keys []string) error {
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
	s.res.RolloutsPerChangeSet = round3(float64(s.res.NewReplicaSets) / float64(len(keys)))
	s.log.Info("rollouts counted", "replicaSets", s.res.NewReplicaSets, "deployments", len(keys), "perChangeSet", s.res.RolloutsPerChangeSet)
	return nil
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
		if err := p.create(ctx, s); err != nil {
			return err
		}
		s.res.SetupS = round3(time.Since(t).Seconds())
		if err := s.startController(ctx, workloads, nil); err != nil {
			return err
		}
		s.beginMeasure(ctx)
		edits := int(p.Rate * p.Duration.Seconds())
		stopRelists := s.forceRelists(ctx, p.RelistEvery)
		kinds := []string{"configmap", "secret", "deployment"}
		prefixes := []string{"cm", "secret", "app"}
		rng := seeded(r.seed, 4)
		targets := make([]int, edits)
		for u := range targets {
			targets[u] = rng.IntN(workloads)
		}
		_, err := openLoop(ctx, edits, p.Rate, func(ctx context.Context, u int) (ChangeSet, error) {
			i, k := targets[u], u%len(kinds)
			// Alternate labels and annotations on each kind.
			label := (u/len(kinds))%2 == 0
			return ChangeSet{}, editMetadata(ctx, s.cs, kinds[k], p.namespace(s, i), p.name(prefixes[k], i), label, u)
		})
		stopRelists()
		s.res.Edits = edits
		if err != nil {
			return err
		}
		// The default settle window is 1s: a wrong rollout would come
		// within it.
		return s.endMeasure(ctx, nil, 3*time.Second)
	})
}

// create makes the plan's namespaces and, in each, Deployments that use a
// ConfigMap and a Secret of their own.
func (p noOpPlan) create(ctx context.Context, s *session) error {
	if err := s.namespaces(ctx, p.Namespaces); err != nil {
		return err
	}
	n := p.Namespaces * p.WorkloadsPerNS
	nsOf := func(i int) string { return p.namespace(s, i) }
	small := smallPayload()
	if err := s.create.configMaps(ctx, n, nsOf, func(i int) string { return p.name("cm", i) }, constant(small)); err != nil {
		return err
	}
	if err := s.create.secrets(ctx, n, nsOf, func(i int) string { return p.name("secret", i) }, constant(small)); err != nil {
		return err
	}
	return s.create.deployments(ctx, n, func(i int) *appsv1.Deployment {
		return deployment(nsOf(i), p.name("app", i), []string{p.name("cm", i)}, []string{p.name("secret", i)})
	})
}

// namespace and name are those of the i-th object of a kind.
func (p noOpPlan) namespace(s *session, i int) string { return s.ns(i / p.WorkloadsPerNS) }

func (p noOpPlan) name(prefix string, i int) string {
	return fmt.Sprintf("%s-%03d", prefix, i%p.WorkloadsPerNS)
}

// forceRelists makes every informer of the controller relist every d until
// the returned function is called; without the proxy it notes that it
// cannot.
func (s *session) forceRelists(ctx context.Context, d time.Duration) (stop func()) {
	if s.px == nil {
		s.res.Errors.Notes = append(s.res.Errors.Notes, "no proxy: relists could not be forced")
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.px.forceRelist("configmaps", "secrets", "deployments.apps", "statefulsets.apps", "daemonsets.apps")
			}
		}
	}()
	return func() { cancel(); <-done }
}
