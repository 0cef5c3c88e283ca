package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"
)

// storm runs plans one after another as the reconciler does: it keeps the
// settle and storm state, applies each write to the workload, and records
// the rollouts. ConfigMap "app" is the config that changes.
type storm struct {
	t      *testing.T
	in     Input
	rolled []string // the digests of "app" each rollout carried
	held   int      // holds begun
}

func newStorm(t *testing.T, opts ...func(*Input)) *storm {
	return &storm{t: t, in: in(append([]func(*Input){both}, opts...)...)}
}

func flap(threshold int, window, quiet time.Duration) func(*Input) {
	return func(i *Input) { i.Flap = Flap{Threshold: threshold, Window: window, Quiet: quiet} }
}

// at plans a reconcile at now+d with "app" at digest sum.
func (w *storm) at(d time.Duration, sum string) Plan {
	w.t.Helper()
	w.in.Now = now.Add(d)
	digestOf(cmApp, sum)(&w.in)
	p := For(w.in)
	w.in.Pending, w.in.Storm = p.Pending, p.Storm
	if p.Wait > 0 && p.Writes() {
		w.t.Fatalf("at %s: a plan that waits writes %+v", d, p.Update)
	}
	if p.Hold != nil && p.Hold.Began {
		w.held++
	}
	if p.Update.Template != nil {
		w.in.Workload.Template = p.Update.Template
	}
	for k, v := range p.Update.Annotations {
		if v == nil {
			delete(w.in.Workload.Annotations, k)
		} else {
			w.in.Workload.Annotations[k] = *v
		}
	}
	if p.Reloads() {
		w.in.Pending = Pending{}
		w.in.Storm = p.Storm.AfterRollout(p, w.in.Now)
		got, _ := envOf(p, cmApp)
		w.rolled = append(w.rolled, got)
	}
	return p
}

func (w *storm) wantRolled(want ...string) {
	w.t.Helper()
	if strings.Join(w.rolled, ",") != strings.Join(want, ",") {
		w.t.Errorf("rolled %q, want %q", w.rolled, want)
	}
}

