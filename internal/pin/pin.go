// Package pin names the immutable copies of the configs a pinned workload
// reads (ripple.dev/pin, docs/pinning.md) and the record of them on its
// pod template, which the chart's MutatingAdmissionPolicy reads to point
// each new pod at the copies. The record travels with the template, so
// `kubectl rollout undo` brings back the copies, and so the data, that
// the restored revision ran with.
package pin

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripple-dev/ripple/internal/refs"
)

// DigestLen is how many hex digits of a config's digest name its copy:
// 48 bits, as Ripple shows digests elsewhere. Two data of one config
// sharing a name is a collision Ripple checks for (Copier compares the
// data) rather than one it relies on never seeing.
const DigestLen = 12

// Infix joins a config's name and its digest in a copy's name.
const Infix = "-r-"

// MaxPins bounds the configs a record names: a pod reads at most this
// many ConfigMaps and Secrets through one template, or is not pinned.
const MaxPins = 64

// Pin is one config a template reads and the digest of the data it was
// pinned at.
type Pin struct {
	Ref    refs.Ref // a ConfigMap or a Secret
	Digest string   // DigestLen hex digits
}

// Name is the name of the copy: "<config>-r-<digest>".
func (p Pin) Name() string { return p.Ref.Name + Infix + p.Digest }

// item is how a pin is written in a record, and what the policy accepts:
// the policy skips anything else, so a hand-written record cannot make it
// fail a pod.
var item = regexp.MustCompile(`^(configmap|secret)/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)=([0-9a-f]{` + fmt.Sprint(DigestLen) + `})$`)

// New is the pin of ref at digest d (a full digest, cut to DigestLen).
// It refuses a kind that cannot be copied, a digest too short or not
// hex, and a config whose copy's name would be too long.
func New(ref refs.Ref, d string) (Pin, error) {
	if ref.Kind != refs.ConfigMap && ref.Kind != refs.Secret {
		return Pin{}, fmt.Errorf("%s: only ConfigMaps and Secrets are pinned", ref)
	}
	if len(d) < DigestLen {
		return Pin{}, fmt.Errorf("%s: digest %q is shorter than %d digits", ref, d, DigestLen)
	}
	p := Pin{Ref: ref, Digest: strings.ToLower(d[:DigestLen])}
	if msgs := validation.IsDNS1123Subdomain(p.Name()); len(msgs) > 0 {
		return Pin{}, fmt.Errorf("%s: its copy %q is not a valid name: %s", ref, p.Name(), strings.Join(msgs, "; "))
	}
	if !item.MatchString(p.String()) {
		return Pin{}, fmt.Errorf("%s: digest %q is not hex", ref, d)
	}
	return p, nil
}

// String is the pin as a record writes it: "configmap/app=2415bbab7a".
func (p Pin) String() string {
	return strings.ToLower(string(p.Ref.Kind)) + "/" + p.Ref.Name + "=" + p.Digest
}

// Format is the record of pins: sorted, comma-separated.
func Format(pins []Pin) string {
	s := make([]string, len(pins))
	for i, p := range pins {
		s[i] = p.String()
	}
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// Parse reads a record back. It refuses what Format does not write, and
// more than MaxPins pins.
func Parse(v string) ([]Pin, error) {
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	if len(parts) > MaxPins {
		return nil, fmt.Errorf("names %d configs, more than %d", len(parts), MaxPins)
	}
	out := make([]Pin, 0, len(parts))
	for _, s := range parts {
		m := item.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("%q is not kind/name=digest (configmap or secret, %d hex digits)", s, DigestLen)
		}
		kind := refs.ConfigMap
		if m[1] == "secret" {
			kind = refs.Secret
		}
		out = append(out, Pin{Ref: refs.Ref{Kind: kind, Name: m[2]}, Digest: m[4]})
	}
	return out, nil
}
