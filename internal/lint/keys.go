package lint

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/window"
	"github.com/ripple-dev/ripple/internal/workload"
)

// reloaderDomain marks the keys of Reloader's family: a key containing it
// anywhere (reloader.stakater.com/auto, configmap.reloader.stakater.com/...)
// is meant for Reloader or Ripple, so an unknown one is a typo.
const reloaderDomain = "reloader.stakater.com"

// home is where a key Ripple reads belongs. Keys Ripple writes have none:
// they may turn up anywhere a previous run left them.
type home struct {
	// config is set for keys that go on a config; the others go on a
	// workload.
	config bool
	// kind is the one workload kind the key is read from, if only one.
	kind string
	// metadataOnly is set for keys read from the workload's metadata only,
	// never from its pod template.
	metadataOnly bool
	// valid checks the value; nil accepts anything.
	valid func(string) string
	// namespace is set for keys a Namespace may carry too, as the default
	// of its workloads (--namespace-defaults).
	namespace bool
	// strict makes an invalid value an error rather than a warning: Ripple
	// does not fall back to a default for it, but holds reloads.
	strict bool
}

// homes returns the home of every key Ripple reads.
func homes(k annotation.Keys) map[string]home {
	h := map[string]home{
		k.Search:          {valid: onlyTrue},
		k.Match:           {config: true, valid: onlyTrue},
		k.Ignore:          {config: true, valid: onlyTrue},
		k.SettleWindow:    {metadataOnly: true, valid: duration},
		k.PausePeriod:     {kind: "Deployment", metadataOnly: true, valid: duration},
		k.RolloutStrategy: {kind: workload.RolloutGVK.Kind, metadataOnly: true},
		k.CronJobReload:   {kind: "CronJob", metadataOnly: true, valid: cronJobMode},
	}
	h[k.MinRolloutInterval] = home{metadataOnly: true, valid: duration}
	h[k.ReloadWindow] = home{valid: reloadWindow, namespace: true, strict: true}
	h[k.ReloadPolicy] = home{valid: reloadPolicy, namespace: true, strict: true}
	h[k.RestartMethod] = home{valid: restartMethod, namespace: true}
	h[k.MaxUnavailable] = home{valid: podCount, namespace: true}
	h[k.RestartContainers] = home{valid: containerNames, namespace: true}
	h[k.InPlaceFallback] = home{valid: inPlaceFallback, namespace: true}
	h[k.ReloadAction] = home{valid: reloadAction}
	h[k.ReloadDelay] = home{valid: reloadDelay, namespace: true}
	h[k.ReloadOnKeys] = home{valid: reloadOnKeys}
	h[k.ConfigMapSelector] = home{valid: labelSelector}
	h[k.SecretSelector] = home{valid: labelSelector}
	h[k.Canary] = home{config: true, valid: canaryCount, namespace: true}
	h[k.CanaryBake] = home{config: true, valid: canaryBake, namespace: true}
	h[k.CanaryFirst] = home{metadataOnly: true, valid: onlyTrue}
	h[k.CanaryResume] = home{config: true, valid: canaryResume}
	h[k.SharedWith] = home{config: true}
	// The planner trims a pin value before it compares it with "true".
	h[k.Pin] = home{metadataOnly: true, namespace: true, valid: func(v string) string { return onlyTrue(strings.TrimSpace(v)) }}
	for _, key := range []string{k.Auto, k.ConfigMapAuto, k.SecretAuto, k.SecretProviderClassAuto} {
		h[key] = home{valid: boolean}
	}
	for _, key := range []string{k.ConfigMapReload, k.SecretReload, k.SecretProviderClassReload} {
		h[key] = home{}
	}
	for _, key := range []string{k.ConfigMapExclude, k.SecretExclude, k.SecretProviderClassExclude} {
		h[key] = home{metadataOnly: true}
	}
	return h
}

