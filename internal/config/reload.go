package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/metricgate"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/window"
)

// ReloadFlags are the reload flags that validation keeps as they are.
type ReloadFlags struct {
	AutoReloadAll    bool
	SettleWindow     time.Duration
	ReloadOnCreate   bool
	ReloadOnDelete   bool
	SyncAfterRestart bool
	// WebhookURL, when set, replaces reloading with a POST per change.
	WebhookURL string
	// DryRun decides every reload and writes none.
	DryRun bool
	// MaxConcurrentRollouts caps the rollouts Ripple started that are in
	// progress, all namespaces together; 0 is no cap.
	MaxConcurrentRollouts int
	// MaxConcurrentRolloutsPerNamespace caps them per namespace; 0 is no cap.
	MaxConcurrentRolloutsPerNamespace int
	// RolloutTimeout is how long a rollout may take before it is reported
	// stalled and frees its slot.
	RolloutTimeout time.Duration
	// MinRolloutInterval is the least time between two rollouts of one
	// workload; 0 means none.
	MinRolloutInterval time.Duration
	// FlapThreshold, FlapWindow and FlapQuietPeriod are the flap
	// breaker's limits; a threshold of 0 turns it off.
	FlapThreshold               int
	FlapWindow, FlapQuietPeriod time.Duration
	// ReloadWindow and ReloadPolicy are the cluster defaults of the
	// reload-window and reload-policy annotations.
	ReloadWindow, ReloadPolicy string
	// NamespaceDefaults reads those annotations on Namespaces too, from a
	// metadata-only cache of Namespaces (a cluster-wide read).
	NamespaceDefaults bool
	// Canary and CanaryBake are the cluster defaults of the canary and
	// canary-bake annotations of configs (docs/canary.md).
	Canary     string
	CanaryBake time.Duration
	// CanaryUnkept is what a canaried change does when no canary can be
	// kept for it (no ConfigRollouts): hold it, or roll it without one.
	CanaryUnkept string
	// ApprovalMaxAge, ApprovalsVerified: governance of approvals
	// (docs/change-policies.md).
	ApprovalMaxAge    time.Duration
	ApprovalsVerified bool
	// Pinning lets a workload annotated <prefix>/pin make its reloads pin
	// the configs its pods read (docs/pinning.md).
	Pinning bool
	// TightenOnly lets a workload's own policy and window only tighten
	// its Namespace's.
	TightenOnly bool
	// ConfigRollouts turns on the change controller (docs/config-rollouts.md);
	// ConfigRolloutHistory and ConfigRolloutsPerNamespace bound what it keeps.
	ConfigRollouts                                   bool
	ConfigRolloutHistory, ConfigRolloutsPerNamespace int
	// CanaryGates are the gates that judge a canaried change's canaries
	// during its bake beside their rollout status (docs/canary.md).
	CanaryGates []string
	// The query gate: the Prometheus-compatible API it asks, with the
	// credentials a directory holds, the cluster's condition, how often it
	// is evaluated and what a result without a value does.
	PrometheusURL, PrometheusCredentialsDir string
	CanaryQuery                             string
	CanaryQueryInterval                     time.Duration
	CanaryQueryInconclusive                 string
}

// ReloadOptions say when and how a workload is reloaded.
type ReloadOptions struct {
	ReloadStrategy string
	// Digest is --digest: how the values written on pod templates are
	// digested.
	Digest            string
	ResourcesToIgnore []string
	ReloadFlags
	// The values given to Reloader's string-valued booleans, for looseBool.
	reloadOnCreateRaw, reloadOnDeleteRaw string
	// webhookURLEnv is $RIPPLE_WEBHOOK_URL: the URL often holds a token,
	// which a Secret keeps out of the Deployment's arguments.
	webhookURLEnv string
}

func (o *ReloadOptions) readEnv(lookup func(string) string) {
	o.webhookURLEnv = strings.TrimSpace(lookup("RIPPLE_WEBHOOK_URL"))
}

// webhookURL is --webhook-url, else $RIPPLE_WEBHOOK_URL.
func (o *ReloadOptions) webhookURL() string {
	if o.WebhookURL != "" {
		return o.WebhookURL
	}
	return o.webhookURLEnv
}

