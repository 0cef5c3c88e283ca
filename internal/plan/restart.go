package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The restart method of a workload (template, evict, delete or in-place,
// and how many pods may be down at once) is resolved once per reconcile,
// by gather, with RestartOf: the same lookup as the reload window and
// policy (Governing). The plan of an evict, delete or in-place workload
// then builds no pod template: its update is the applied record, the
// restarted-at time from the plan's clock and the Restart the controller
// carries out.

// ParseRestartMethod reads a restart method as written on a workload, its
// Namespace or --restart-method: template, evict, delete or in-place, in
// any case, spaces trimmed.
func ParseRestartMethod(v string) (string, error) {
	switch m := strings.ToLower(strings.TrimSpace(v)); m {
	case workload.RestartTemplate, workload.RestartEvict, workload.RestartDelete, workload.RestartInPlace:
		return m, nil
	}
	return "", fmt.Errorf("%q is not a restart method: use %s, %s, %s or %s", v,
		workload.RestartTemplate, workload.RestartEvict, workload.RestartDelete, workload.RestartInPlace)
}

// ParseInPlaceFallback reads an in-place-fallback value: none or evict, in
// any case, spaces trimmed; empty is none.
func ParseInPlaceFallback(v string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(v)); f {
	case "":
		return workload.FallbackNone, nil
	case workload.FallbackNone, workload.FallbackEvict:
		return f, nil
	}
	return "", fmt.Errorf("%q is not an in-place fallback: use %s or %s", v, workload.FallbackNone, workload.FallbackEvict)
}

// ParseContainers reads a restart-containers value: container names,
// comma-separated, spaces trimmed, each once; empty is none named (the
// default).
func ParseContainers(v string) ([]string, error) {
	var out []string
	for n := range strings.SplitSeq(v, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			return nil, fmt.Errorf("%q is not a container name: %s", n, strings.Join(msgs, "; "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// ParseMaxUnavailable reads a max-unavailable value: a whole number of
// pods, at least 1.
func ParseMaxUnavailable(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a whole number of pods of at least 1", v)
	}
	return n, nil
}

// RestartOf resolves how w takes a reload: the restart method and
// max-unavailable governing it (Governing: the workload's annotation, its
// pod template's, its Namespace's, else --restart-method and 1), and the
// restart in progress (the restarted-at time on its metadata). An invalid
// value is a problem naming the annotation, and the default applies: the
// workload still reloads, and no other workload is concerned. A kind that
// takes no restart method (w.Restartable unset) reloads its own way; it is
// told so when its own annotations ask for another method.
func RestartOf(w Workload, s Settings) (workload.Restart, []string) {
	keys := s.Keys
	r := workload.Restart{Method: workload.RestartTemplate, MaxUnavailable: 1}
	if !w.Restartable {
		return r, ownWay(w, keys)
	}
	var problems []string
	v, from := w.Governing(keys.RestartMethod, s.RestartMethod)
	m, err := ParseRestartMethod(v)
	if err != nil && from != FromFlag {
		problems = append(problems, fmt.Sprintf("%s: %v; using %q (--restart-method)", governingAnnotation(keys.RestartMethod, from), err, s.RestartMethod))
		m, err = ParseRestartMethod(s.RestartMethod)
		from = FromFlag
	}
	if err == nil {
		r.Method = m
	}
	if problem := deleteRefused(w, s, from); r.Method == workload.RestartDelete && problem != "" {
		problems = append(problems, problem)
		r.Method = workload.RestartTemplate
	}
	if v, from := w.Governing(keys.MaxUnavailable, ""); from != FromFlag {
		n, err := ParseMaxUnavailable(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v; using 1", governingAnnotation(keys.MaxUnavailable, from), err))
		} else {
			r.MaxUnavailable = n
		}
	}
	problems = append(problems, reloadActionOf(w, keys, &r)...)
	switch r.Method {
	case workload.RestartInPlace:
		problems = append(problems, inPlaceOf(w, keys.RestartContainers, keys.InPlaceFallback, &r)...)
	case workload.RestartReloadAction:
		containers := "" // the action restarts no container, but its fallback may
		if r.Instead == workload.RestartInPlace {
			containers = keys.RestartContainers
		}
		problems = append(problems, inPlaceOf(w, containers, keys.InPlaceFallback, &r)...)
	}
	if t, err := time.Parse(time.RFC3339, w.Annotations[keys.RestartedAt]); err == nil {
		r.At = t
	}
	return r, problems
}

// ownWay tells w, a kind that reloads its own way, when its own
// annotations ask for a restart method or a reload action.
func ownWay(w Workload, keys annotation.Keys) []string {
	v, from := w.Governing(keys.RestartMethod, workload.RestartTemplate)
	if m, _ := ParseRestartMethod(v); m != workload.RestartTemplate && (from == FromWorkload || from == FromTemplate) {
		return []string{fmt.Sprintf("annotation %q: a %s takes no restart method (only Deployments, StatefulSets and DaemonSets do); it reloads as it always does",
			keys.RestartMethod, w.Kind)}
	}
	if _, from := w.Governing(keys.ReloadAction, ""); from == FromWorkload || from == FromTemplate {
		return []string{fmt.Sprintf("annotation %q: a %s takes no reload action (only Deployments, StatefulSets and DaemonSets do); it reloads as it always does",
			keys.ReloadAction, w.Kind)}
	}
	return nil
}

// inPlaceOf reads the in-place settings governing w (its containers
// annotation and its fallback annotation, keys containers and fallback;
// no containers key under reload-action, which restarts none) into r; an
// invalid value is a problem, and the default applies: the containers
// with a RestartContainer policy, no fallback.
func inPlaceOf(w Workload, containers, fallback string, r *workload.Restart) []string {
	var problems []string
	r.Fallback = workload.FallbackNone
	if v, from := w.Governing(fallback, ""); from != FromFlag {
		f, err := ParseInPlaceFallback(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v; using %q", governingAnnotation(fallback, from), err, workload.FallbackNone))
		} else {
			r.Fallback = f
		}
	}
	if containers == "" {
		return problems
	}
	if v, from := w.Governing(containers, ""); from != FromFlag {
		names, err := ParseContainers(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v; using the containers with a RestartContainer resize policy", governingAnnotation(containers, from), err))
		} else {
			r.Containers = names
		}
	}
	return problems
}

// deleteRefused says why the delete restart method, from where from
// says, is not allowed in w's namespace (--restart-delete-namespaces);
// empty when it is.
func deleteRefused(w Workload, s Settings, from string) string {
	if len(s.DeleteNamespaces) == 0 || slices.Contains(s.DeleteNamespaces, w.Namespace) {
		return ""
	}
	where := "flag --restart-method"
	if from != FromFlag {
		where = governingAnnotation(s.Keys.RestartMethod, from)
	}
	return fmt.Sprintf("%s: the delete restart method is not allowed in namespace %q (--restart-delete-namespaces: %s); using %q",
		where, w.Namespace, strings.Join(s.DeleteNamespaces, ","), workload.RestartTemplate)
}

// governingAnnotation names annotation key as found where from says.
func governingAnnotation(key, from string) string {
	if from == FromWorkload {
		return fmt.Sprintf("annotation %q", key)
	}
	return fmt.Sprintf("annotation %q on the %s", key, from)
}

// restartNow is the restart of a plan that restarts w's pods at now: the
// time the write records, to the second (as the annotation holds it).
func restartNow(w Workload, now time.Time) *workload.Restart {
	r := w.Restart
	r.At = now.UTC().Truncate(time.Second)
	return &r
}
