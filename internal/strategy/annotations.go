package strategy

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Annotations is Reloader's annotations strategy: the pod template gets one
// annotation describing the last reload, leaving containers untouched,
// which suits GitOps tools that would revert an injected env var.
type Annotations struct{}

var _ Strategy = Annotations{}

// reloadSource is the annotation value. Field order is Reloader's and is
// part of the format: struct fields marshal in declaration order.
type reloadSource struct {
	Type          string   `json:"type"`
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace"`
	Hash          string   `json:"hash"`
	ContainerRefs []string `json:"containerRefs"`
	ObservedAt    int64    `json:"observedAt"`
}

// Name returns "annotations".
func (Annotations) Name() string { return annotationsName }

// Applied returns the hash in the annotation when it describes ref. The
// annotation holds only the latest reload, so an older reload of ref is
// reported as absent; an unreadable value is treated as absent too.
func (Annotations) Applied(tpl *corev1.PodTemplateSpec, ref refs.Ref) (string, bool) {
	if tpl == nil {
		return "", false
	}
	raw, ok := tpl.Annotations[annotation.LastReloadedFrom]
	if !ok {
		return "", false
	}
	var src reloadSource
	if err := json.Unmarshal([]byte(raw), &src); err != nil {
		return "", false
	}
	if src.Type != ref.Kind.Type() || src.Name != ref.Name {
		return "", false
	}
	return src.Hash, true
}

// Apply writes the annotation for the last change. Reloader reloads one
// source per write and the annotation has room for one, so with several
// changes the last one is recorded; the template still changes, which is
// what triggers the rollout.
func (Annotations) Apply(tpl *corev1.PodTemplateSpec, changes []Change, now time.Time) {
	if tpl == nil || len(changes) == 0 {
		return
	}
	ch := changes[len(changes)-1]
	containers := []string{}
	if ch.Container != "" {
		containers = append(containers, ch.Container)
	}
	ns := ch.Namespace
	if shared, _, ok := annotation.SplitShared(ch.Ref.Name); ok {
		// A config of another namespace: its own namespace, and its name
		// as "namespace/name", which no config of the workload's
		// namespace has (Applied compares names only).
		ns = shared
	}
	val, err := json.Marshal(reloadSource{
		Type:          ch.Ref.Kind.Type(),
		Name:          ch.Ref.Name,
		Namespace:     ns,
		Hash:          ch.Hash,
		ContainerRefs: containers,
		ObservedAt:    now.Unix(),
	})
	if err != nil {
		// Unreachable: the struct holds only strings and an int64.
		return
	}
	if tpl.Annotations == nil {
		tpl.Annotations = map[string]string{}
	}
	tpl.Annotations[annotation.LastReloadedFrom] = string(val)
}

// Slot is the config itself: the annotation names its type and name.
func (Annotations) Slot(ref refs.Ref) string { return ref.String() }