// validWebhookURL is the webhook URL, checked. Neither message quotes it:
// it may hold a token.
func (o *ReloadOptions) validWebhookURL(errs *problems) string {
	u := o.webhookURL()
	if _, err := parseURL(u, "http", "https"); u == "" || err == nil {
		return u
	}
	if o.WebhookURL != "" {
		errs.bad("webhook-url", "must be an http or https URL")
	} else {
		*errs = append(*errs, errors.New("$RIPPLE_WEBHOOK_URL: must be an http or https URL"))
	}
	return u
}

// Reload is the validated reload behaviour.
type Reload struct {
	Keys     annotation.Keys
	Strategy strategy.Strategy
	// Digest is how configs' data are digested on pod templates.
	Digest digest.Mode
	// Kinds are the source kinds Ripple watches (ConfigMap, Secret, and
	// SecretProviderClass with --enable-csi-integration).
	Kinds []refs.Kind
	ReloadFlags
}

// DefaultMaxConcurrentRollouts is the default of --max-concurrent-rollouts:
// above what today's fan-outs on small and medium clusters reach, so they
// see no difference, and low enough that one shared config cannot roll
// hundreds of workloads at once (docs/safety.md has the measurement).
const DefaultMaxConcurrentRollouts = 100

func defaultReloadOptions() ReloadOptions {
	return ReloadOptions{ReloadStrategy: "env-vars", Digest: string(digest.SHA1), ReloadFlags: ReloadFlags{
		SettleWindow: time.Second, MaxConcurrentRollouts: DefaultMaxConcurrentRollouts, RolloutTimeout: 10 * time.Minute,
		// Storm breaker defaults (docs/safety.md): no one editing by
		// hand makes more than 10 changes a minute, a 300 ms storm trips it
		// in about ten settle windows, and 10s of quiet is longer than the
		// 6s between changes of a config flapping at just the trip rate.
		FlapThreshold: 10, FlapWindow: time.Minute, FlapQuietPeriod: 10 * time.Second,
		CanaryBake: canary.DefaultBake, CanaryUnkept: UnkeptHold, ApprovalMaxAge: DefaultApprovalMaxAge,
		ConfigRollouts: true, ConfigRolloutHistory: v1alpha1.DefaultHistory, ConfigRolloutsPerNamespace: v1alpha1.DefaultPerNamespace,
		CanaryQueryInterval: 30 * time.Second, CanaryQueryInconclusive: InconclusiveHold,
	}}
}

// DefaultApprovalMaxAge is the default of --approval-max-age: a working
// day and then some, so that an approval left unused overnight is not
// applied days later.
const DefaultApprovalMaxAge = 24 * time.Hour

