// Package strategy writes a reload onto a pod template the way Stakater
// Reloader does, and reads back what an earlier reload wrote.
//
// Both of Reloader's formats are reproduced exactly (env var names, JSON
// field order) because workloads already carry them: reading them back is
// how a reload that has already happened, by Reloader or by us, is
// recognised and not repeated. The package is pure; the caller patches.
package strategy

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/refs"
)

// The accepted --reload-strategy values.
const (
	envVarsName     = "env-vars"
	annotationsName = "annotations"
)

// Change is one config whose new digest must be written on the pod template.
type Change struct {
	Ref       refs.Ref
	Namespace string
	Hash      string
	// Container receives the change, normally chosen by refs.Target.
	Container string
	// Deleted marks a config that was deleted (--reload-on-delete): the
	// env-vars strategy removes its env var, and the annotations strategy
	// records Hash, which callers set to digest.DeleteMarker as Reloader does.
	Deleted bool
}

// Strategy writes changes on a pod template and reads back what it wrote.
type Strategy interface {
	// Name is the --reload-strategy value: "env-vars" or "annotations".
	Name() string
	// Applied returns the digest this strategy last recorded on tpl for
	// ref, if tpl carries one.
	Applied(tpl *corev1.PodTemplateSpec, ref refs.Ref) (hash string, ok bool)
	// Apply records changes on tpl, mutating it. changes is non-empty; now
	// is the reload time.
	Apply(tpl *corev1.PodTemplateSpec, changes []Change, now time.Time)
	// Slot is where the strategy records ref on a template. Two configs
	// with one key (Reloader's env var names collide: a-b and a.b) cannot
	// be told apart there.
	Slot(ref refs.Ref) string
}

// New returns the strategy for a --reload-strategy value.
func New(name string) (Strategy, error) {
	switch name {
	case envVarsName:
		return EnvVars{}, nil
	case annotationsName:
		return Annotations{}, nil
	}
	return nil, fmt.Errorf("unknown reload strategy %q: must be %q or %q", name, envVarsName, annotationsName)
}
