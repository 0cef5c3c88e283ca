package canary

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ripple-dev/ripple/internal/annotation"
)

// DefaultBake is the bake time when none is set.
const DefaultBake = 30 * time.Second

// maxBake bounds the bake an annotation may ask for.
const maxBake = 24 * time.Hour

// Spec is how a change of a config is canaried: Count workloads, or
// Percent of them (rounded up), roll first and stay healthy for Bake.
type Spec struct {
	Count, Percent int
	Bake           time.Duration
}

// On reports whether changes are canaried.
func (c Spec) On() bool { return c.Count > 0 || c.Percent > 0 }

// MaxMembers bounds the canaries of one change: its ConfigRollout lists
// them all.
const MaxMembers = 100

// Of is how many of n workloads are canaries: at least one, at most n and
// MaxMembers. A spec with both a count and a percentage (a config's and
// its floor's under tighten-only) takes the larger.
func (c Spec) Of(n int) int {
	k := max(c.Count, int(math.Ceil(float64(n)*float64(c.Percent)/100)))
	return min(max(k, 1), n, MaxMembers)
}

// Parse reads a canary value: a whole number of workloads ("1"; "0" is
// none) or a percentage of them ("10%", 1 to 100).
func Parse(v string) (Spec, error) {
	s := strings.TrimSpace(v)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 100 {
			return Spec{}, fmt.Errorf("%q is not a percentage from 1%% to 100%%", v)
		}
		return Spec{Percent: n}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return Spec{}, fmt.Errorf("%q is not a number of workloads (such as 1) or a percentage (such as 10%%)", v)
	}
	return Spec{Count: n}, nil
}

// ParseBake reads a bake time: a duration from 0 to 24h.
func ParseBake(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 || d > maxBake {
		return 0, fmt.Errorf("%q is not a duration from 0s to 24h", v)
	}
	return d, nil
}

// Levels are the places a change's Spec is read from, the most specific
// last: the default (--canary, --canary-bake), the Namespace's
// annotations (read with --namespace-defaults) and the config's own.
type Levels struct {
	Default   Spec
	Namespace map[string]string
	// Config are the config's annotations; Where names it in a problem
	// (" on ConfigMap/app").
	Config map[string]string
	Where  string
	// Tighten is --tighten-only: the config may only tighten its floor.
	Tighten bool
}

// Resolve is how a change is canaried: the config's canary annotations,
// else its Namespace's, else the default. An invalid value is a problem
// naming the annotation, and the next level applies. With Tighten, the
// config's own values may only tighten its floor (the Namespace's, else
// the default): it cannot turn a canary off, the larger of the two
// canaries is taken, and a shorter bake is not.
func Resolve(l Levels, keys annotation.Keys) (Spec, []string) {
	var problems []string
	bad := func(key, where string, err error, using string) {
		problems = append(problems, fmt.Sprintf("annotation %q%s: %v; using %s", key, where, err, using))
	}
	floor := l.Default
	if v, ok := l.Namespace[keys.Canary]; ok {
		if c, err := Parse(v); err != nil {
			bad(keys.Canary, " on the namespace", err, text(floor))
		} else {
			floor.Count, floor.Percent = c.Count, c.Percent
		}
	}
	if v, ok := l.Namespace[keys.CanaryBake]; ok {
		if d, err := ParseBake(v); err != nil {
			bad(keys.CanaryBake, " on the namespace", err, floor.Bake.String())
		} else {
			floor.Bake = d
		}
	}
	spec, where := floor, l.Where
	if v, ok := l.Config[keys.Canary]; ok {
		if c, err := Parse(v); err != nil {
			bad(keys.Canary, where, err, text(floor))
		} else if problem := spec.take(c, floor, l.Tighten); problem != "" {
			problems = append(problems, fmt.Sprintf("annotation %q%s: %q %s", keys.Canary, where, v, problem))
		}
	}
	if v, ok := l.Config[keys.CanaryBake]; ok {
		d, err := ParseBake(v)
		switch {
		case err != nil:
			bad(keys.CanaryBake, where, err, floor.Bake.String())
		case l.Tighten && d < floor.Bake:
			problems = append(problems, fmt.Sprintf("annotation %q%s: %q would shorten the bake %s of the Namespace or --canary-bake (--tighten-only: a config may only lengthen it); using %s",
				keys.CanaryBake, where, v, floor.Bake, floor.Bake))
		default:
			spec.Bake = d
		}
	}
	return spec, problems
}

// take sets c's canary to a config's own one over its floor; with
// tighten, own may not turn the floor's canary off, and the larger of the
// two is taken. It says why own was not taken.
func (c *Spec) take(own, floor Spec, tighten bool) string {
	switch {
	case tighten && floor.On() && !own.On():
		return fmt.Sprintf("would turn off the canary %s of the Namespace or --canary (--tighten-only: a config may only tighten it); using %s",
			text(floor), text(floor))
	case tighten && floor.On():
		c.Count, c.Percent = max(own.Count, floor.Count), max(own.Percent, floor.Percent) // the larger canary, whatever the fleet's size
	default:
		c.Count, c.Percent = own.Count, own.Percent
	}
	return ""
}

// text names c's canary in a problem.
func text(c Spec) string {
	switch {
	case c.Percent > 0 && c.Count > 0:
		return fmt.Sprintf("the larger of %d and %d%%", c.Count, c.Percent)
	case c.Percent > 0:
		return strconv.Itoa(c.Percent) + "%"
	case c.Count > 0:
		return strconv.Itoa(c.Count)
	}
	return "no canary"
}

// IsFirst reports whether the workload's annotations mark it to be chosen
// as a canary first.
func IsFirst(annotations map[string]string, keys annotation.Keys) bool {
	return annotation.IsTrue(annotations[keys.CanaryFirst])
}