// annotations checks the annotations ann of o; template says they are its
// pod template's.
func (c *checker) annotations(o *target, ann map[string]string, template bool) []Finding {
	var out []Finding
	for key, v := range ann {
		if !c.known[key] {
			if (o.workload || o.config) && c.family(key) {
				out = append(out, o.finding(Error, key, c.unknown(key, template)))
			}
			continue
		}
		h, reads := c.homes[key]
		if !reads {
			continue
		}
		if msg := misplaced(o, h, template); msg != "" {
			out = append(out, o.finding(Warning, key, fmt.Sprintf("annotation %q %s", key, msg)))
		} else if h.valid != nil {
			if msg := h.valid(v); msg != "" {
				severity := Warning
				if h.strict {
					severity = Error
				}
				out = append(out, o.finding(severity, key, fmt.Sprintf("annotation %q: %q %s", key, v, msg)))
			}
		}
	}
	return out
}

// family reports whether key is meant for Reloader or Ripple.
func (c *checker) family(key string) bool {
	prefix, _, _ := strings.Cut(key, "/")
	return strings.Contains(key, reloaderDomain) || prefix == c.prefix
}

// unknown is the message for a key of the family Ripple does not know,
// with the known key closest to it.
func (c *checker) unknown(key string, template bool) string {
	best, dist := "", -1
	for _, k := range c.suggest {
		if d := levenshtein.ComputeDistance(key, k); dist < 0 || d < dist {
			best, dist = k, d
		}
	}
	where := "annotation"
	if template {
		where = "pod template annotation"
	}
	return fmt.Sprintf("unknown %s %q; did you mean %q?", where, key, best)
}

// misplaced says why a key with home h has no effect on o, or "".
func misplaced(o *target, h home, template bool) string {
	switch {
	case h.namespace && o.kind == "Namespace" && !template:
		return ""
	case h.config && !o.config:
		return fmt.Sprintf("goes on a ConfigMap or Secret, not on a %s", o.kind)
	case !h.config && o.config:
		return fmt.Sprintf("goes on the workload that uses the config, not on a %s", o.kind)
	case !h.config && !o.workload:
		return fmt.Sprintf("has no effect: Ripple does not reload a %s of %s", o.kind, o.apiVersion)
	case h.kind != "" && h.kind != o.kind:
		return fmt.Sprintf("has no effect on a %s, only on a %s", o.kind, h.kind)
	case h.metadataOnly && template:
		return "is read from the workload's metadata, not from its pod template"
	}
	return ""
}

// reloadPolicy checks a reload policy: an invalid one holds every reload
// for an approval (plan.ParsePolicy).
func reloadPolicy(v string) string {
	if _, err := plan.ParsePolicy(v); err != nil {
		return "is not a reload policy (auto, manual or notify), so every reload waits for an approval"
	}
	return ""
}

// boolean checks an auto value: Ripple, like Reloader, reads anything
// strconv.ParseBool rejects as false.
func boolean(v string) string {
	if _, err := strconv.ParseBool(v); err != nil {
		return "is not true or false, so it means false"
	}
	return ""
}

// onlyTrue checks a search, match or ignore value: only "true" turns them
// on, as in Reloader ("True" and "1" do not).
func onlyTrue(v string) string {
	if v != "true" && v != "false" {
		return `is not "true", so it means false`
	}
	return ""
}

// duration checks a settle window or pause period.
// reloadOnKeys checks a reload-on-keys value as the plan reads it, bounds
// included: an invalid one means any data change reloads.
func reloadOnKeys(v string) string {
	if err := annotation.CheckKeySpec(v); err != nil {
		return fmt.Sprintf("is invalid (%v), so any data change reloads", err)
	}
	return ""
}

func duration(v string) string {
	if d, err := time.ParseDuration(strings.TrimSpace(v)); err != nil || d < 0 {
		return "is not a duration such as 30s or 5m, so Ripple ignores it"
	}
	return ""
}

// labelSelector checks a label-selector annotation: an invalid one
// selects nothing, as the controller's InvalidAnnotation says.
func labelSelector(v string) string {
	if _, err := annotation.Selector(v); err != nil {
		return "is not a valid label selector (" + err.Error() + "), so it selects no config"
	}
	return ""
}

