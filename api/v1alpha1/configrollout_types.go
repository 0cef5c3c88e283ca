package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The labels of every ConfigRollout: which config changed, at which of
// its resourceVersions, and whether it is the config's newest change, so
// that a selector finds the change a write made.
const (
	LabelConfigKind = "ripple.dev/config-kind"
	LabelConfigName = "ripple.dev/config-name"
	// LabelConfigVersion is the config's resourceVersion the change was
	// seen at (Spec.Config.ResourceVersion).
	LabelConfigVersion = "ripple.dev/config-version"
	// LabelLatest is "true" on the config's newest change only; it moves
	// to the next change when the config's data changes again.
	LabelLatest = "ripple.dev/latest"
)

// The bounds of the ConfigRollouts kept, unless Ripple's flags set others
// (--config-rollout-history, --config-rollouts-per-namespace).
const (
	// DefaultHistory is how many ConfigRollouts of one config are kept.
	DefaultHistory = 3
	// DefaultPerNamespace is how many ConfigRollouts one namespace keeps.
	DefaultPerNamespace = 100
)

// ReasonSuperseded is the reason of the Propagated condition of a
// superseded change once a newer change of its config propagated: the
// data it replaced is no longer run by any managed consumer.
const ReasonSuperseded = "SupersededAndPropagated"

// The conditions of a ConfigRollout.
const (
	// Propagated is True once every consumer Ripple manages runs pods made
	// from the change's data: its own rollout is complete.
	Propagated = "Propagated"
	// Halted is True while a canary holds the change back.
	Halted = "Halted"
	// CanaryPassed is True once the change's canaries baked healthy (or an
	// operator resumed it).
	CanaryPassed = "CanaryPassed"
)

// Phase is where a change stands, in one word.
type Phase string

// The phases of a change.
const (
	// PhaseRolling: some managed consumers have not completed their rollout.
	PhaseRolling Phase = "Rolling"
	// PhaseWaiting: every consumer left waits (a window, an approval, a
	// canary's bake).
	PhaseWaiting Phase = "Waiting"
	// PhaseHalted: the change's canary failed; nothing else rolls it.
	PhaseHalted Phase = "Halted"
	// PhasePropagated: every managed consumer runs the new data.
	PhasePropagated Phase = "Propagated"
	// PhaseSuperseded: the config changed again before this change
	// propagated; the newer ConfigRollout (status.supersededBy) carries
	// on, and this one's Propagated condition turns True when the config's
	// newest change propagates.
	PhaseSuperseded Phase = "Superseded"
)

// ConsumerState is where one consumer of a change stands.
type ConsumerState string

// The states of a consumer.
const (
	// Managed consumers (Ripple rolls them).
	ConsumerComplete ConsumerState = "Complete"
	ConsumerRolling  ConsumerState = "Rolling"
	ConsumerStalled  ConsumerState = "Stalled"
	ConsumerPending  ConsumerState = "Pending"
	ConsumerWaiting  ConsumerState = "Waiting"
	ConsumerHalted   ConsumerState = "Halted"
	// Consumers Ripple does not roll.
	ConsumerStale      ConsumerState = "Stale"
	ConsumerNotifyOnly ConsumerState = "NotifyOnly"
	ConsumerExcluded   ConsumerState = "Excluded"
)

// ConfigRollout is one change of a ConfigMap's or Secret's data and its
// journey across the workloads that read it. Ripple makes one per change
// of a config that has consumers, in the config's namespace, owned by the
// config; a pipeline waits on its Propagated condition.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cro,categories=ripple
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.spec.config.name`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.config.kind`,priority=1
// +kubebuilder:printcolumn:name="Consumers",type=integer,JSONPath=`.status.counts.consumers`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.counts.complete`
// +kubebuilder:printcolumn:name="Stale",type=integer,JSONPath=`.status.counts.stale`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.config.resourceVersion`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ConfigRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ConfigRolloutSpec `json:"spec"`
	// +optional
	Status ConfigRolloutStatus `json:"status,omitempty"`
}

// ConfigRolloutSpec names the change: the config and its data's revision.
// Ripple sets it when it makes the object; it never changes.
type ConfigRolloutSpec struct {
	Config ConfigReference `json:"config"`
	// Revision names the config's data: a digest keyed with the install's
	// key and bound to the config, so that it tells nothing of the data to
	// whoever reads it. Without the key, a ConfigMap's revision is an
	// unkeyed SHA-256 and a Secret's change has no ConfigRollout.
	// +kubebuilder:validation:MaxLength=64
	Revision string `json:"revision"`
}

