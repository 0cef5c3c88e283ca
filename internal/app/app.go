// Package app is Ripple's composition root: it builds the manager, its
// caches and the controllers from a validated Config, and runs them.
package app

import (
	"context"

	"fmt"
	"net/http"
	"net/http/pprof"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/admission"
	"github.com/ripple-dev/ripple/internal/announce"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/controller"
	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/impact"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/metricgate"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/optional"
	"github.com/ripple-dev/ripple/internal/pin"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/tracing"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Run runs Ripple until ctx is cancelled. synced, when not nil, is called
// once the caches have synced.
func Run(ctx context.Context, cfg config.Config, synced func()) error {
	restCfg, err := restConfig(cfg)
	if err != nil {
		return err
	}
	mgr, err := NewManager(restCfg, cfg)
	if err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	if rm, ok := mgr.(*rippleManager); ok && cfg.Tracing {
		if rm.traces, err = tracing.Start(ctx); err != nil {
			return err
		}
		log.Info("exporting a trace per change over OTLP/HTTP")
		defer flush(ctx, rm.traces)
	}
	if err := Setup(ctx, mgr, cfg, clock.RealClock{}, ctrlmetrics.Registry); err != nil {
		return err
	}
	if synced != nil {
		if err := mgr.Add(afterSync{cache: mgr.GetCache(), f: synced}); err != nil {
			return err
		}
	}
	if cfg.WebhookURL != "" {
		log.Info("starting Ripple in webhook mode: changes are posted, nothing is reloaded")
	} else {
		log.Info("starting Ripple", "strategy", cfg.Strategy.Name(), "settleWindow", cfg.SettleWindow.String(), "dryRun", cfg.DryRun,
			"namespace", cfg.Namespace)
	}
	return mgr.Start(ctx)
}

// flush exports the spans still queued at a shutdown, within
// tracing.ShutdownTimeout.
func flush(ctx context.Context, p *tracing.Provider) {
	if err := p.Shutdown(ctx); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "exporting the last spans at shutdown")
	}
}

// Setup registers Ripple's controllers on mgr: the reloaders, or in
// --webhook-url mode the webhook notifier; its metrics go to reg.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg config.Config, clk clock.PassiveClock, reg prometheus.Registerer) error {
	m, err := metrics.New(reg, cfg.MetricsByNamespace)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if err := metainfo.Add(mgr, cfg.MetaInfo); err != nil {
		return err
	}
	// Every informer Ripple uses starts with the cache, so that the
	// bounded wait at start covers them all.
	for _, obj := range watchedObjects(cfg) {
		if _, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
	}
	settings := cfg.PlanSettings(clk.Now())
	log := mgr.GetLogger()
	if cfg.Shard.Sharded() {
		log.Info("acting only in this shard's namespaces", "shard", cfg.Shard.Index, "of", cfg.Shard.Count, "lease", cfg.LeaderElectionID)
	}
	finder := newFinder(mgr, cfg)
	if cfg.Admission.Addr != "" {
		if err := serveAdmission(mgr, cfg, finder, settings, clk); err != nil {
			return err
		}
	}
	if cfg.WebhookURL != "" {
		q, err := notify.NewQueue(cfg.WebhookURL, notify.Options{OnDrop: m.NotificationDropped,
			OnFail: func() { m.NotificationFailed(metrics.SinkWebhook) }, Sink: "the --webhook-url endpoint"}, log.WithName("webhook"))
		if err != nil {
			return fmt.Errorf("--webhook-url: %w", err)
		}
		return announce.Setup(ctx, mgr, &announce.Notifier{
			Cache: mgr.GetCache(), Finder: finder, Kinds: withRestarts(Kinds(cfg, mgr.GetAPIReader())), Settings: settings, Queue: q,
		})
	}
	return setupReloads(ctx, mgr, cfg, settings, finder, m, clk)
}

