package lint

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// inPlace checks a workload whose own annotations (metadata, else pod
// template) ask for the in-place restart method against its pod template:
// a pod made from it that Ripple could not restart in place (no container
// with a RestartContainer resize policy, BestEffort, a config mounted with
// subPath) is a warning, as the controller's RestartNotInPlace Warning
// would be at the first reload; so is an env var read by fileKeyRef from
// a file an init container writes from a config (plan.FileKeyBlocked), as
// the controller's InvalidAnnotation would be (lint does not know which
// configs Ripple watches, so it counts every config the template reads).
func (c *checker) inPlace(o *target, tpl *corev1.PodTemplateSpec) []Finding {
	if tpl == nil || (o.kind != "Deployment" && o.kind != "StatefulSet" && o.kind != "DaemonSet") {
		return nil
	}
	w := plan.Workload{Annotations: o.obj.GetAnnotations(), Template: tpl}
	v, from := w.Governing(c.keys.RestartMethod, "")
	if m, err := plan.ParseRestartMethod(v); err != nil || m != workload.RestartInPlace || from == plan.FromFlag {
		return nil
	}
	if why := plan.FileKeyBlocked(&tpl.Spec, refs.All(&tpl.Spec)); why != "" {
		return []Finding{o.finding(Warning, c.keys.RestartMethod, fmt.Sprintf(
			"restart method in-place, but a restart in place cannot deliver a change of what this template reads: %s; Ripple reloads it by writing the pod template instead", why))}
	}
	fv, _ := w.Governing(c.keys.InPlaceFallback, "")
	names, _ := w.Governing(c.keys.RestartContainers, "")
	containers, _ := plan.ParseContainers(names)
	pod := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	st := podrestart.InPlaceOf(pod, containers, time.Time{})
	if st.Refused == "" {
		return nil
	}
	instead := "such pods keep their old configuration at a reload"
	if f, err := plan.ParseInPlaceFallback(fv); err == nil && f == workload.FallbackEvict {
		instead = "Ripple evicts such pods instead"
	}
	return []Finding{o.finding(Warning, c.keys.RestartMethod, fmt.Sprintf(
		"restart method in-place, but a pod of this template cannot be restarted in place: %s; %s", st.Refused, instead))}
}

// reloadAction checks a workload whose own annotations ask for a reload
// action against its pod template: a config it reads as environment
// variables, through subPath or in an init container is a warning, as
// the controller's InvalidAnnotation would be at the first reload (lint
// does not know which configs Ripple watches, so it counts every config
// the template reads).
func (c *checker) reloadAction(o *target, tpl *corev1.PodTemplateSpec) []Finding {
	if tpl == nil || (o.kind != "Deployment" && o.kind != "StatefulSet" && o.kind != "DaemonSet") {
		return nil
	}
	w := plan.Workload{Annotations: o.obj.GetAnnotations(), Template: tpl}
	v, from := w.Governing(c.keys.ReloadAction, "")
	if _, err := plan.ParseReloadAction(v); err != nil || (from != plan.FromWorkload && from != plan.FromTemplate) {
		return nil
	}
	why := plan.ActionBlocked(&tpl.Spec, refs.All(&tpl.Spec))
	if why == "" {
		return nil
	}
	return []Finding{o.finding(Warning, c.keys.ReloadAction, fmt.Sprintf(
		"a reload action cannot deliver a change of what this template reads: %s; Ripple reloads it by its restart method instead", why))}
}