// BindFlags registers the reload flags.
func (o *ReloadOptions) BindFlags(fs *pflag.FlagSet) {
	bindReloaderBool(fs, &o.ReloadOnCreate, &o.reloadOnCreateRaw, "reload-on-create", "Also reload when a config a workload reloads on is created after the workload.")
	bindReloaderBool(fs, &o.ReloadOnDelete, &o.reloadOnDeleteRaw, "reload-on-delete", "Also reload when such a config is deleted (env-vars: the env var is removed; annotations: the delete-marker hash is written).")
	fs.BoolVar(&o.SyncAfterRestart, "sync-after-restart", o.SyncAfterRestart, "With --reload-on-create, also treat configs created while Ripple was not running as created. (Changes made while it was down are always applied on start.)")
	fs.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, `Instead of reloading, POST every config data change in scope (and creations and deletions with --reload-on-create and --reload-on-delete) to this URL, as JSON: {"webhook":"update successful","event":...,"kind":...,"namespace":...,"name":...,"workloads":[...]}. Without this flag, $RIPPLE_WEBHOOK_URL: a URL that holds a token belongs in a Secret, not in the arguments.`)
	fs.StringVar(&o.ReloadStrategy, "reload-strategy", o.ReloadStrategy, `How a reload is written on the pod template: "env-vars" (a STAKATER_<NAME>_<TYPE> env var holding the config's SHA1) or "annotations" (the reloader.stakater.com/last-reloaded-from annotation).`)
	fs.StringVar(&o.Digest, "digest", o.Digest, `How the reload strategy's value (the STAKATER_* env var, the last-reloaded-from annotation's hash) digests a config's data: "sha1", Reloader's, which anyone who can read the workload can test guesses of a Secret's value against, or "hmac-sha256", keyed with the install's key in the Secret ripple-digest-key of Ripple's namespace and bound to the config's namespace, kind and name, so equal data in two configs gives two values. Switching rolls nothing. Per-key digests (reload-on-keys) are keyed and bound in either mode.`)
	fs.BoolVar(&o.AutoReloadAll, "auto-reload-all", o.AutoReloadAll, "Reload every workload on changes of the configs it references, unless it sets an auto annotation itself.")
	fs.StringSliceVar(&o.ResourcesToIgnore, "resources-to-ignore", o.ResourcesToIgnore, `Do not watch this kind of config: "configmaps" or "secrets" (not both).`)
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "Decide every reload as usual but roll nothing: each rollout Ripple would start is a WouldReload Event on the workload and counts in ripple_would_reload_total. Only the baseline record (metadata, rolls nothing) is written, so the rollouts held back happen once when Ripple runs without --dry-run.")
	fs.IntVar(&o.MaxConcurrentRollouts, "max-concurrent-rollouts", o.MaxConcurrentRollouts, "At most this many rollouts that Ripple started are in progress at once (complete by the workload's own status, e.g. a Deployment's updated and available replicas); further reloads wait their turn, in the order their changes were seen, and still roll with the latest data. 0 is no cap.")
	fs.IntVar(&o.MaxConcurrentRolloutsPerNamespace, "max-concurrent-rollouts-per-namespace", o.MaxConcurrentRolloutsPerNamespace, "At most this many rollouts that Ripple started are in progress at once in one namespace. 0 is no cap.")
	fs.DurationVar(&o.RolloutTimeout, "rollout-timeout", o.RolloutTimeout, "A rollout that Ripple started and that is not complete after this long is reported stalled (Warning Event RolloutStalled, ripple_rollouts_stalled_total) and frees its slot; a progress deadline exceeded reports it earlier. 0 never times out (a rollout then frees its slot only by completing or stalling by its own status).")
	fs.DurationVar(&o.SettleWindow, "settle-window", o.SettleWindow, "Changes to one workload's configs that arrive within this window of each other become one rollout; 0 acts at once. A workload can override it with the <annotation-prefix>/settle-window annotation.")
	o.bindBreakerFlags(fs)
	o.bindChangeFlags(fs)
	o.bindPolicyFlags(fs)
}

// bindPolicyFlags registers the change-policy flags: when a reload may
// roll a workload and whether it rolls by itself.
func (o *ReloadOptions) bindPolicyFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ReloadWindow, "reload-window", o.ReloadWindow, `Default reload window of every workload: a change outside it is deferred to its next opening (a ReloadDeferred event), e.g. "Mon-Fri 02:00-04:00 Europe/Berlin"; several windows separated by ";". Empty or "always" means no window. A workload or its Namespace overrides it with the <annotation-prefix>/reload-window annotation.`)
	fs.StringVar(&o.ReloadPolicy, "reload-policy", o.ReloadPolicy, `Default reload policy of every workload: "auto" (roll, as Reloader does), "manual" (wait for "ripple approve", a ReloadPending event) or "notify" (never roll, a WouldReload event). Empty means auto. A workload or its Namespace overrides it with the <annotation-prefix>/reload-policy annotation.`)
	fs.StringVar(&o.Canary, "canary", o.Canary, `Default canary of every config change: how many of the workloads a change rolls go first ("1", or a percentage such as "10%"); the others roll once they completed their rollout and stayed healthy for --canary-bake, and a canary that stalls or turns unhealthy halts the change (a RolloutHalted event). Empty or "0" means none (Reloader's behaviour). A config or its Namespace overrides it with the <annotation-prefix>/canary annotation. See docs/canary.md.`)
	fs.DurationVar(&o.CanaryBake, "canary-bake", o.CanaryBake, "How long the canaries of a change must stay healthy after their rollout before the other workloads roll it (0s to 24h). A config or its Namespace overrides it with the <annotation-prefix>/canary-bake annotation.")
	fs.StringVar(&o.CanaryUnkept, "canary-unkept", o.CanaryUnkept, `What a canaried change does when no canary can be kept for it: the ConfigRollout CRD is not served, Ripple may not list ConfigRollouts, the API server refuses to create them (no right, a quota), or --config-rollouts=false. "hold" (the default): no workload rolls it (a CanaryUnkept Warning on the config and on each workload names what is missing) until a canary can be kept, and then it rolls with its canary. "roll": it rolls everywhere at once, without a canary, with a Warning (Ripple's behaviour before). Helm: ripple.canaryUnkept. See docs/canary.md.`)
	fs.BoolVar(&o.NamespaceDefaults, "namespace-defaults", o.NamespaceDefaults, `Also read these <annotation-prefix>/ annotations on Namespaces: reload-window, reload-policy, restart-method, max-unavailable, restart-containers, in-place-fallback, reload-delay and pin (with --pinning), as the defaults of their workloads; canary and canary-bake, as the defaults of their configs (a workload's or config's own annotation wins, then the Namespace's, then the flag); canary-query, a query gate condition of the namespace's own beside --canary-query; and max-rollouts, the admission guard's limit in place of --admission-max-rollouts. A Namespace's reload-action is never read (an endpoint is the app's). Off (the default, as Reloader has no such annotations), a Namespace's annotations do nothing and nothing says so: turn it on where Namespaces carry them. Ripple then caches Namespaces (metadata only), which needs get, list and watch on namespaces cluster-wide. Helm: ripple.namespaceDefaults (cluster-wide installs only).`)
	o.bindGovernanceFlags(fs)
}