// setupReloads registers the reloaders: the workload kinds' controllers,
// the change controller, alerts and pinning.
func setupReloads(ctx context.Context, mgr ctrl.Manager, cfg config.Config, settings plan.Settings, finder *dependents.Finder, m *metrics.Metrics, clk clock.PassiveClock) error {
	if err := refusePinning(mgr, &settings); err != nil {
		return err
	}
	alert, err := alerts(mgr, cfg.Alert, m, clk)
	if err != nil {
		return err
	}
	priors := &source.Priors{} // a manager not built by NewManager keeps none
	if m, ok := mgr.(*rippleManager); ok {
		priors = m.priors
	}
	if err := trackPriors(ctx, mgr.GetCache(), priors, source.Watched(cfg.Kinds)); err != nil {
		return err
	}
	changes, err := changeOptions(cfg)
	if err != nil {
		return err
	}
	if m, ok := mgr.(*rippleManager); ok {
		changes.Tracer = m.traces.Tracer()
	}
	kinds, optional := withRestarts(Kinds(cfg, mgr.GetAPIReader())), optionalKinds(cfg, mgr.GetClient(), clk)
	initKinds(m, kinds, optional)
	return controller.Setup(ctx, mgr, controller.Options{
		Deps:  controller.Deps{Settings: settings, Finder: finder, Alert: alert, Clock: clk, Metrics: m, Priors: priors, Pins: pins(settings, mgr, priors)},
		Kinds: kinds, Optional: optional,
		CSI: cfg.CSI, Namespaces: cfg.Namespaces, Workers: cfg.MaxConcurrentReconciles, Namespace: cfg.Namespace,
		Changes: changes,
	})
}

// refusePinning turns pinning off, saying why once, where the API server
// cannot point pods at the copies (pin.Refusal): a pinned workload's
// rollouts then say it too (plan.Settings.PinRefusal).
func refusePinning(mgr ctrl.Manager, s *plan.Settings) error {
	if !s.Pinning {
		return nil
	}
	why, err := pin.RefusalAt(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("--pinning: %w", err)
	}
	if why != "" {
		mgr.GetLogger().Error(nil, "--pinning is off: "+why, "flag", "--pinning")
		s.Pinning, s.PinRefusal = false, why
	}
	return nil
}

// pins is the copier of pinned configs (--pinning); nil when pinning is
// off. It digests as the cache transform does, with the key ring the
// cache was started with.
func pins(s plan.Settings, mgr ctrl.Manager, priors *source.Priors) *pin.Copier {
	if !s.Pinning {
		return nil
	}
	return &pin.Copier{Client: mgr.GetClient(), API: mgr.GetAPIReader(), Digester: func() digest.Digester { return priors.Digester }, Verified: &pin.Verified{}}
}

// newFinder is the Finder of the workloads that use a config, over mgr's
// cache, in this replica's scope.
func newFinder(mgr ctrl.Manager, cfg config.Config) *dependents.Finder {
	log := mgr.GetLogger()
	return &dependents.Finder{
		Index: dependents.Index{
			Reader: mgr.GetClient(), Keys: cfg.Keys, SourceKinds: cfg.Kinds,
			Error: func(err error, obj client.Object) { log.Error(err, "indexing a workload", "workload", klog.KObj(obj)) },
		},
		Scope: dependents.Scope{
			Reader: mgr.GetClient(), Selective: cfg.NamespaceSelector != nil, ShardCount: cfg.Shard.Count, ShardIndex: cfg.Shard.Index,
		},
	}
}

// keptCanaries tells the admission webhook's verdicts whether a canaried
// change can be kept, as the controller's reconciles are told: ConfigRollouts
// on and their CRD served. A change under review has no canary yet: it
// answers none, or why none can be kept (the change is then held, or
// rolls with --canary-unkept=roll), so the warning says what will happen.
type keptCanaries struct {
	off    bool
	mapper apimeta.RESTMapper
}

func (k keptCanaries) Canary(context.Context, string, plan.Source) (canary.State, bool, error) {
	if k.off {
		return canary.State{}, false, gather.UnkeptOff
	}
	gvk := v1alpha1.GroupVersion.WithKind("ConfigRollout")
	if _, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); apimeta.IsNoMatchError(err) {
		return canary.State{}, false, gather.UnkeptNotServed
	}
	return canary.State{}, false, nil
}

