package plan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/pin"
	"github.com/ripple-dev/ripple/internal/refs"
)

// pinned reports whether the workload's reloads pin its configs: pinning
// is on (--pinning) and the workload asks for it (AsksToPin).
func pinned(in Input) bool {
	return in.Pinning && AsksToPin(in)
}

// PinRefused says why the reloads of a workload that asks to pin copy
// nothing: --pinning is not given, or Ripple turned it off (PinRefusal).
// Empty when they pin, or when the workload does not ask.
func PinRefused(in Input) string {
	switch {
	case !AsksToPin(in) || in.Pinning:
		return ""
	case in.PinRefusal != "":
		return "--pinning is off: " + in.PinRefusal
	default:
		return "this Ripple runs without --pinning"
	}
}

// AsksToPin reports whether the workload asks for pinning: its own
// ripple.dev/pin is "true", or, without one, its Namespace's (read with
// --namespace-defaults only).
func AsksToPin(in Input) bool {
	v, ok := in.Workload.Annotations[in.Keys.Pin]
	if !ok {
		v = in.Workload.NamespaceAnnotations[in.Keys.Pin]
	}
	return strings.TrimSpace(v) == "true"
}

// pinTemplate writes on tpl, the template a reload writes, the record of
// the copies its pods are to read: every ConfigMap and Secret of the
// workload's namespace the template references that exists, at the data
// the plan saw. The controller makes the copies before it writes the
// template. A config that cannot be pinned is left to its live data, with
// a warning that names it. The template of a workload not pinned (any
// more) loses its record, so that its new pods read the configs again.
func pinTemplate(in Input, tpl *corev1.PodTemplateSpec) []string {
	delete(tpl.Annotations, in.Keys.Pinned)
	if !pinned(in) {
		// Only a refusal is told at each rollout; that a Ripple without
		// --pinning ignores the annotation, explain tells.
		if in.PinRefusal != "" && AsksToPin(in) {
			return []string{fmt.Sprintf("annotation %q: %s; its pods read the configs live", in.Keys.Pin, PinRefused(in))}
		}
		return nil
	}
	digests := map[refs.Ref]string{}
	for _, s := range in.Sources {
		if s.Found && s.Digest != "" {
			digests[s.Ref] = s.Digest
		}
	}
	var pins []pin.Pin
	var warnings []string
	for _, ref := range refs.All(&tpl.Spec) {
		d, ok := digests[ref]
		if !ok || (ref.Kind != refs.ConfigMap && ref.Kind != refs.Secret) {
			continue // not there to copy, or a SecretProviderClass: read live
		}
		p, err := pin.New(ref, d)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("annotation %q: %v; its pods read it live", in.Keys.Pin, err))
			continue
		}
		pins = append(pins, p)
	}
	if len(pins) > pin.MaxPins {
		return append(warnings, fmt.Sprintf("annotation %q: the pod template reads %d ConfigMaps and Secrets, more than %d; nothing is pinned", in.Keys.Pin, len(pins), pin.MaxPins))
	}
	if len(pins) > 0 {
		if tpl.Annotations == nil {
			tpl.Annotations = map[string]string{}
		}
		tpl.Annotations[in.Keys.Pinned] = pin.Format(pins)
	}
	return warnings
}
