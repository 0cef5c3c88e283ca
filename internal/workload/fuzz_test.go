package workload

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