// serveAdmission adds the admission webhook (--admission-bind-address),
// its verdicts made from the caches and indexes the controllers use. The
// digest key is read per review: the manager loads it when it starts.
func serveAdmission(mgr ctrl.Manager, cfg config.Config, finder *dependents.Finder, settings plan.Settings, clk clock.PassiveClock) error {
	digester := func() digest.Digester { return digest.Digester{Mode: cfg.Digest} }
	if m, ok := mgr.(*rippleManager); ok {
		digester = func() digest.Digester { return m.priors.Digester }
	}
	kinds := withRestarts(Kinds(cfg, mgr.GetAPIReader()))
	// Any replica answers for any namespace, shard or not: every one
	// caches them all.
	scope := dependents.Scope{Reader: mgr.GetClient(), Selective: cfg.NamespaceSelector != nil}
	h := &admission.Handler{
		Assessor: func() impact.Assessor {
			return impact.Assessor{Reader: mgr.GetClient(), Settings: settings, Kinds: kinds, Find: finder.Of, Digester: digester(), Rollouts: workload.RolloutOf,
				Canaries: keptCanaries{off: !cfg.ConfigRollouts, mapper: mgr.GetRESTMapper()}}
		},
		InScope: scope.InScope, Selector: cfg.ResourceSelector, Keys: cfg.Keys,
		MaxRollouts: cfg.Admission.MaxRollouts, NamespaceLimits: cfg.NamespaceDefaults,
		ReloadOnCreate: cfg.ReloadOnCreate, ReloadOnDelete: cfg.ReloadOnDelete,
		Clock: clk, Log: mgr.GetLogger().WithName("admission"),
	}
	return admission.Serve(mgr, cfg.Admission, h)
}

// initKinds starts every kind's metrics at zero, so that a dashboard
// shows a kind before its first reload.
func initKinds(m *metrics.Metrics, kinds []workload.Kind, optional []controller.Optional) {
	for _, k := range kinds {
		m.InitKinds(k.Name())
	}
	for _, o := range optional {
		m.InitKinds(o.Kind.Name())
	}
}

// changeOptions are the change controller's options of cfg, with its
// gates; config has validated their flags.
func changeOptions(cfg config.Config) (change.Options, error) {
	o := change.Options{On: cfg.ConfigRollouts, History: cfg.ConfigRolloutHistory, PerNamespace: cfg.ConfigRolloutsPerNamespace,
		PodGate: slices.Contains(cfg.CanaryGates, string(canary.GatePods))}
	if !slices.Contains(cfg.CanaryGates, string(canary.GateQuery)) {
		return o, nil
	}
	api, err := metricgate.NewAPI(cfg.PrometheusURL, cfg.PrometheusCredentialsDir)
	if err != nil {
		return o, fmt.Errorf("--prometheus-url: %w", err)
	}
	o.Query = &change.QueryGate{API: api, Interval: cfg.CanaryQueryInterval, Inconclusive: cfg.CanaryQueryInconclusive == config.InconclusivePass}
	if cfg.CanaryQuery != "" {
		q, err := metricgate.Parse(cfg.CanaryQuery)
		if err != nil {
			return o, fmt.Errorf("--canary-query: %w", err)
		}
		o.Query.Cluster = []metricgate.Query{q}
	}
	return o, nil
}

// alerts returns the function that sends an alert per rollout from a
// queue, or nil when alerts are off (config has warned why).
func alerts(mgr ctrl.Manager, a config.Alert, m *metrics.Metrics, clk clock.PassiveClock) (func(notify.Alert), error) {
	if a.URL == "" {
		return nil, nil
	}
	sink := fmt.Sprintf("the %s alert sink (ALERT_WEBHOOK_URL)", a.Sink)
	if a.Template != nil {
		sink = "the --alert-template alert sink (ALERT_WEBHOOK_URL)"
	}
	log := mgr.GetLogger().WithName("alerts")
	q, err := notify.NewQueue(a.URL, notify.Options{Proxy: a.Proxy, OnDrop: m.NotificationDropped,
		OnFail: func() { m.NotificationFailed(metrics.SinkAlert) }, Sink: sink}, log)
	if err != nil {
		return nil, fmt.Errorf("ALERT_WEBHOOK_URL: %w", err)
	}
	if err := mgr.Add(q); err != nil {
		return nil, err
	}
	if a.Template != nil {
		return a.Template.Sender(q.Send, func() { m.NotificationFailed(metrics.SinkAlert) }, log, clk.Now), nil
	}
	if a.Structured && a.Sink == notify.Raw {
		return func(al notify.Alert) { q.Send(notify.StructuredMessage(al, a.AdditionalInfo, clk.Now())) }, nil
	}
	return func(al notify.Alert) { q.Send(notify.AlertMessage(a.Sink, al, a.AdditionalInfo)) }, nil
}