// ConfigReference is the config that changed.
type ConfigReference struct {
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// ResourceVersion is the config's resourceVersion Ripple saw the
	// change's data at: the receipt of the write that made the change (a
	// later write of the same data, or of the config's metadata, raises
	// status.observedConfigVersion instead).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ConfigRolloutStatus is the change's journey.
type ConfigRolloutStatus struct {
	// SeenAt is when Ripple saw the change.
	// +optional
	SeenAt metav1.Time `json:"seenAt,omitzero"`
	// Writer is the field manager that last wrote the config's data (as
	// its managedFields tell: a hint, which a client may set).
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Writer string `json:"writer,omitempty"`
	// ObservedConfigVersion is the newest resourceVersion of the config
	// at which Ripple saw this change's data as the config's data: a
	// client that read the config at version V (or wrote it and got V
	// back) has its change in the newest ConfigRollout whose
	// observedConfigVersion is at least V (`ripple wait`).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ObservedConfigVersion string `json:"observedConfigVersion,omitempty"`
	// SupersededBy names the newer ConfigRollout of the config that
	// superseded this one: the change to follow.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SupersededBy string `json:"supersededBy,omitempty"`
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// PropagatedAt is when every managed consumer was first seen running
	// the change.
	// +optional
	PropagatedAt *metav1.Time `json:"propagatedAt,omitempty"`
	// +optional
	Counts Counts `json:"counts,omitzero"`
	// Consumers are the consumers by state, those not complete first; at
	// most 50 (Counts has them all).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Consumers []Consumer `json:"consumers,omitempty"`
	// Canary is the change's canary, when it is canaried.
	// +optional
	Canary *CanaryStatus `json:"canary,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Trace is the change's OpenTelemetry trace, when Ripple exports
	// traces (docs/tracing.md).
	// +optional
	Trace *TraceStatus `json:"trace,omitempty"`
}

// TraceStatus names the trace of a change and its root span, so that the
// spans a later look (or another Ripple, after a restart or a failover)
// exports join the same trace.
type TraceStatus struct {
	// TraceID is the W3C trace id: 32 lowercase hex digits.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{32}$`
	TraceID string `json:"traceID"`
	// SpanID is the root span's id: 16 lowercase hex digits.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	SpanID string `json:"spanID"`
}

// Counts are how many consumers are in each state.
type Counts struct {
	// Consumers is every workload that reads the config.
	Consumers int32 `json:"consumers"`
	// Managed are those Ripple rolls.
	Managed  int32 `json:"managed"`
	Complete int32 `json:"complete"`
	// +optional
	Rolling int32 `json:"rolling,omitempty"`
	// +optional
	Stalled int32 `json:"stalled,omitempty"`
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// +optional
	Waiting int32 `json:"waiting,omitempty"`
	// +optional
	Halted int32 `json:"halted,omitempty"`
	// Stale are consumers that keep the old data until someone restarts
	// them: those not opted in, and those under the notify policy.
	Stale int32 `json:"stale"`
	// +optional
	NotifyOnly int32 `json:"notifyOnly,omitempty"`
	// +optional
	Excluded int32 `json:"excluded,omitempty"`
}

// Consumer is one workload that reads the config.
type Consumer struct {
	Kind  string        `json:"kind"`
	Name  string        `json:"name"`
	State ConsumerState `json:"state"`
	// Reason is the Event reason that explains the state, if any
	// (ReloadDeferred, ReloadPending, WaitingForCanary, ...).
	// +optional
	Reason string `json:"reason,omitempty"`
}

// CanaryStatus is a canaried change's canary: the change controller
// chooses its workloads, follows them and writes it here, and every
// workload's reconcile reads it from its cache. It is the canary's only
// record: a restart or a failover finds a bake or a halt where it was.
type CanaryStatus struct {
	// Phase is Rolling, Baking, Passed or Halted.
	// +kubebuilder:validation:Enum=Rolling;Baking;Passed;Halted
	Phase string `json:"phase"`
	// Since is when the phase began.
	// +optional
	Since metav1.Time `json:"since,omitzero"`
	// Bake is how long the canaries must stay healthy once they completed.
	// +optional
	Bake metav1.Duration `json:"bake,omitzero"`
	// Workloads are the canaries, in the config's namespace.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Workloads []CanaryWorkload `json:"workloads,omitempty"`
	// Why is why it halted.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Why string `json:"why,omitempty"`
	// Gate is the gate that halted it: status (the canaries' rollout
	// status), pods (their pods during the bake) or query (a Prometheus
	// query during the bake).
	// +kubebuilder:validation:Enum=status;pods;query
	// +optional
	Gate string `json:"gate,omitempty"`
	// Resumed is set on a halted change an operator continued.
	// +optional
	Resumed bool `json:"resumed,omitempty"`
}

// CanaryWorkload is one canary of a change.
type CanaryWorkload struct {
	Kind string `json:"kind"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// AppliedAt is when Ripple saw it apply the change.
	// +optional
	AppliedAt *metav1.Time `json:"appliedAt,omitempty"`
}

// ConfigRolloutList is a list of ConfigRollouts.
//
// +kubebuilder:object:root=true
type ConfigRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConfigRollout `json:"items"`
}
