package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/workload"
)

// FuzzDurations checks the duration annotations (settle-window,
// min-rollout-interval, pause-period): any value gives a duration that is
// not negative, and either no warning and the value's own duration, or the
// default and a warning naming the annotation.
func FuzzDurations(f *testing.F) {
	for _, s := range []string{"0", "0s", "5s", " 30s ", "1h30m", "-1s", "5", "forever", "9999999999h", ""} {
		f.Add(s)
	}
	keys := annotation.DefaultKeys("")
	const def = 7 * time.Second
	f.Fuzz(func(t *testing.T, v string) {
		own, err := time.ParseDuration(strings.TrimSpace(v))
		valid := err == nil && own >= 0
		check := func(key string, d, dflt time.Duration, warning string) {
			t.Helper()
			switch {
			case valid && (d != own || warning != ""):
				t.Fatalf("%s %q: %v, %q; want %v and no warning", key, v, d, warning, own)
			case !valid && (d != dflt || !strings.Contains(warning, key)):
				t.Fatalf("%s %q: %v, %q; want the default and a warning naming it", key, v, d, warning)
			}
		}
		ann := map[string]string{keys.SettleWindow: v, keys.MinRolloutInterval: v, keys.PausePeriod: v}
		d, w := SettleWindow(ann, keys, def)
		check(keys.SettleWindow, d, def, w)
		d, w = MinRolloutInterval(ann, keys, def)
		check(keys.MinRolloutInterval, d, def, w)
		d, w = pausePeriod(Input{Settings: Settings{Keys: keys}, Workload: Workload{Pausable: true, Annotations: ann}})
		check(keys.PausePeriod, d, 0, w)
	})
}

// FuzzParsePolicy checks that any reload-policy value parses to one of the
// three policies, case and space aside, or is rejected as auto.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"", "auto", "Manual", " notify ", "never", "approve"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := ParsePolicy(v)
		want := Policy(strings.ToLower(strings.TrimSpace(v)))
		switch {
		case err != nil && p != Auto:
			t.Fatalf("%q: %q with error %v", v, p, err)
		case err == nil && want == "" && p != Auto:
			t.Fatalf("%q: %q, want auto", v, p)
		case err == nil && want != "" && p != want:
			t.Fatalf("%q: %q", v, p)
		case err == nil && p != Auto && p != Manual && p != Notify:
			t.Fatalf("%q: unknown policy %q", v, p)
		}
	})
}

// FuzzRestartOf checks the restart-method and max-unavailable
// annotations: any values give a known method and at least one pod, and
// each value not taken as written is reported naming its annotation.
func FuzzRestartOf(f *testing.F) {
	for _, s := range [][2]string{{"evict", "2"}, {" Delete ", "1"}, {"template", "0"}, {"evicted", "-3"}, {"", "1e9"}, {"EVICT", " 5 "}} {
		f.Add(s[0], s[1])
	}
	s := Settings{Keys: keys, RestartMethod: workload.RestartTemplate}
	f.Fuzz(func(t *testing.T, method, maxUnavailable string) {
		w := Workload{Kind: "StatefulSet", Restartable: true, Annotations: map[string]string{keys.RestartMethod: method, keys.MaxUnavailable: maxUnavailable}}
		r, problems := RestartOf(w, s)
		all := strings.Join(problems, "\n")
		if m, err := ParseRestartMethod(method); err == nil && r.Method != m || err != nil && (r.Method != workload.RestartTemplate || !strings.Contains(all, keys.RestartMethod)) {
			t.Fatalf("method %q: %q, problems %q", method, r.Method, all)
		}
		if n, err := ParseMaxUnavailable(maxUnavailable); r.MaxUnavailable < 1 || err == nil && r.MaxUnavailable != n || err != nil && !strings.Contains(all, keys.MaxUnavailable) {
			t.Fatalf("max-unavailable %q: %d, problems %q", maxUnavailable, r.MaxUnavailable, all)
		}
	})
}