// bindGovernanceFlags registers the flags that govern who may loosen or
// approve a reload (docs/change-policies.md, docs/security.md).
func (o *ReloadOptions) bindGovernanceFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.ApprovalMaxAge, "approval-max-age", o.ApprovalMaxAge, `An approval (<annotation-prefix>/approval) older than this is not applied: an ApprovalSuperseded Warning says it expired, and it is removed. It also expires while its change waits for a closed reload window, so set it above the longest gap between your windows' openings. 0 means no bound. Helm: ripple.governance.approvalMaxAge.`)
	fs.BoolVar(&o.Pinning, "pinning", o.Pinning, `A workload annotated <annotation-prefix>/pin: "true" has each reload that writes its pod template copy every ConfigMap and Secret the template reads into an immutable copy named <config>-r-<digest> in its namespace, and name the copies in the template's <annotation-prefix>/pinned annotation; the chart's MutatingAdmissionPolicy (Kubernetes 1.36+) points each new pod at them, so kubectl rollout undo brings back the data the revision ran with; once a rollout completes, its copies are owned by the revisions that name them, so revisionHistoryLimit prunes them. Where the API server does not serve MutatingAdmissionPolicy, Ripple logs why and pins nothing, and a workload that asks is told at each rollout (InvalidAnnotation). Needs create, patch and delete on ConfigMaps and Secrets and list on ReplicaSets and ControllerRevisions. Helm: ripple.pinning.enabled. See docs/pinning.md.`)
	fs.BoolVar(&o.TightenOnly, "tighten-only", o.TightenOnly, `A workload's own <annotation-prefix>/reload-policy and reload-window annotations may only tighten its Namespace's (with --namespace-defaults), else --reload-policy and --reload-window: a policy only from auto to manual to notify, a window only narrower. So may a config's own canary and canary-bake: a canary not turned off (the larger of the two counts), a bake not shortened. One that would loosen them is an InvalidAnnotation Warning naming it, and the Namespace's (or flag's) value applies. Helm: ripple.governance.tightenOnly.`)
	fs.BoolVar(&o.ApprovalsVerified, "approvals-verified", o.ApprovalsVerified, `The cluster runs the admission policy that lets only the approvers set <annotation-prefix>/approval, with "by" their own username (Helm: ripple.governance.approvalPolicy.enabled): Events then say "approved by <user>"; without it, "approved by <user> (unverified)".`)
}

func (o *ReloadOptions) validatePolicy(errs *problems) {
	if _, err := plan.ParsePolicy(o.ReloadPolicy); err != nil {
		errs.bad("reload-policy", "%v", err)
	}
	if _, err := window.Parse(o.ReloadWindow); err != nil {
		errs.bad("reload-window", "%q: %v", o.ReloadWindow, err)
	}
	if _, err := o.canary(); err != nil {
		errs.bad("canary", "%v", err)
	}
	if _, err := canary.ParseBake(o.CanaryBake.String()); err != nil {
		errs.bad("canary-bake", "%v", err)
	}
	if o.CanaryUnkept != UnkeptHold && o.CanaryUnkept != UnkeptRoll {
		errs.bad("canary-unkept", "%q is neither hold nor roll", o.CanaryUnkept)
	}
	if o.ApprovalMaxAge < 0 {
		errs.bad("approval-max-age", "%s is negative; use 0 for no bound or a duration such as 24h", o.ApprovalMaxAge)
	}
}