// cronJobMode checks a CronJob's reload mode.
func cronJobMode(v string) string {
	switch strings.TrimSpace(v) {
	case workload.CronJobRun, workload.CronJobTemplate:
		return ""
	}
	return fmt.Sprintf("is not %q or %q, so Ripple ignores it", workload.CronJobRun, workload.CronJobTemplate)
}

// reloadWindow checks a reload window; an invalid one defers every reload
// of its workloads until it is fixed.
func reloadWindow(v string) string {
	if _, err := window.Parse(v); err != nil {
		return fmt.Sprintf("is not a reload window: %v; Ripple defers every reload until it is fixed", err)
	}
	return ""
}

// restartMethod checks a workload's restart method (plan.ParseRestartMethod).
func restartMethod(v string) string {
	if _, err := plan.ParseRestartMethod(v); err != nil {
		return fmt.Sprintf("is not %q, %q, %q or %q, so Ripple uses --restart-method", workload.RestartTemplate, workload.RestartEvict, workload.RestartDelete, workload.RestartInPlace)
	}
	return ""
}

// containerNames checks the containers the in-place method restarts
// (plan.ParseContainers).
func containerNames(v string) string {
	if _, err := plan.ParseContainers(v); err != nil {
		return fmt.Sprintf("is not a list of container names (%v), so Ripple restarts the containers with a RestartContainer resizePolicy", err)
	}
	return ""
}

// inPlaceFallback checks an in-place fallback (plan.ParseInPlaceFallback).
func inPlaceFallback(v string) string {
	if _, err := plan.ParseInPlaceFallback(v); err != nil {
		return fmt.Sprintf("is not %q or %q, so Ripple uses %q", workload.FallbackNone, workload.FallbackEvict, workload.FallbackNone)
	}
	return ""
}

// reloadAction checks a reload action (plan.ParseReloadAction).
func reloadAction(v string) string {
	if _, err := plan.ParseReloadAction(v); err != nil {
		return fmt.Sprintf("is not a reload action (%v), so Ripple reloads by the restart method", err)
	}
	return ""
}

// reloadDelay checks a reload delay (plan.ParseReloadDelay).
func reloadDelay(v string) string {
	if _, err := plan.ParseReloadDelay(v); err != nil {
		return fmt.Sprintf("is not a duration from 0 to %s, so Ripple waits %s", plan.MaxReloadDelay, plan.DefaultReloadDelay)
	}
	return ""
}

// canaryCount checks how many workloads a change of a config rolls first
// (canary.Parse); an invalid one is a Warning event, and the next
// default applies.
func canaryCount(v string) string {
	if _, err := canary.Parse(v); err != nil {
		return "is not a number of workloads (such as 1) or a percentage from 1% to 100%, so the next default applies (the Namespace's value, else --canary)"
	}
	return ""
}

// canaryBake checks a bake time (canary.ParseBake).
func canaryBake(v string) string {
	if _, err := canary.ParseBake(v); err != nil {
		return "is not a duration from 0s to 24h, so the next default applies (the Namespace's value, else --canary-bake)"
	}
	return ""
}

// canaryResume checks a resume: the name of the halted change's
// ConfigRollout (change.Name, change.Resumes), as `ripple resume` writes
// it; anything else continues nothing.
func canaryResume(v string) string {
	d := strings.TrimSpace(v)
	stem, sum, ok := cutLast(d, "-")
	if !ok || stem == "" || len(sum) != changeSuffix || strings.Trim(sum, "0123456789abcdef") != "" || len(validation.IsDNS1123Subdomain(d)) > 0 {
		return "does not name a ConfigRollout (<config>-<10 hex digits>, as ripple resume writes it), so it continues no halted change"
	}
	return ""
}

// changeSuffix is the length of the hash a ConfigRollout's name ends with
// (change.Name).
const changeSuffix = 10

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// podCount checks a max-unavailable value (plan.ParseMaxUnavailable).
func podCount(v string) string {
	if _, err := plan.ParseMaxUnavailable(v); err != nil {
		return "is not a whole number of pods of at least 1, so Ripple uses 1"
	}
	return ""
}
