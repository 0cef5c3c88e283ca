package plan

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/workload"
)

func TestParseRestartMethod(t *testing.T) {
	for _, tc := range []struct {
		v, want string
		ok      bool
	}{
		{"template", workload.RestartTemplate, true},
		{" Evict ", workload.RestartEvict, true},
		{"DELETE", workload.RestartDelete, true},
		{"In-Place", workload.RestartInPlace, true},
		{"evicted", "", false},
		{"", "", false},
	} {
		got, err := ParseRestartMethod(tc.v)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseRestartMethod(%q) = %q, %v; want %q, ok %v", tc.v, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "template, evict, delete or in-place") {
			t.Errorf("ParseRestartMethod(%q): %v does not list the methods", tc.v, err)
		}
	}
}

// wantProblems fails t unless problems say each of named, or are none when
// none is named.
func wantProblems(t *testing.T, problems, named []string) {
	t.Helper()
	all := strings.Join(problems, "\n")
	for _, s := range named {
		if !strings.Contains(all, s) {
			t.Errorf("problems %q do not say %s", all, s)
		}
	}
	if len(named) == 0 && all != "" {
		t.Errorf("problems %q, want none", all)
	}
}

func TestParseMaxUnavailable(t *testing.T) {
	for v, want := range map[string]int{"1": 1, " 3 ": 3, "0": 0, "-1": 0, "two": 0, "": 0} {
		got, err := ParseMaxUnavailable(v)
		if got != want || (err == nil) != (want > 0) {
			t.Errorf("ParseMaxUnavailable(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
}

// The restart method and max-unavailable are looked up as every governing
// setting is (Governing): the workload's metadata, else its pod template,
// else its Namespace (read with --namespace-defaults), else the flag. An
// invalid value is a problem naming the annotation and where it was
// found, and the default applies.
func TestRestartOf(t *testing.T) {
	at := "2026-01-01T09:00:00Z"
	for _, tc := range []struct {
		name          string
		meta, tpl, ns map[string]string
		flag          string
		notRestarts   bool
		method        string
		max           int
		at            bool
		problemsNamed []string
	}{
		{name: "default: the flag's", flag: "template", method: workload.RestartTemplate, max: 1},
		{name: "the flag's evict", flag: "evict", method: workload.RestartEvict, max: 1},
		{name: "on the workload", flag: "template", meta: map[string]string{keys.RestartMethod: "evict", keys.MaxUnavailable: "2"},
			method: workload.RestartEvict, max: 2},
		{name: "on the pod template", flag: "template", tpl: map[string]string{keys.RestartMethod: " Delete "}, method: workload.RestartDelete, max: 1},
		{name: "the workload's beats its template's", flag: "template", meta: map[string]string{keys.RestartMethod: "template"},
			tpl: map[string]string{keys.RestartMethod: "evict"}, method: workload.RestartTemplate, max: 1},
		{name: "the Namespace's beats the flag", flag: "template", ns: map[string]string{keys.RestartMethod: "evict", keys.MaxUnavailable: "3"},
			method: workload.RestartEvict, max: 3},
		{name: "the template's beats the Namespace's", flag: "template", tpl: map[string]string{keys.RestartMethod: "template"},
			ns: map[string]string{keys.RestartMethod: "evict"}, method: workload.RestartTemplate, max: 1},
		{name: "invalid values fall back with a message naming the annotation", flag: "delete",
			meta:   map[string]string{keys.RestartMethod: "evicted", keys.MaxUnavailable: "0"},
			method: workload.RestartDelete, max: 1, problemsNamed: []string{`"ripple.dev/restart-method": "evicted"`, `"ripple.dev/max-unavailable": "0"`, "--restart-method"}},
		{name: "an invalid Namespace value names the Namespace", flag: "template", ns: map[string]string{keys.RestartMethod: "evicted"},
			method: workload.RestartTemplate, max: 1, problemsNamed: []string{`"ripple.dev/restart-method" on the namespace`}},
		{name: "the restart time is read", flag: "template", meta: map[string]string{keys.RestartMethod: "evict", keys.RestartedAt: at},
			method: workload.RestartEvict, max: 1, at: true},
		{name: "a CronJob asked for evict is told it reloads its own way", notRestarts: true, flag: "template",
			tpl: map[string]string{keys.RestartMethod: "evict"}, method: workload.RestartTemplate, max: 1,
			problemsNamed: []string{`"ripple.dev/restart-method": a CronJob takes no restart method`}},
		{name: "a CronJob under a Namespace's evict is not", notRestarts: true, flag: "template",
			ns: map[string]string{keys.RestartMethod: "evict"}, method: workload.RestartTemplate, max: 1},
		{name: "a CronJob under the flag's evict is not", notRestarts: true, flag: "evict", method: workload.RestartTemplate, max: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Kind: "StatefulSet", Restartable: !tc.notRestarts, Annotations: tc.meta, NamespaceAnnotations: tc.ns,
				Template: &corev1.PodTemplateSpec{}}
			if tc.notRestarts {
				w.Kind = "CronJob"
			}
			w.Template.Annotations = tc.tpl
			r, problems := RestartOf(w, Settings{Keys: keys, RestartMethod: tc.flag})
			if r.Method != tc.method || r.MaxUnavailable != tc.max || r.At.IsZero() == tc.at {
				t.Errorf("got %+v, want %s, %d, at %v", r, tc.method, tc.max, tc.at)
			}
			wantProblems(t, problems, tc.problemsNamed)
		})
	}
}

// evicting is a workload whose restart method evicts its pods (as
// RestartOf resolves it).
func evicting(i *Input) {
	i.Workload.Restartable = true
	i.Workload.Restart = workload.Restart{Method: workload.RestartEvict, MaxUnavailable: 2}
}

// Under evict the plan builds no pod template: its update is the record,
// the restart time from the plan's clock, and the restart to carry out.
func TestRestartMethodPlansNoTemplate(t *testing.T) {
	p := For(in(evicting, both, digestOf(cmApp, "cm2")))
	if p.Update.Template != nil {
		t.Fatal("the plan of an evict workload built a pod template")
	}
	want := workload.Restart{Method: workload.RestartEvict, MaxUnavailable: 2, At: now}
	if r := p.Update.Restart; r == nil || !reflect.DeepEqual(*r, want) || !p.Reloads() {
		t.Fatalf("restart %+v (reloads %v), want %+v", r, p.Reloads(), want)
	}
	if v := p.Update.Annotations[keys.RestartedAt]; v == nil || *v != now.Format(time.RFC3339) {
		t.Errorf("restarted-at %v, want the plan's time", v)
	}
	if got := recordOf(t, p); got["ConfigMap/app"] != "cm2" {
		t.Errorf("record %v, want the new digest recorded", got)
	}
	// What the workload shows is its record, not its template (which still
	// carries an older env var from the template method).
	p = For(in(evicting, both, envVar(cmApp, "cm0")))
	if p.Reloads() || len(p.Changes) != 0 {
		t.Errorf("changes %v: the record, not the template, is the applied state", changed(p))
	}
	// Nothing changed: no restart, no restart time.
	p = For(in(evicting, both))
	if p.Update.Restart != nil || p.Update.Annotations[keys.RestartedAt] != nil {
		t.Errorf("update %+v without a change", p.Update)
	}
}

// An invalid restart method is a warning naming the annotation; the
// workload still reloads, by the flag's method.
func TestInvalidRestartMethodStillReloads(t *testing.T) {
	i := in(both, digestOf(cmApp, "cm2"), annotate(keys.RestartMethod, "evicted"))
	i.RestartMethod = workload.RestartTemplate
	i.Workload.Restartable = true
	var problems []string
	i.Workload.Restart, problems = RestartOf(i.Workload, i.Settings)
	i.Workload.Invalid = problems
	p := For(i)
	if !strings.Contains(strings.Join(p.Warnings, "\n"), keys.RestartMethod) {
		t.Errorf("warnings %q do not name %s", p.Warnings, keys.RestartMethod)
	}
	if got, _ := envOf(p, cmApp); got != "cm2" {
		t.Errorf("template %q, want the change written by the flag's method", got)
	}
}

// Under evict a deleted config (--reload-on-delete) restarts the pods as
// any change does: there is no template to compare with.
func TestRestartMethodRestartsOnDelete(t *testing.T) {
	i := in(evicting, both)
	i.ReloadOnDelete = true
	i.Sources[0].Found = false
	p := For(i)
	if p.Update.Restart == nil || p.Update.Template != nil {
		t.Errorf("update %+v, want a restart and no template", p.Update)
	}
}

// With --restart-delete-namespaces, the delete method is refused outside
// those namespaces, whoever asks for it: the workload reloads by its
// template, and the problem names the flag.
func TestRestartDeleteNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespace  string
		allowed    []string
		meta, ns   map[string]string
		flag       string
		method     string
		problemsOf []string
	}{
		{name: "no list: delete anywhere (today's behaviour)", namespace: "shop", flag: "delete", method: workload.RestartDelete},
		{name: "in the list", namespace: "shop", allowed: []string{"batch", "shop"}, meta: map[string]string{keys.RestartMethod: "delete"},
			flag: "template", method: workload.RestartDelete},
		{name: "the workload's delete outside the list", namespace: "tenant", allowed: []string{"shop"}, meta: map[string]string{keys.RestartMethod: "delete"},
			flag: "template", method: workload.RestartTemplate,
			problemsOf: []string{`annotation "ripple.dev/restart-method": the delete restart method is not allowed in namespace "tenant" (--restart-delete-namespaces: shop)`}},
		{name: "the Namespace's delete outside the list", namespace: "tenant", allowed: []string{"shop"}, ns: map[string]string{keys.RestartMethod: "Delete"},
			flag: "template", method: workload.RestartTemplate, problemsOf: []string{`on the namespace`, "--restart-delete-namespaces"}},
		{name: "the flag's delete outside the list", namespace: "tenant", allowed: []string{"shop"}, flag: "delete",
			method: workload.RestartTemplate, problemsOf: []string{"flag --restart-method", "--restart-delete-namespaces"}},
		{name: "evict is not concerned", namespace: "tenant", allowed: []string{"shop"}, meta: map[string]string{keys.RestartMethod: "evict"},
			flag: "template", method: workload.RestartEvict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Kind: "StatefulSet", Namespace: tc.namespace, Restartable: true, Annotations: tc.meta, NamespaceAnnotations: tc.ns,
				Template: &corev1.PodTemplateSpec{}}
			r, problems := RestartOf(w, Settings{Keys: keys, RestartMethod: tc.flag, DeleteNamespaces: tc.allowed})
			if r.Method != tc.method {
				t.Errorf("method %q, want %q", r.Method, tc.method)
			}
			wantProblems(t, problems, tc.problemsOf)
		})
	}
}

