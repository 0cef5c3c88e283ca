package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
)

// reloadEnvPrefix starts every env var the env-vars strategy writes
// (strategy.EnvVarName).
const reloadEnvPrefix = "STAKATER_"

// pendingChange is the value of a CronJob's pending-job annotation: only
// what a reload strategy writes on the job template (its env vars and its
// annotation). The Job is built, when it is created, from the CronJob's
// own job template as it is then, with this change: whoever can edit the
// annotation can add nothing to the Job that the CronJob's template does
// not have, but those values.
type pendingChange struct {
	// Env is, by container name, the strategy's env vars to set; a null
	// value removes one.
	Env map[string]map[string]*string `json:"env,omitempty"`
	// Annotations are the strategy's pod-template annotations to set; a
	// null value removes one.
	Annotations map[string]*string `json:"annotations,omitempty"`
}

// changeOf is the strategy's change from base to next: their difference in
// reload env vars and in the last-reloaded-from annotation. Any other
// difference is not the strategy's and is left out.
func changeOf(base, next *corev1.PodTemplateSpec) pendingChange {
	var ch pendingChange
	for _, c := range next.Spec.Containers {
		before, after := reloadEnv(base.Spec.Containers, c.Name), reloadEnv(next.Spec.Containers, c.Name)
		diff := map[string]*string{}
		for name, v := range after {
			if old, ok := before[name]; !ok || old != v {
				diff[name] = &v
			}
		}
		for name := range before {
			if _, ok := after[name]; !ok {
				diff[name] = nil
			}
		}
		if len(diff) > 0 {
			if ch.Env == nil {
				ch.Env = map[string]map[string]*string{}
			}
			ch.Env[c.Name] = diff
		}
	}
	old, hadOld := base.Annotations[annotation.LastReloadedFrom]
	v, ok := next.Annotations[annotation.LastReloadedFrom]
	switch {
	case ok && (!hadOld || old != v):
		ch.Annotations = map[string]*string{annotation.LastReloadedFrom: &v}
	case !ok && hadOld:
		ch.Annotations = map[string]*string{annotation.LastReloadedFrom: nil}
	}
	return ch
}

// reloadEnv is the reload env vars of the container named name, by name.
func reloadEnv(cs []corev1.Container, name string) map[string]string {
	out := map[string]string{}
	for _, c := range cs {
		if c.Name != name {
			continue
		}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, reloadEnvPrefix) && e.ValueFrom == nil {
				out[e.Name] = e.Value
			}
		}
	}
	return out
}

// apply writes the change on tpl; a container tpl no longer has is skipped.
func (ch pendingChange) apply(tpl *corev1.PodTemplateSpec) {
	for _, name := range slices.Sorted(maps.Keys(ch.Env)) {
		i := slices.IndexFunc(tpl.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
		if i < 0 {
			continue
		}
		c := &tpl.Spec.Containers[i]
		for _, env := range slices.Sorted(maps.Keys(ch.Env[name])) {
			v := ch.Env[name][env]
			j := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == env })
			switch {
			case v == nil && j >= 0:
				c.Env = slices.Delete(c.Env, j, j+1)
			case v != nil && j >= 0:
				c.Env[j] = corev1.EnvVar{Name: env, Value: *v}
			case v != nil:
				c.Env = append(c.Env, corev1.EnvVar{Name: env, Value: *v})
			}
		}
	}
	if len(ch.Annotations) > 0 && tpl.Annotations == nil {
		tpl.Annotations = map[string]string{}
	}
	for k, v := range ch.Annotations {
		if v == nil {
			delete(tpl.Annotations, k)
		} else {
			tpl.Annotations[k] = *v
		}
	}
}

// check refuses a change that sets anything but a strategy's values.
func (ch pendingChange) check() error {
	for c, env := range ch.Env {
		for name := range env {
			if !strings.HasPrefix(name, reloadEnvPrefix) {
				return fmt.Errorf("env var %q of container %q is not a reload env var (%s*)", name, c, reloadEnvPrefix)
			}
		}
	}
	for k := range ch.Annotations {
		if k != annotation.LastReloadedFrom {
			return fmt.Errorf("pod-template annotation %q is not %s", k, annotation.LastReloadedFrom)
		}
	}
	return nil
}

// parsePending reads a pending-job annotation against the CronJob's job
// template base. An older Ripple wrote the whole pod template there: only
// the strategy's change is taken from it (changeOf), never the template.
func parsePending(value string, base *corev1.PodTemplateSpec) (pendingChange, error) {
	var ch pendingChange
	err := strictJSON(value, &ch)
	if err != nil {
		var old corev1.PodTemplateSpec
		if strictJSON(value, &old) != nil {
			return ch, errors.New("not a change Ripple wrote (edited by hand?): no Job is started from it; remove the annotation")
		}
		ch = changeOf(base, &old)
	}
	if err := ch.check(); err != nil {
		return ch, fmt.Errorf("%w: no Job is started from it; remove the annotation", err)
	}
	return ch, nil
}

// strictJSON decodes one JSON value with no unknown fields into v.
func strictJSON(s string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}