// What a canaried change no canary can be kept for does (--canary-unkept).
const (
	UnkeptHold = "hold"
	UnkeptRoll = "roll"
)

// canary is --canary and --canary-bake, parsed.
func (o ReloadFlags) canary() (canary.Spec, error) {
	var c canary.Spec
	if strings.TrimSpace(o.Canary) != "" {
		var err error
		if c, err = canary.Parse(o.Canary); err != nil {
			return c, err
		}
	}
	c.Bake = o.CanaryBake
	return c, nil
}

// Bounds of the ConfigRollouts kept.
const (
	maxConfigRolloutHistory       = 100
	maxConfigRolloutsPerNamespace = 10000
)

// bindChangeFlags registers the change controller's flags.
func (o *ReloadOptions) bindChangeFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.ConfigRollouts, "config-rollouts", o.ConfigRollouts, "Keep a ConfigRollout (ripple.dev/v1alpha1) per change of a config that has consumers, in the config's namespace: where each consumer stands, and a Propagated condition to wait on (docs/config-rollouts.md). It starts once the API server serves the CRD; without it Ripple logs so once and reloads as before. It changes nothing of what rolls or when, but a canaried change needs it: without it, see --canary-unkept. Helm: ripple.configRollouts.enabled.")
	fs.IntVar(&o.ConfigRolloutHistory, "config-rollout-history", o.ConfigRolloutHistory, fmt.Sprintf("How many ConfigRollouts of one config are kept, the newest (1 to %d).", maxConfigRolloutHistory))
	fs.IntVar(&o.ConfigRolloutsPerNamespace, "config-rollouts-per-namespace", o.ConfigRolloutsPerNamespace, fmt.Sprintf("How many ConfigRollouts one namespace keeps at most: past it, the oldest done ones are deleted; while that many are in flight, a new change gets none (a canaried one is held) until one ends (1 to %d).", maxConfigRolloutsPerNamespace))
	fs.StringSliceVar(&o.CanaryGates, "canary-gates", o.CanaryGates, `What else judges a canaried change's canaries during the bake, beside their rollout status: "pods" watches the canaries' pods (Deployments, StatefulSets, DaemonSets), and a container restart, CrashLoopBackOff or a pod turned unready halts the change; it needs list and watch on pods. "query" evaluates --canary-query (and, with --namespace-defaults, the Namespace's <annotation-prefix>/canary-query) against --prometheus-url every --canary-query-interval, bound to the change's namespace, and a value that fails the condition halts the change. Needs --config-rollouts. Helm: ripple.canaryGates. See docs/canary.md.`)
	fs.StringVar(&o.PrometheusURL, "prometheus-url", o.PrometheusURL, "The Prometheus-compatible API (http or https) the query gate asks (--canary-gates=query). Helm: ripple.prometheus.url.")
	fs.StringVar(&o.PrometheusCredentialsDir, "prometheus-credentials-dir", o.PrometheusCredentialsDir, "A directory (a mounted Secret) with the query gate's credentials, each used when present: token (a bearer token), ca.crt, tls.crt and tls.key. They are read again as they change. Helm: ripple.prometheus.secret.")
	fs.StringVar(&o.CanaryQuery, "canary-query", o.CanaryQuery, fmt.Sprintf("The query gate's condition for every canaried change: <PromQL expression> <op> <number>, op one of < <= > >= == !=, which every series of the expression must meet through the bake; $namespace, $workloads and $pods stand for the change's namespace, its canaries' names and their pods' names (regular expressions), and every selector is bound to the change's namespace. At most %d bytes. Helm: ripple.prometheus.query.", metricgate.MaxQuery))
	fs.DurationVar(&o.CanaryQueryInterval, "canary-query-interval", o.CanaryQueryInterval, fmt.Sprintf("How often the query gate evaluates a baking change's queries (%s to %s). Helm: ripple.prometheus.interval.", minQueryInterval, maxQueryInterval))
	fs.StringVar(&o.CanaryQueryInconclusive, "canary-query-inconclusive", o.CanaryQueryInconclusive, "What a query without a value does (Prometheus unreachable, no series, NaN): hold (the change does not pass, and halts --rollout-timeout past its bake) or pass. Helm: ripple.prometheus.inconclusive.")
}

