package config

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/tracing"
)

// OperationsOptions are how Ripple runs: API client limits, endpoints,
// logs, shutdown and the meta-info ConfigMap.
type OperationsOptions struct {
	KubeAPIQPS              float32
	KubeAPIBurst            int
	MaxConcurrentReconciles int
	// metricsAddr and healthAddr are --metrics-bind-address and
	// --health-probe-bind-address; metricsAddrV2 and healthAddrV2 the same
	// under Reloader 2's names, --metrics-addr and --health-addr.
	metricsAddr, metricsAddrV2, healthAddr, healthAddrV2 given[string]
	EnablePprof                                          bool
	PprofAddr                                            string
	LogFormat                                            string
	LogLevel                                             string
	GracefulShutdownTimeout                              time.Duration
	CacheSyncTimeout                                     time.Duration
	// MetricsByNamespace is $METRICS_COUNT_BY_NAMESPACE == "enabled".
	MetricsByNamespace bool
	// MetaInfoNamespace and MetaInfoDeployment are $RELOADER_NAMESPACE and
	// $RELOADER_DEPLOYMENT_NAME.
	MetaInfoNamespace, MetaInfoDeployment string
	// tracing is whether the OTEL_* variables turn tracing on, or why
	// they are wrong (tracing.On).
	tracing    bool
	tracingErr error
}

// Operations are the validated operations settings.
type Operations struct {
	KubeAPIQPS   float32
	KubeAPIBurst int
	// MaxConcurrentReconciles is how many workloads of one kind are
	// reconciled at once, and so how many reload writes are in flight.
	MaxConcurrentReconciles int
	MetricsAddr             string
	HealthAddr              string
	// PprofAddr serves pprof when not empty.
	PprofAddr string
	LogJSON   bool
	LogLevel  LogLevel
	// MetricsByNamespace registers the namespace-labelled reload counter.
	MetricsByNamespace      bool
	GracefulShutdownTimeout time.Duration
	// CacheSyncTimeout bounds the wait for the caches at start: Ripple
	// exits with an error naming the resources it could not list.
	CacheSyncTimeout time.Duration
	// Tracing exports a trace per change over OTLP/HTTP
	// (docs/tracing.md): an OTLP endpoint is set.
	Tracing bool
}

// DefaultPprofAddr is the default of --pprof-addr: the loopback interface,
// because profiles and the command line are not for everyone who can reach
// the pod.
const DefaultPprofAddr = "127.0.0.1:6060"

// samePort reports whether two listen addresses share a port, which one
// process cannot bind twice when either is on all interfaces.
func samePort(a, b string) bool {
	_, pa, errA := net.SplitHostPort(a)
	_, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa == pb
}

// traced is whether the OTEL_* variables turn tracing on; their error,
// if any, is added to errs.
func (o *OperationsOptions) traced(errs *problems) bool {
	if o.tracingErr != nil {
		*errs = append(*errs, o.tracingErr)
	}
	return o.tracing
}

// LogLevel is a verbosity: 0 is info, higher is more verbose, negative
// quieter, as logr's V levels.
type LogLevel int8

// DefaultMaxConcurrentReconciles is the default of
// --max-concurrent-reconciles. On the 2-core benchmark machine a fan-out's
// writes stop being faster past 16 (the API server's CPU is then the
// limit: 300 patches in about 0.5 s, against 0.7 s with the 4 workers of
// before); on a real cluster each write waits longer for the network and
// etcd, so more in flight help more. docs/performance.md has the numbers.
const DefaultMaxConcurrentReconciles = 32

// maxConcurrentReconciles bounds --max-concurrent-reconciles: each is a
// goroutine per kind and a write in flight.
const maxConcurrentReconciles = 1000

func defaultOperationsOptions() OperationsOptions {
	return OperationsOptions{
		KubeAPIQPS: 20, KubeAPIBurst: 30, MaxConcurrentReconciles: DefaultMaxConcurrentReconciles, metricsAddr: given[string]{v: ":9090"}, PprofAddr: DefaultPprofAddr, LogLevel: "info",
		GracefulShutdownTimeout: 30 * time.Second, CacheSyncTimeout: 2 * time.Minute,
	}
}

func (o *OperationsOptions) readEnv(lookup func(string) string) {
	o.MetaInfoNamespace = strings.TrimSpace(lookup("RELOADER_NAMESPACE"))
	o.MetaInfoDeployment = strings.TrimSpace(lookup("RELOADER_DEPLOYMENT_NAME"))
	o.MetricsByNamespace = lookup("METRICS_COUNT_BY_NAMESPACE") == "enabled"
	o.tracing, o.tracingErr = tracing.On(lookup)
}