func TestFlapBreaker(t *testing.T) {
	limits := flap(3, time.Minute, 10*time.Second)

	t.Run("trips after more than threshold change sets within the window, holds until quiet, then rolls the latest once", func(t *testing.T) {
		w := newStorm(t, limits)
		for i, sum := range []string{"cm2", "cm3", "cm4"} {
			if p := w.at(time.Duration(i)*time.Second, sum); !p.Reloads() || p.Hold != nil {
				t.Fatalf("change %d: reloads %v, hold %+v: want a rollout", i+1, p.Reloads(), p.Hold)
			}
		}
		p := w.at(3*time.Second, "cm5")
		if p.Hold == nil || !p.Hold.Began || p.Hold.Changes != 4 || p.Wait != 10*time.Second || p.Reloads() {
			t.Fatalf("fourth change: hold %+v, wait %v, reloads %v: want a new hold for 10s", p.Hold, p.Wait, p.Reloads())
		}
		if want := now.Add(13 * time.Second); !p.Hold.Until.Equal(want) {
			t.Errorf("until %v, want %v", p.Hold.Until, want)
		}
		p = w.at(5*time.Second, "cm6")
		if p.Hold == nil || p.Hold.Began || p.Wait != 10*time.Second {
			t.Fatalf("a change while held: hold %+v, wait %v: want the hold extended, not begun again", p.Hold, p.Wait)
		}
		p = w.at(12*time.Second, "cm6")
		if p.Hold == nil || p.Wait != 3*time.Second || len(p.Storm.Seen) != 4 {
			t.Fatalf("the same change set again: hold %+v, wait %v, seen %d: want the hold, nothing counted", p.Hold, p.Wait, len(p.Storm.Seen))
		}
		p = w.at(15*time.Second, "cm6")
		if p.Hold != nil || !p.Resumed || !p.Reloads() {
			t.Fatalf("quiet for 10s: hold %+v, resumed %v, reloads %v: want the rollout", p.Hold, p.Resumed, p.Reloads())
		}
		w.wantRolled("cm2", "cm3", "cm4", "cm6")
		if w.held != 1 {
			t.Errorf("%d holds begun, want 1", w.held)
		}
	})

	t.Run("a single change never holds", func(t *testing.T) {
		w := newStorm(t, flap(1, time.Hour, time.Hour))
		if p := w.at(0, "cm2"); p.Hold != nil || !p.Reloads() {
			t.Fatalf("hold %+v, reloads %v", p.Hold, p.Reloads())
		}
		// The second within the window is more than one.
		if p := w.at(time.Second, "cm3"); p.Hold == nil || p.Reloads() {
			t.Fatalf("second change: hold %+v, reloads %v", p.Hold, p.Reloads())
		}
	})

	t.Run("change sets further apart than the window allows never trip it", func(t *testing.T) {
		w := newStorm(t, limits)
		for i := range 12 {
			if p := w.at(time.Duration(i)*21*time.Second, []string{"cm2", "cm3"}[i%2]); p.Hold != nil || !p.Reloads() {
				t.Fatalf("change %d: hold %+v, reloads %v", i+1, p.Hold, p.Reloads())
			}
		}
	})

	t.Run("the settle cap does not roll a held workload", func(t *testing.T) {
		w := newStorm(t, limits, func(i *Input) { i.SettleWindow = time.Second })
		for i := range 4 {
			w.at(time.Duration(i)*500*time.Millisecond, []string{"cm2", "cm3", "cm4", "cm5"}[i])
		}
		w.in.Pending = Pending{ID: "other", First: now.Add(-time.Minute), Last: now.Add(time.Second)}
		p := w.at(1600*time.Millisecond, "cm6")
		if p.Hold == nil || p.Reloads() || p.Wait != 10*time.Second {
			t.Fatalf("hold %+v, reloads %v, wait %v: want held past the settle cap", p.Hold, p.Reloads(), p.Wait)
		}
		w.wantRolled()
		if p := w.at(12*time.Second, "cm6"); !p.Reloads() || !p.Resumed {
			t.Fatalf("after the quiet period: reloads %v, resumed %v", p.Reloads(), p.Resumed)
		}
		w.wantRolled("cm6")
	})

	t.Run("memory stays bounded and is dropped once the window passed", func(t *testing.T) {
		w := newStorm(t, limits)
		for i := range 200 {
			w.at(time.Duration(i)*100*time.Millisecond, []string{"cm2", "cm3"}[i%2])
			if n := len(w.in.Storm.Seen); n > 4 {
				t.Fatalf("change %d: %d times kept, want at most threshold+1", i+1, n)
			}
		}
		if p := w.at(time.Hour, "cm3"); !p.Reloads() || !p.Resumed {
			t.Fatalf("reloads %v, resumed %v", p.Reloads(), p.Resumed)
		}
		p := w.at(2*time.Hour, "cm3")
		if !p.Storm.IsZero() {
			t.Errorf("storm state %+v kept after the window, want none", p.Storm)
		}
	})

	t.Run("configs back to what is applied end the hold with nothing to roll", func(t *testing.T) {
		w := newStorm(t, limits)
		for i := range 4 {
			w.at(time.Duration(i)*time.Second, []string{"cm2", "cm3", "cm4", "cm5"}[i])
		}
		p := w.at(5*time.Second, "cm4")
		if p.Hold != nil || !p.Resumed || p.Reloads() || p.Wait != 0 {
			t.Fatalf("hold %+v, resumed %v, reloads %v, wait %v", p.Hold, p.Resumed, p.Reloads(), p.Wait)
		}
		w.wantRolled("cm2", "cm3", "cm4")
	})

	t.Run("a threshold of 0 turns it off", func(t *testing.T) {
		w := newStorm(t, flap(0, time.Minute, time.Second))
		for i := range 20 {
			if p := w.at(time.Duration(i)*time.Second, []string{"cm2", "cm3"}[i%2]); p.Hold != nil || !p.Reloads() || !p.Storm.IsZero() {
				t.Fatalf("change %d: hold %+v, reloads %v, storm %+v", i+1, p.Hold, p.Reloads(), p.Storm)
			}
		}
	})

	t.Run("a hold with a quiet period longer than the window still ends", func(t *testing.T) {
		w := newStorm(t, flap(1, time.Second, time.Minute))
		w.at(0, "cm2")
		if p := w.at(500*time.Millisecond, "cm3"); p.Hold == nil {
			t.Fatal("not held")
		}
		if p := w.at(30*time.Second, "cm3"); p.Hold == nil || p.Wait != 30500*time.Millisecond {
			t.Fatalf("hold %+v, wait %v: want held until a minute after the last change", p.Hold, p.Wait)
		}
		if p := w.at(61*time.Second, "cm3"); !p.Reloads() {
			t.Fatal("not rolled after the quiet period")
		}
		w.wantRolled("cm2", "cm3")
	})
}

