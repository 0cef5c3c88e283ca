package plan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

func TestParseReloadAction(t *testing.T) {
	for _, tc := range []struct {
		v, want string // want: the action's String, empty for an error
	}{
		{":9090/-/reload", "POST :9090/-/reload"},
		{" put  :http/reload?force=1 ", "PUT :http/reload?force=1"},
		{"GET :8080/", "GET :8080/"},
		{"POST :8080/actuator/refresh", "POST :8080/actuator/refresh"},
		{"9090/-/reload", ""},      // no colon
		{":9090", ""},              // no path
		{"DELETE :9090/x", ""},     // not a method Ripple sends
		{"POST :9090/x extra", ""}, // three fields
		{":0/x", ""},               // port out of range
		{":65536/x", ""},           // port out of range
		{":not_a_name/x", ""},      // not a port name
		{":9090/a#frag", ""},       // a fragment
		{":9090/" + strings.Repeat("a", 300), ""},
		{"", ""},
	} {
		a, err := ParseReloadAction(tc.v)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseReloadAction(%q) = %s, want an error", tc.v, a)
			}
			continue
		}
		if err != nil || a.String() != tc.want {
			t.Errorf("ParseReloadAction(%q) = %s, %v; want %s", tc.v, a, err, tc.want)
		}
	}
}

func TestParseReloadDelay(t *testing.T) {
	for v, want := range map[string]time.Duration{"0s": 0, " 90s ": 90 * time.Second, "1h": time.Hour, "2h": -1, "-1s": -1, "soon": -1, "": -1} {
		got, err := ParseReloadDelay(v)
		if (err != nil) != (want < 0) || (err == nil && got != want) {
			t.Errorf("ParseReloadDelay(%q) = %s, %v; want %s", v, got, err, want)
		}
	}
}

// A reload-action annotation on the workload or its pod template makes
// the method reload-action, with its delay (2m by default) and the restart
// method it would have had kept for a change the action cannot deliver;
// an invalid one is a problem naming it, and the restart method applies.
// A Namespace cannot set an action (an endpoint is the app's), and a kind
// without restart methods is told it takes none.
func TestRestartOfReloadAction(t *testing.T) {
	for _, tc := range []struct {
		name          string
		meta, tpl, ns map[string]string
		kind          string
		method        string
		delay         time.Duration
		instead       string
		problemsNamed []string
	}{
		{name: "on the workload", meta: map[string]string{keys.ReloadAction: ":9090/-/reload"},
			method: workload.RestartReloadAction, delay: DefaultReloadDelay, instead: workload.RestartTemplate},
		{name: "on the template, with a delay and evict", tpl: map[string]string{keys.ReloadAction: ":9090/-/reload", keys.ReloadDelay: "30s"},
			meta: map[string]string{keys.RestartMethod: "evict"}, method: workload.RestartReloadAction, delay: 30 * time.Second, instead: workload.RestartEvict},
		{name: "not from the Namespace", ns: map[string]string{keys.ReloadAction: ":9090/-/reload"}, method: workload.RestartTemplate},
		{name: "invalid", meta: map[string]string{keys.ReloadAction: "9090/-/reload"}, method: workload.RestartTemplate,
			problemsNamed: []string{`"ripple.dev/reload-action": "9090/-/reload" is not a reload action`, `restart method "template"`}},
		{name: "invalid delay", meta: map[string]string{keys.ReloadAction: ":9090/r", keys.ReloadDelay: "2h"},
			method: workload.RestartReloadAction, delay: DefaultReloadDelay, instead: workload.RestartTemplate,
			problemsNamed: []string{`"ripple.dev/reload-delay": "2h"`, "using 2m0s"}},
		{name: "a CronJob", kind: "CronJob", meta: map[string]string{keys.ReloadAction: ":9090/r"}, method: workload.RestartTemplate,
			problemsNamed: []string{"a CronJob takes no reload action"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Kind: "Deployment", Restartable: tc.kind == "", Annotations: tc.meta, NamespaceAnnotations: tc.ns,
				Template: &corev1.PodTemplateSpec{}}
			if tc.kind != "" {
				w.Kind = tc.kind
			}
			w.Template.Annotations = tc.tpl
			r, problems := RestartOf(w, Settings{Keys: keys, RestartMethod: workload.RestartTemplate})
			if r.Method != tc.method || r.Delay != tc.delay || r.Instead != tc.instead || (r.Action != nil) != (tc.method == workload.RestartReloadAction) {
				t.Errorf("got %+v, want %s, delay %s, instead %q", r, tc.method, tc.delay, tc.instead)
			}
			wantProblems(t, problems, tc.problemsNamed)
		})
	}
}

// An action delivers only what a running container sees change: a watched
// config read as environment variables, through subPath or by an init
// container refuses it (RefuseAction: the restart method instead, and a
// problem naming the annotation); a config nobody watches, or a whole
// volume, does not.
func TestRefuseAction(t *testing.T) {
	cfg := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	vol := corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	envFrom := []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	for _, tc := range []struct {
		name    string
		spec    corev1.PodSpec
		sources []refs.Ref
		why     string
	}{
		{name: "a whole volume", sources: []refs.Ref{cfg}, spec: corev1.PodSpec{Volumes: []corev1.Volume{vol},
			Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/app"}}}}}},
		{name: "envFrom", sources: []refs.Ref{cfg}, spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: envFrom}}},
			why: "container app reads ConfigMap cfg as environment variables"},
		{name: "envFrom of a config not watched", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: envFrom}}}},
		{name: "subPath", sources: []refs.Ref{cfg}, spec: corev1.PodSpec{Volumes: []corev1.Volume{vol},
			Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/app.conf", SubPath: "app.conf"}}}}},
			why: "container app mounts ConfigMap cfg (volume conf) with subPath"},
		{name: "an init container", sources: []refs.Ref{cfg}, spec: corev1.PodSpec{Volumes: []corev1.Volume{vol},
			InitContainers: []corev1.Container{{Name: "render", VolumeMounts: []corev1.VolumeMount{{Name: "conf", MountPath: "/in"}}}},
			Containers:     []corev1.Container{{Name: "app"}}},
			why: "init container render reads ConfigMap cfg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Template: &corev1.PodTemplateSpec{Spec: tc.spec}, Restart: workload.Restart{
				Method: workload.RestartReloadAction, Action: &workload.Action{Method: "POST"}, Delay: time.Minute, Instead: workload.RestartEvict}}
			var sources []Source
			for _, r := range tc.sources {
				sources = append(sources, Source{Ref: r})
			}
			problem := RefuseAction(&w, sources, keys)
			if tc.why == "" {
				if problem != "" || w.Restart.Method != workload.RestartReloadAction {
					t.Errorf("refused: %q, method %s", problem, w.Restart.Method)
				}
				return
			}
			if !strings.Contains(problem, tc.why) || !strings.Contains(problem, `"ripple.dev/reload-action"`) || !strings.Contains(problem, `restart method "evict"`) {
				t.Errorf("problem %q, want it to name the annotation, %q and the method used", problem, tc.why)
			}
			if w.Restart.Method != workload.RestartEvict || w.Restart.Action != nil {
				t.Errorf("restart %+v, want evict without an action", w.Restart)
			}
		})
	}
}