// BindFlags registers the operations flags.
func (o *OperationsOptions) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.EnablePprof, "enable-pprof", o.EnablePprof, "Serve Go pprof profiles on --pprof-addr (never on the metrics port).")
	fs.StringVar(&o.PprofAddr, "pprof-addr", o.PprofAddr, `Address of the pprof endpoint. The default answers only inside the pod (kubectl port-forward reaches it); ":6060", Reloader's default, opens it to every interface, and so to anyone who can reach the pod.`)
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Client-side limit of queries per second to the Kubernetes API, for the whole process: discovery, lists and uncached reads (client-go never limits watches). Reload writes and Events are not held by it: reload writes are bounded by --max-concurrent-reconciles and the API server's priority and fairness, so a change used by hundreds of workloads is not throttled, and Events have a budget of their own (100/s, burst 10).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of the --kube-api-qps limit.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "How many workloads of one kind are reconciled at once: the reload writes in flight when one config is used by many workloads. The API server's priority and fairness still bounds them; --max-concurrent-rollouts bounds the rollouts they start.")
	bindTrackedString(fs, &o.metricsAddr, "metrics-bind-address", `Address of /metrics, /live, /healthz and /readyz; "0" turns them all off unless --health-probe-bind-address serves /healthz and /readyz elsewhere (the chart's probes use them).`)
	bindTrackedString(fs, &o.metricsAddrV2, "metrics-addr", "The same as --metrics-bind-address (Reloader 2's name).")
	bindTrackedString(fs, &o.healthAddr, "health-probe-bind-address", `Serve /healthz and /readyz on this address instead of with /metrics, /live, /healthz and /readyz on --metrics-bind-address ("0" disables them).`)
	bindTrackedString(fs, &o.healthAddrV2, "health-addr", "The same as --health-probe-bind-address (Reloader 2's name). Unlike Reloader 2, whose default is :8080, the probes are served with the metrics on --metrics-bind-address unless it is given.")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "On SIGTERM, how long in-flight reloads may take before Ripple exits; the Lease is released at once.")
	fs.DurationVar(&o.CacheSyncTimeout, "cache-sync-timeout", o.CacheSyncTimeout, "How long Ripple waits at start for its caches to sync; then it exits with an error naming the resources it could not list and watch (usually missing RBAC).")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, `Log format: "json", or "" / "text" for human-readable lines.`)
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: trace, debug, info, warning, error, fatal or panic.")
}

func (o *OperationsOptions) validate(errs *problems) Operations {
	quote := func(s string) string { return strconv.Quote(s) }
	op := Operations{
		KubeAPIQPS: o.KubeAPIQPS, KubeAPIBurst: o.KubeAPIBurst, MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		MetricsAddr:        pick(errs, o.metricsAddr, o.metricsAddrV2, "--metrics-bind-address", "--metrics-addr", quote),
		HealthAddr:         pick(errs, o.healthAddr, o.healthAddrV2, "--health-probe-bind-address", "--health-addr", quote),
		MetricsByNamespace: o.MetricsByNamespace, GracefulShutdownTimeout: o.GracefulShutdownTimeout, CacheSyncTimeout: o.CacheSyncTimeout,
	}
	op.Tracing = o.traced(errs)
	if o.CacheSyncTimeout <= 0 {
		errs.bad("cache-sync-timeout", "%s must be positive", o.CacheSyncTimeout)
	}
	if o.GracefulShutdownTimeout < 0 {
		errs.bad("graceful-shutdown-timeout", "%s is negative", o.GracefulShutdownTimeout)
	}
	if o.EnablePprof {
		if o.PprofAddr == "" || samePort(o.PprofAddr, op.MetricsAddr) || (op.HealthAddr != "" && samePort(o.PprofAddr, op.HealthAddr)) {
			errs.bad("pprof-addr", "%q must be an address of its own, not the metrics or health address", o.PprofAddr)
		}
		op.PprofAddr = o.PprofAddr
	}
	if o.KubeAPIQPS <= 0 {
		errs.bad("kube-api-qps", "%v must be positive", o.KubeAPIQPS)
	}
	if o.MaxConcurrentReconciles < 1 || o.MaxConcurrentReconciles > maxConcurrentReconciles {
		errs.bad("max-concurrent-reconciles", "%d is not between 1 and %d", o.MaxConcurrentReconciles, maxConcurrentReconciles)
	}
	if o.KubeAPIBurst <= 0 {
		errs.bad("kube-api-burst", "%d must be positive", o.KubeAPIBurst)
	}
	switch strings.ToLower(o.LogFormat) {
	case "json":
		op.LogJSON = true
	case "", "text":
	default:
		errs.bad("log-format", "%q is not a format; use json or text", o.LogFormat)
	}
	level, ok := parseLogLevel(o.LogLevel)
	if !ok {
		errs.bad("log-level", "%q is not a level; use trace, debug, info, warning, error, fatal or panic", o.LogLevel)
	}
	op.LogLevel = level
	return op
}

// parseLogLevel maps Reloader's logrus level names to logr verbosity.
func parseLogLevel(s string) (LogLevel, bool) {
	switch strings.ToLower(s) {
	case "trace":
		return 2, true
	case "debug":
		return 1, true
	case "info":
		return 0, true
	case "warning", "warn":
		return -1, true
	case "error":
		return -2, true
	case "fatal", "panic":
		return -3, true
	}
	return 0, false
}