func TestMinRolloutInterval(t *testing.T) {
	interval := func(d time.Duration) func(*Input) { return func(i *Input) { i.MinRolloutInterval = d } }

	t.Run("a second rollout waits for the interval, then rolls the latest data once", func(t *testing.T) {
		w := newStorm(t, interval(time.Minute))
		if p := w.at(0, "cm2"); !p.Reloads() || p.Spaced {
			t.Fatalf("first change: reloads %v, spaced %v", p.Reloads(), p.Spaced)
		}
		p := w.at(10*time.Second, "cm3")
		if p.Reloads() || !p.Spaced || p.Wait != 50*time.Second {
			t.Fatalf("second change: reloads %v, spaced %v, wait %v: want 50s", p.Reloads(), p.Spaced, p.Wait)
		}
		if n, ok := p.Notice(reason.SettleWindow); !ok || !strings.Contains(n.Message, "wait for the minimum rollout interval of 1m0s, set by --min-rollout-interval") {
			t.Errorf("notices %+v, want the wait for the minimum rollout interval told", p.Notices)
		}
		if p = w.at(30*time.Second, "cm4"); p.Reloads() || p.Wait != 30*time.Second {
			t.Fatalf("third change: reloads %v, wait %v", p.Reloads(), p.Wait)
		}
		if p = w.at(time.Minute, "cm4"); !p.Reloads() || p.Spaced {
			t.Fatalf("after the interval: reloads %v, spaced %v", p.Reloads(), p.Spaced)
		}
		w.wantRolled("cm2", "cm4")
		if p = w.at(2*time.Minute+time.Second, "cm4"); !p.Storm.IsZero() {
			t.Errorf("storm state %+v kept after the interval, want none", p.Storm)
		}
	})

	for _, tc := range []struct {
		name, value string
		wait        time.Duration
		warns       bool
	}{
		{"the annotation overrides the flag", "2m", 110 * time.Second, false},
		{"an annotation of 0 turns it off", "0", 0, false},
		{"an invalid annotation warns and uses the flag", "soon", 50 * time.Second, true},
		{"a negative annotation warns and uses the flag", "-1m", 50 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newStorm(t, interval(time.Minute), annotate(keys.MinRolloutInterval, tc.value))
			w.at(0, "cm2")
			p := w.at(10*time.Second, "cm3")
			if p.Wait != tc.wait || p.Reloads() != (tc.wait == 0) {
				t.Errorf("wait %v, reloads %v: want wait %v", p.Wait, p.Reloads(), tc.wait)
			}
			warned := len(p.Warnings) == 1 && strings.Contains(p.Warnings[0], keys.MinRolloutInterval)
			if warned != tc.warns || (!tc.warns && len(p.Warnings) > 0) {
				t.Errorf("warnings %q, want a warning naming the annotation: %v", p.Warnings, tc.warns)
			}
		})
	}

	t.Run("a rollout that was not written does not count", func(t *testing.T) {
		w := newStorm(t, interval(time.Minute))
		p := For(func() Input { i := w.in; digestOf(cmApp, "cm2")(&i); i.Now = now; return i }())
		if !p.Reloads() || !p.Storm.Rolled.IsZero() {
			t.Fatalf("reloads %v, rolled %v: the plan itself must not record the rollout", p.Reloads(), p.Storm.Rolled)
		}
	})
}