// Kinds are the built-in workload kinds Ripple rolls under cfg. reader
// reads around the cache.
func Kinds(cfg config.Config, reader client.Reader) []workload.Kind {
	kinds := []workload.Kind{workload.Deployment, workload.StatefulSet, workload.DaemonSet}
	if !cfg.IgnoreCronJobs {
		kinds = append(kinds, workload.NewCronJob(workload.CronJobOptions{
			Mode: cfg.CronJobReload, ModeKey: cfg.Keys.CronJobReload, PendingKey: cfg.Keys.PendingJob, Reader: reader,
		}))
	}
	if !cfg.IgnoreJobs {
		kinds = append(kinds, workload.NewJob(workload.JobOptions{
			Reader: reader, Namespace: cfg.Namespace, RecordLabel: cfg.Keys.RecreateRecord, ReplacesKey: cfg.Keys.Replaces,
		}))
	}
	return kinds
}

// withRestarts adds the restart methods (--restart-method) to the kinds
// that take them.
func withRestarts(kinds []workload.Kind) []workload.Kind {
	for i, k := range kinds {
		kinds[i] = workload.WithRestarts(k)
	}
	return kinds
}

// optionalKinds are the kinds enabled by flags, and the declared kinds,
// used once their API is served. cached reads a Rollout's workloadRef Deployment.
func optionalKinds(cfg config.Config, cached client.Reader, clk clock.PassiveClock) []controller.Optional {
	var out []controller.Optional
	if cfg.ArgoRollouts {
		out = append(out, controller.Optional{
			Kind: workload.NewRollout(workload.RolloutOptions{StrategyKey: cfg.Keys.RolloutStrategy, Reader: cached, Now: clk.Now}),
			API:  optional.API{GVK: workload.RolloutGVK, Flag: "--is-Argo-Rollouts"},
		})
	}
	if cfg.OpenShift {
		out = append(out, controller.Optional{Kind: workload.DeploymentConfig, API: optional.API{GVK: workload.DeploymentConfigGVK, Flag: "--is-openshift"}})
	}
	for _, k := range cfg.DeclaredKinds {
		out = append(out, controller.Optional{Kind: workload.NewDeclared(k), API: optional.API{GVK: k.GVK(), Flag: k.Flag()}})
	}
	return out
}

func restConfig(cfg config.Config) (*rest.Config, error) {
	var (
		rc  *rest.Config
		err error
	)
	if cfg.Kubeconfig != "" {
		if rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
	} else if rc, err = ctrl.GetConfig(); err != nil {
		return nil, fmt.Errorf("no Kubernetes client configuration: not running in a pod, and no kubeconfig in $KUBECONFIG or $HOME/.kube/config; "+
			"run Ripple in the cluster, or set --kubeconfig or $KUBECONFIG (%w)", err)
	}
	rc.UserAgent = "ripple"
	return rc, nil
}

// NewManager builds the controller-runtime manager with Ripple's caches:
// ConfigMaps and Secrets are cached as metadata plus a digest of their data,
// and no cached object keeps its managedFields. The wait for the caches at
// start is bounded by --cache-sync-timeout. Tests tune the manager options
// through opts.
func NewManager(rc *rest.Config, cfg config.Config, opts ...func(*ctrl.Options)) (ctrl.Manager, error) {
	rc = rest.CopyConfig(rc)
	// Built-in types travel as protobuf, as the control plane's own
	// controllers use them: less to encode and decode per write and per
	// watch event (a fan-out of 300: 9 % sooner, docs/performance.md).
	// controller-runtime's clients send them so when the config names no
	// content type (its protobuf scheme: the built-in types), and custom
	// resources, Ripple's ConfigRollouts among them, as JSON, which is all
	// a CRD takes; the clients made with client-go (Events, the Lease) set
	// protobuf themselves. Custom resources and the metadata-only caches
	// negotiate JSON back.
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	// One token bucket for the whole process: each client made from the
	// config (one per kind in controller-runtime) would have its own.
	rc.QPS, rc.Burst = cfg.KubeAPIQPS, cfg.KubeAPIBurst
	rc.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.KubeAPIQPS, cfg.KubeAPIBurst)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	health := &healthChecks{watched: watchedObjects(cfg)}
	priors := &source.Priors{Clock: clock.RealClock{}}
	out, err := newOutage(rc)
	if err != nil {
		return nil, err
	}
	co := cacheOptions(cfg.Scope, priors, out)
	co.DefaultTransform = thenTrimDeclared(co.DefaultTransform, cfg.DeclaredKinds)
	o := managerOptions(cfg, scheme, health, co)
	var bound *syncBound
	o.NewCache = newSyncBound(cfg.CacheSyncTimeout, health.watched, &bound)
	if cfg.LeaderElection {
		if o.LeaderElectionResourceLockInterface, err = newLeaseLock(rc, cfg); err != nil {
			return nil, err
		}
	}
	for _, f := range opts {
		f(&o)
	}
	mgr, err := ctrl.NewManager(rc, o)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if cfg.PprofAddr != "" {
		if err := mgr.Add(pprofServer(cfg.PprofAddr)); err != nil {
			return nil, err
		}
	}
	if err := health.register(mgr); err != nil {
		return nil, err
	}
	rm := &rippleManager{Manager: mgr, bound: bound, priors: priors}
	if cfg.WebhookURL == "" { // webhook mode writes no digest
		rm.digestKey = &digestKeyLoad{namespace: cfg.Namespace, mode: cfg.Digest}
	}
	return rm, nil
}

