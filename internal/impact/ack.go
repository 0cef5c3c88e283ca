package impact

import (
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ack is a config's acknowledgement of how many workloads a write of it
// may roll: its <prefix>/ack-rollouts annotation, which lets a write above
// a limit through (the admission guard, `ripple plan --max-rollouts`).
type Ack struct {
	// Raw is the annotation as written; Set is false without one.
	Raw string
	Set bool
	// Count is its value; Valid is false when it is not a count.
	Count int
	Valid bool
}

// AckOf reads config's acknowledgement under annotation key.
func AckOf(config client.Object, key string) Ack {
	raw, set := config.GetAnnotations()[key]
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	return Ack{Raw: raw, Set: set, Count: n, Valid: set && err == nil && n >= 0}
}

// Covers reports whether the acknowledgement lets a write that rolls
// rolls workloads through: it acknowledges at least that many.
func (a Ack) Covers(rolls int) bool { return a.Valid && a.Count >= rolls }