// The in-place settings are read as the restart method is (Governing);
// an invalid value is a problem naming the annotation, and the default
// applies.
func TestRestartOfInPlace(t *testing.T) {
	for _, tc := range []struct {
		name          string
		meta, ns      map[string]string
		containers    []string
		fallback      string
		problemsNamed []string
	}{
		{name: "defaults", meta: map[string]string{keys.RestartMethod: "in-place"}, fallback: workload.FallbackNone},
		{name: "on the workload", meta: map[string]string{keys.RestartMethod: "In-Place", keys.RestartContainers: "app, worker", keys.InPlaceFallback: "Evict"},
			containers: []string{"app", "worker"}, fallback: workload.FallbackEvict},
		{name: "a container named twice", meta: map[string]string{keys.RestartMethod: "in-place", keys.RestartContainers: "app,app"},
			containers: []string{"app"}, fallback: workload.FallbackNone},
		{name: "the Namespace's fallback", meta: map[string]string{keys.RestartMethod: "in-place"}, ns: map[string]string{keys.InPlaceFallback: "evict"},
			fallback: workload.FallbackEvict},
		{name: "invalid values", meta: map[string]string{keys.RestartMethod: "in-place", keys.RestartContainers: "App_1", keys.InPlaceFallback: "delete"},
			fallback: workload.FallbackNone, problemsNamed: []string{`"ripple.dev/restart-containers": "App_1" is not a container name`, `"ripple.dev/in-place-fallback": "delete"`}},
		{name: "not read under evict", meta: map[string]string{keys.RestartMethod: "evict", keys.InPlaceFallback: "delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Kind: "Deployment", Restartable: true, Annotations: tc.meta, NamespaceAnnotations: tc.ns, Template: &corev1.PodTemplateSpec{}}
			r, problems := RestartOf(w, Settings{Keys: keys, RestartMethod: workload.RestartTemplate})
			if strings.Join(r.Containers, ",") != strings.Join(tc.containers, ",") || r.Fallback != tc.fallback {
				t.Errorf("containers %v, fallback %q; want %v, %q", r.Containers, r.Fallback, tc.containers, tc.fallback)
			}
			wantProblems(t, problems, tc.problemsNamed)
		})
	}
}