// managerOptions are the manager's options under cfg, with the caches'
// options c, but for the cache constructor and the leader election lock.
func managerOptions(cfg config.Config, scheme *runtime.Scheme, health *healthChecks, c cache.Options) ctrl.Options {
	return ctrl.Options{
		Scheme: scheme,
		// Reload writes are not held by the client-side rate limit.
		NewClient: writeClient,
		// The optional kinds (Rollouts, DeploymentConfigs, the CSI pod
		// statuses) are unstructured: without this the manager's client
		// reads them from the API server, where the field indexes and the
		// SPCPS transform do not exist.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Cache:  c,
		// Each controller also waits for its own sources at most this long
		// (an optional kind's, found later).
		Controller: ctrlconfig.Controller{CacheSyncTimeout: cfg.CacheSyncTimeout},
		// Reloader serves health beside the metrics, on :9090.
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr, ExtraHandlers: health.handlers()},
		HealthProbeBindAddress:  healthAddr(cfg.HealthAddr),
		LeaderElection:          cfg.LeaderElection,
		LeaderElectionID:        cfg.LeaderElectionID,
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		LeaseDuration:           &cfg.LeaseDuration,
		RenewDeadline:           &cfg.RenewDeadline,
		RetryPeriod:             &cfg.RetryPeriod,
		// On SIGTERM the Lease is released at once (unless
		// --leader-election-release-on-cancel=false), so a standby takes
		// over without waiting for it to expire.
		LeaderElectionReleaseOnCancel: cfg.ReleaseOnCancel,
		GracefulShutdownTimeout:       &cfg.GracefulShutdownTimeout,
	}
}

// watchedObjects are the kinds whose informers Ripple uses from the
// start: the sources, the workload kinds and, with --namespace-selector,
// the namespaces.
func watchedObjects(cfg config.Config) []client.Object {
	var out []client.Object
	for _, k := range source.Watched(cfg.Kinds) {
		out = append(out, source.Object(k))
	}
	for _, k := range Kinds(cfg, nil) {
		out = append(out, k.New())
	}
	if cfg.NamespaceSelector != nil || cfg.NamespaceDefaults {
		out = append(out, dependents.NamespaceObject())
	}
	return out
}

