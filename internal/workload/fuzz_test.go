package workload

import (
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzRestartSettings checks the restart-method and max-unavailable
// annotations: any values give a known method and at least one pod, and
// each value not taken as written is reported naming its annotation.
func FuzzRestartSettings(f *testing.F) {
	for _, s := range [][2]string{{"evict", "2"}, {" Delete ", "1"}, {"template", "0"}, {"evicted", "-3"}, {"", "1e9"}, {"EVICT", " 5 "}} {
		f.Add(s[0], s[1])
	}
	k := WithRestarts(StatefulSet, restartOptions)
	f.Fuzz(func(t *testing.T, method, maxUnavailable string) {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			restartOptions.MethodKey: method, restartOptions.MaxUnavailableKey: maxUnavailable}}}
		r := k.(Restarter).Restart(s)
		problems := strings.Join(k.(Checker).Check(s), "\n")
		m := strings.ToLower(strings.TrimSpace(method))
		if r.Method != m && (r.Method != restartOptions.Method || !strings.Contains(problems, restartOptions.MethodKey)) {
			t.Fatalf("method %q: %q, problems %q", method, r.Method, problems)
		}
		n, err := strconv.Atoi(strings.TrimSpace(maxUnavailable))
		if r.MaxUnavailable < 1 || (r.MaxUnavailable != n && !strings.Contains(problems, restartOptions.MaxUnavailableKey)) || (err == nil && n >= 1 && r.MaxUnavailable != n) {
			t.Fatalf("max-unavailable %q: %d, problems %q", maxUnavailable, r.MaxUnavailable, problems)
		}
	})
}

// FuzzCronJobMode checks the cronjob-reload annotation: any value gives
// run or template, and one not taken is reported naming the annotation.
func FuzzCronJobMode(f *testing.F) {
	for _, s := range []string{"run", " template ", "Run", "", "never"} {
		f.Add(s)
	}
	const key = "ripple.dev/cronjob-reload"
	k := NewCronJob(CronJobOptions{Mode: CronJobRun, ModeKey: key})
	f.Fuzz(func(t *testing.T, v string) {
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: v}}}
		mode := k.(cronJob).mode(cj)
		problems := strings.Join(k.(Checker).Check(cj), "\n")
		taken := mode == strings.TrimSpace(v)
		if (mode != CronJobRun && mode != CronJobTemplate) || taken == strings.Contains(problems, key) {
			t.Fatalf("%q: mode %q, problems %q", v, mode, problems)
		}
	})
}