// CanaryGates are the gates --canary-gates may name (the status always
// judges).
var CanaryGates = []canary.Gate{canary.GatePods, canary.GateQuery}

// What a query without a value does (--canary-query-inconclusive).
const (
	InconclusiveHold = "hold"
	InconclusivePass = "pass"
)

// The bounds of --canary-query-interval: often enough to see a bad bake,
// seldom enough not to load Prometheus.
const (
	minQueryInterval = 5 * time.Second
	maxQueryInterval = 10 * time.Minute
)

// validateQueryGateOn checks that a query gate turned on can ask
// something: a Prometheus, and a condition (without a condition anywhere
// the gate would ask nothing, for good: a gate the user turned on that
// never judges is a mistake to name), and that one turned off is not
// given either.
func (o *ReloadOptions) validateQueryGateOn(errs *problems) {
	if !slices.Contains(o.CanaryGates, string(canary.GateQuery)) {
		for _, f := range []struct{ flag, v string }{{"canary-query", o.CanaryQuery}, {"prometheus-url", o.PrometheusURL}} {
			if f.v != "" {
				errs.bad(f.flag, "is set but the query gate is off: add query to --canary-gates")
			}
		}
		return
	}
	if o.PrometheusURL == "" {
		errs.bad("canary-gates", "query needs --prometheus-url")
	}
	if o.CanaryQuery == "" && !o.NamespaceDefaults {
		errs.bad("canary-gates", "query has no condition to ask: set --canary-query, or --namespace-defaults for the Namespaces' own canary-query annotation")
	}
}

func (o *ReloadOptions) validateQueryGate(errs *problems) {
	o.validateQueryGateOn(errs)
	if o.PrometheusURL != "" {
		if _, err := metricgate.NewAPI(o.PrometheusURL, o.PrometheusCredentialsDir); err != nil {
			errs.bad("prometheus-url", "%v", err)
		}
	}
	if o.CanaryQuery != "" {
		if _, err := metricgate.Parse(o.CanaryQuery); err != nil {
			errs.bad("canary-query", "%v", err)
		}
	}
	if o.CanaryQueryInterval < minQueryInterval || o.CanaryQueryInterval > maxQueryInterval {
		errs.bad("canary-query-interval", "%s is not between %s and %s", o.CanaryQueryInterval, minQueryInterval, maxQueryInterval)
	}
	if o.CanaryQueryInconclusive != InconclusiveHold && o.CanaryQueryInconclusive != InconclusivePass {
		errs.bad("canary-query-inconclusive", "%q is neither hold nor pass", o.CanaryQueryInconclusive)
	}
}

func (o *ReloadOptions) validateChanges(errs *problems) {
	if o.ConfigRolloutHistory < 1 || o.ConfigRolloutHistory > maxConfigRolloutHistory {
		errs.bad("config-rollout-history", "%d is not between 1 and %d", o.ConfigRolloutHistory, maxConfigRolloutHistory)
	}
	if o.ConfigRolloutsPerNamespace < 1 || o.ConfigRolloutsPerNamespace > maxConfigRolloutsPerNamespace {
		errs.bad("config-rollouts-per-namespace", "%d is not between 1 and %d", o.ConfigRolloutsPerNamespace, maxConfigRolloutsPerNamespace)
	}
	for _, g := range o.CanaryGates {
		if !slices.Contains(CanaryGates, canary.Gate(g)) {
			errs.bad("canary-gates", "%q is not a gate; use pods or query (the canaries' rollout status always judges)", g)
		}
	}
	if len(o.CanaryGates) > 0 && !o.ConfigRollouts {
		errs.bad("canary-gates", "needs --config-rollouts: the change controller runs the gates")
	}
	// Every change would be held, for good: a canary lives in a ConfigRollout.
	if c, err := o.canary(); err == nil && c.On() && !o.ConfigRollouts && o.CanaryUnkept != UnkeptRoll {
		errs.bad("canary", "needs --config-rollouts, whose ConfigRollouts keep the canaries: without them every canaried change is held (--canary-unkept=hold); turn them on, or set --canary-unkept=roll")
	}
	o.validateQueryGate(errs)
}