// cacheOptions are Ripple's caches: ConfigMaps and Secrets as metadata
// plus a digest (and only those the resource selector selects), with the
// priors of their changes, the selected namespaces as metadata, and
// nothing from ignored namespaces; every informer waits out an outage of
// the API server (nil: none does).
func cacheOptions(scope config.Scope, priors *source.Priors, out *outage) cache.Options {
	var namespaces map[string]cache.Config
	for _, ns := range scope.Namespaces {
		if namespaces == nil {
			namespaces = map[string]cache.Config{}
		}
		namespaces[ns] = cache.Config{}
	}
	byObject := map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Transform: priors.Transform(refs.ConfigMap), Label: scope.ResourceSelector},
		&corev1.Secret{}:    {Transform: priors.Transform(refs.Secret), Label: scope.ResourceSelector},
	}
	if scope.NamespaceSelector != nil {
		// Only selected namespaces are cached, so a cache miss means
		// "not selected"; labelling one adds it through the watch.
		byObject[&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}] = cache.ByObject{Label: scope.NamespaceSelector}
	}
	// Ignored namespaces are filtered by the API server, never cached.
	var ignored []fields.Selector
	for _, ns := range scope.NamespacesToIgnore {
		ignored = append(ignored, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	var fieldSelector fields.Selector
	if len(ignored) > 0 {
		fieldSelector = fields.AndSelectors(ignored...)
	}
	return cache.Options{
		// Informer errors by resource and RBAC rule, not by Go type.
		DefaultWatchErrorHandler: watchErrorHandler,
		DefaultNamespaces:        namespaces,
		DefaultFieldSelector:     fieldSelector,
		DefaultTransform:         defaultTransform,
		ByObject:                 byObject,
		// The priors' transform reads the informers' stores.
		NewInformer: newInformer(priors, out),
	}
}

// writeClient is the manager's client: reads come from the cache, and
// writes (reload patches, Jobs) skip the client-side rate limit of
// --kube-api-qps, which then bounds only the requests that are not
// reloads. A fan-out of one change to hundreds of workloads is bounded by
// --max-concurrent-reconciles and by the API server's priority and fairness,
// not throttled to a few patches per second.
func writeClient(rc *rest.Config, o client.Options) (client.Client, error) {
	rc = rest.CopyConfig(rc)
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return client.New(rc, o)
}

// defaultTransform trims managedFields on every cached object to Ripple's
// own applied fields and the other managers' names
// (workload.TrimManagedFields), and
// replaces a SecretProviderClassPodStatus's mounted versions by their
// digest, and drops a ConfigRollout's annotations and managedFields,
// which Ripple never reads and whoever may write one could fill. (The pod
// statuses and ConfigRollouts cannot have a ByObject entry: their API may
// not be served when the cache is built.)
func defaultTransform(obj any) (any, error) {
	if cr, ok := obj.(*v1alpha1.ConfigRollout); ok {
		cr.Annotations, cr.ManagedFields = nil, nil
		return cr, nil
	}
	obj, err := source.TransformPodStatus(obj)
	if err != nil {
		return nil, err
	}
	return workload.TrimManagedFields(obj)
}

// thenTrimDeclared runs first, then keeps of the declared kinds' objects
// only what Ripple reads (workload.TrimDeclared).
func thenTrimDeclared(first toolscache.TransformFunc, kinds []declared.Kind) toolscache.TransformFunc {
	if len(kinds) == 0 {
		return first
	}
	trim := workload.TrimDeclared(kinds)
	return func(obj any) (any, error) {
		obj, err := first(obj)
		if err != nil {
			return nil, err
		}
		return trim(obj)
	}
}

// healthChecks serves Reloader's /live and the Kubernetes-style /healthz
// and /readyz.
type healthChecks struct {
	cache cache.Cache
	// watched are the kinds whose informers must have synced.
	watched []client.Object
}

// register adds the checks to mgr: ready once the informers of every
// watched kind have synced.
func (h *healthChecks) register(mgr ctrl.Manager) error {
	h.cache = mgr.GetCache()
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("informers", h.synced)
}

func (h *healthChecks) handlers() map[string]http.Handler {
	live := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("alive")) })
	return map[string]http.Handler{
		"/live":    live,
		"/healthz": live,
		"/readyz": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h.synced(r); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		}),
	}
}

// synced is ready only once every informer has synced, so that a rollout
// of Ripple itself waits for a replica that can act. Standbys sync their
// caches too, so they are ready to take over at once.
func (h *healthChecks) synced(req *http.Request) error {
	if h.cache == nil {
		return fmt.Errorf("starting")
	}
	ctx, cancel := context.WithTimeout(req.Context(), 200*time.Millisecond)
	defer cancel()
	// Each informer Ripple uses, not only those created so far: the cache
	// can be "synced" before the controllers have asked for theirs.
	for _, obj := range h.watched {
		inf, err := h.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
		if !inf.HasSynced() {
			return fmt.Errorf("informer caches have not synced")
		}
	}
	return nil
}

// pprofServer serves the Go profiles on an address of their own, on all
// replicas (it does not need leadership).
func pprofServer(addr string) manager.Runnable {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &manager.Server{
		Name:   "pprof",
		Server: &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second},
	}
}

// healthAddr is the separate health server's address: none when health is
// served with the metrics (the default, empty).
func healthAddr(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}

// afterSync calls f once the cache has synced, on every replica, leader or
// not.
type afterSync struct {
	cache interface{ WaitForCacheSync(context.Context) bool }
	f     func()
}

func (a afterSync) Start(ctx context.Context) error {
	if a.cache.WaitForCacheSync(ctx) && ctx.Err() == nil {
		a.f()
	}
	return nil
}

func (afterSync) NeedLeaderElection() bool { return false }