// bindBreakerFlags registers the storm breaker's flags.
func (o *ReloadOptions) bindBreakerFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.MinRolloutInterval, "min-rollout-interval", o.MinRolloutInterval, "Least time between two rollouts of one workload: a rollout due sooner waits, then carries the latest data. 0 means none. A workload can override it with the <annotation-prefix>/min-rollout-interval annotation. Kept in memory: after a restart the next rollout may come sooner.")
	fs.IntVar(&o.FlapThreshold, "flap-threshold", o.FlapThreshold, fmt.Sprintf("Flap breaker: a workload whose configs change more than this many times within --flap-window is held (a ReloadHeld Warning event) until they have been quiet for --flap-quiet-period, then rolled once with the latest data. 0 turns the breaker off; at most %d.", maxFlapThreshold))
	fs.DurationVar(&o.FlapWindow, "flap-window", o.FlapWindow, "Flap breaker: the window in which more than --flap-threshold config changes hold a workload.")
	fs.DurationVar(&o.FlapQuietPeriod, "flap-quiet-period", o.FlapQuietPeriod, "Flap breaker: a held workload resumes once its configs have not changed for this long.")
}

// maxFlapThreshold bounds --flap-threshold: Ripple keeps up to
// threshold+1 change times per workload.
const maxFlapThreshold = 100

func (o *ReloadOptions) validateBreaker(errs *problems) {
	if o.MinRolloutInterval < 0 {
		errs.bad("min-rollout-interval", "%s is negative; use 0 for none or a duration such as 5m", o.MinRolloutInterval)
	}
	if o.FlapThreshold < 0 || o.FlapThreshold > maxFlapThreshold {
		errs.bad("flap-threshold", "%d is not between 0 (off) and %d", o.FlapThreshold, maxFlapThreshold)
	}
	if o.FlapThreshold == 0 {
		return
	}
	if o.FlapWindow <= 0 {
		errs.bad("flap-window", "%s is not positive; use --flap-threshold=0 to turn the breaker off", o.FlapWindow)
	}
	if o.FlapQuietPeriod <= 0 {
		errs.bad("flap-quiet-period", "%s is not positive; use --flap-threshold=0 to turn the breaker off", o.FlapQuietPeriod)
	}
}

func (o *ReloadOptions) validate(errs *problems, keys annotation.Keys) Reload {
	r := Reload{Keys: keys, ReloadFlags: o.ReloadFlags}
	r.WebhookURL = o.validWebhookURL(errs)
	st, err := strategy.New(o.ReloadStrategy)
	if err != nil {
		errs.bad("reload-strategy", "%q is not a strategy; use env-vars or annotations", o.ReloadStrategy)
	}
	r.Strategy = st
	r.Digest = digest.Mode(o.Digest)
	if !slices.Contains(digest.Modes, r.Digest) {
		errs.bad("digest", "%q is not a digest; use sha1 or hmac-sha256", o.Digest)
	}
	ignore := map[string]bool{}
	for _, res := range o.ResourcesToIgnore {
		res = strings.ToLower(strings.TrimSpace(res))
		if res != "configmaps" && res != "secrets" {
			errs.bad("resources-to-ignore", "%q is not a resource; use configmaps or secrets", res)
			continue
		}
		ignore[res] = true
	}
	if ignore["configmaps"] && ignore["secrets"] {
		errs.bad("resources-to-ignore", "cannot ignore both configmaps and secrets; scale Ripple to zero instead")
	}
	if !ignore["configmaps"] {
		r.Kinds = append(r.Kinds, refs.ConfigMap)
	}
	if !ignore["secrets"] {
		r.Kinds = append(r.Kinds, refs.Secret)
	}
	for flag, n := range map[string]int{"max-concurrent-rollouts": o.MaxConcurrentRollouts, "max-concurrent-rollouts-per-namespace": o.MaxConcurrentRolloutsPerNamespace} {
		if n < 0 {
			errs.bad(flag, "%d is negative; use 0 for no cap", n)
		}
	}
	if o.RolloutTimeout < 0 {
		errs.bad("rollout-timeout", "%s is negative; use 0 for no timeout", o.RolloutTimeout)
	}
	if o.SettleWindow < 0 {
		errs.bad("settle-window", "%s is negative; use 0 to act at once or a positive duration such as 1s", o.SettleWindow)
	}
	o.validateBreaker(errs)
	o.validateChanges(errs)
	o.validatePolicy(errs)
	return r
}
