package plan

import (
	"strings"
	"testing"
	"time"
)

// deferrer runs plans one after another as the reconciler does: it keeps
// the memory through Planned and Wrote, applies each write to the
// workload, and records the rollouts and the deferrals reported.
type deferrer struct {
	t        *testing.T
	in       Input
	rolled   []string // the digests of "app" each rollout carried
	reported int      // deferrals reported (Deferred.Began)
}

func newDeferrer(t *testing.T, opts ...func(*Input)) *deferrer {
	return &deferrer{t: t, in: in(append([]func(*Input){both}, opts...)...)}
}

func reloadWindow(v string) func(*Input) { return annotate(keys.ReloadWindow, v) }

// at plans a reconcile at instant ts with "app" at digest sum.
func (d *deferrer) at(ts string, sum string) Plan {
	d.t.Helper()
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		d.t.Fatal(err)
	}
	d.in.Now = t
	digestOf(cmApp, sum)(&d.in)
	p := For(d.in)
	d.in.Memory = d.in.Planned(p)
	if p.Deferred != nil {
		if p.Reloads() {
			d.t.Fatalf("at %s: a deferred plan rolls", ts)
		}
		if p.Deferred.Began {
			d.reported++
		}
	}
	if p.Update.Template != nil {
		d.in.Workload.Template = p.Update.Template
	}
	for k, v := range p.Update.Annotations {
		if v == nil {
			delete(d.in.Workload.Annotations, k)
		} else {
			d.in.Workload.Annotations[k] = *v
		}
	}
	d.in.Memory = d.in.Wrote(p, Write{Instant: true}, t)
	if p.Reloads() {
		got, _ := envOf(p, cmApp)
		d.rolled = append(d.rolled, got)
	}
	return p
}

func (d *deferrer) want(rolled []string, reported int) {
	d.t.Helper()
	if strings.Join(d.rolled, ",") != strings.Join(rolled, ",") {
		d.t.Errorf("rolled %q, want %q", d.rolled, rolled)
	}
	if d.reported != reported {
		d.t.Errorf("reported %d deferrals, want %d", d.reported, reported)
	}
}

func wantDeferred(t *testing.T, p Plan, next string, requeue time.Duration) {
	t.Helper()
	if p.Deferred == nil {
		t.Fatalf("plan not deferred: changes %v, rolls %v", changed(p), p.Reloads())
	}
	if got := p.Deferred.Next.UTC().Format(time.RFC3339); next != "" && got != next {
		t.Errorf("next opening %s, want %s", got, next)
	}
	if p.Requeue != requeue {
		t.Errorf("requeue %s, want %s", p.Requeue, requeue)
	}
}

func TestReloadWindowDefers(t *testing.T) {
	// now is Monday 2026-11-23 12:00 UTC.
	tests := []struct {
		name    string
		opts    []func(*Input)
		at      string
		next    string // "" when the plan rolls
		requeue time.Duration
	}{
		{name: "no window rolls", at: "2026-11-23T12:00:00Z"},
		{name: "always rolls", opts: []func(*Input){reloadWindow("always")}, at: "2026-11-23T12:00:00Z"},
		{name: "inside the window", opts: []func(*Input){reloadWindow("Mon 11:00-13:00 UTC")}, at: "2026-11-23T12:00:00Z"},
		{name: "at the opening edge", opts: []func(*Input){reloadWindow("Mon 12:00-13:00 UTC")}, at: "2026-11-23T12:00:00Z"},
		{name: "at the closing edge", opts: []func(*Input){reloadWindow("Mon-Fri 10:00-12:00 UTC")}, at: "2026-11-23T12:00:00Z",
			next: "2026-11-24T10:00:00Z", requeue: 22 * time.Hour},
		{name: "outside: across midnight", opts: []func(*Input){reloadWindow("22:00-02:00 UTC")}, at: "2026-11-23T12:00:00Z",
			next: "2026-11-23T22:00:00Z", requeue: 10 * time.Hour},
		{name: "several windows: the nearest", opts: []func(*Input){reloadWindow("Tue 01:00-02:00 UTC; Mon 18:00-19:00 Asia/Tokyo; Mon 15:00-16:00 UTC")},
			at: "2026-11-23T12:00:00Z", next: "2026-11-23T15:00:00Z", requeue: 3 * time.Hour},
		{name: "spring forward: the skipped hour opens at the jump", opts: []func(*Input){reloadWindow("02:30-04:00 Europe/Berlin")},
			at: "2026-03-29T00:00:00Z", next: "2026-03-29T01:00:00Z", requeue: time.Hour},
		{name: "fall back: the first 02:30", opts: []func(*Input){reloadWindow("02:30-04:00 Europe/Berlin")},
			at: "2026-10-25T00:00:00Z", next: "2026-10-25T00:30:00Z", requeue: 30 * time.Minute},
		{name: "from the flag", opts: []func(*Input){func(i *Input) { i.ReloadWindow = "Tue 00:00-01:00 UTC" }},
			at: "2026-11-23T12:00:00Z", next: "2026-11-24T00:00:00Z", requeue: 12 * time.Hour},
		{name: "from the Namespace", opts: []func(*Input){func(i *Input) {
			i.Workload.NamespaceAnnotations = map[string]string{keys.ReloadWindow: "Tue 00:00-01:00 UTC"}
		}}, at: "2026-11-23T12:00:00Z", next: "2026-11-24T00:00:00Z", requeue: 12 * time.Hour},
		{name: "an empty workload annotation opts out of its Namespace's window", opts: []func(*Input){reloadWindow(""), func(i *Input) {
			i.Workload.NamespaceAnnotations = map[string]string{keys.ReloadWindow: "Tue 00:00-01:00 UTC"}
		}}, at: "2026-11-23T12:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeferrer(t, tt.opts...)
			p := d.at(tt.at, "cm2")
			if tt.next == "" {
				if p.Deferred != nil || !p.Reloads() {
					t.Fatalf("plan deferred %+v, rolls %v; want a rollout", p.Deferred, p.Reloads())
				}
				return
			}
			wantDeferred(t, p, tt.next, tt.requeue)
			if rec := recordOf(t, p); rec != nil && rec["ConfigMap/app"] != "cm1" {
				t.Errorf("a deferred plan records %q for the changed config, want the applied cm1", rec["ConfigMap/app"])
			}
			// At the opening it rolls, once, with the data then.
			if p := d.at(tt.next, "cm2"); !p.Reloads() || p.Deferred != nil {
				t.Errorf("at the opening: rolls %v, deferred %+v", p.Reloads(), p.Deferred)
			}
			d.want([]string{"cm2"}, 1)
		})
	}
}

func TestReloadWindowChangeSets(t *testing.T) {
	d := newDeferrer(t, reloadWindow("Mon-Fri 02:00-04:00 Europe/Berlin"))
	// Monday 12:00 UTC: deferred to Tuesday 02:00 CET = 01:00 UTC.
	wantDeferred(t, d.at("2026-11-23T12:00:00Z", "cm2"), "2026-11-24T01:00:00Z", 13*time.Hour)
	// a requeue of the same change set is not reported again
	if p := d.at("2026-11-23T13:00:00Z", "cm2"); p.Deferred == nil || p.Deferred.Began {
		t.Errorf("requeue: deferred %+v, want deferred and not reported again", p.Deferred)
	}
	// a second change: reported, still one change set when the window opens
	d.at("2026-11-23T14:00:00Z", "cm3")
	if d.in.Deferred == "" {
		t.Error("memory does not keep the deferred change set")
	}
	if m := d.in.LeftScope(); m.Deferred != "" {
		t.Errorf("a workload out of scope stays deferred: %q", m.Deferred)
	}
	d.at("2026-11-24T01:00:00Z", "cm3")
	d.want([]string{"cm3"}, 2)
	if d.in.Deferred != "" {
		t.Errorf("memory keeps %q after the rollout", d.in.Deferred)
	}
	// back to the applied data during a deferral: nothing to roll, nothing deferred
	d.at("2026-11-24T12:00:00Z", "cm4")
	if p := d.at("2026-11-24T13:00:00Z", "cm3"); p.Deferred != nil || p.Reloads() || d.in.Deferred != "" {
		t.Errorf("configs back to what is applied: deferred %+v, rolls %v, memory %q", p.Deferred, p.Reloads(), d.in.Deferred)
	}
	d.want([]string{"cm3"}, 3)
}

func TestReloadWindowRestart(t *testing.T) {
	d := newDeferrer(t, reloadWindow("22:00-02:00 UTC"))
	d.at("2026-11-23T12:00:00Z", "cm2")
	// A restart (or a new leader) forgets the memory: the applied record
	// and the digests still say there is a change, so it is deferred
	// again, reported again, and rolls nothing early.
	d.in.Memory = Memory{}
	p := d.at("2026-11-23T12:00:01Z", "cm2")
	wantDeferred(t, p, "2026-11-23T22:00:00Z", 10*time.Hour-time.Second)
	d.at("2026-11-23T21:59:59Z", "cm2")
	d.want(nil, 2)
	d.at("2026-11-23T22:00:00Z", "cm2")
	d.at("2026-11-23T22:00:01Z", "cm2")
	d.want([]string{"cm2"}, 2)
}

func TestReloadWindowClosesMidWave(t *testing.T) {
	d := newDeferrer(t, reloadWindow("Mon 10:00-12:00 UTC"))
	// In line for a rollout slot when the window closes: deferred, and it says so.
	d.in.Turn = Turn{Seen: now.Add(-time.Minute), Asked: now.Add(-time.Second)}
	p := d.at("2026-11-23T12:00:00Z", "cm2")
	wantDeferred(t, p, "2026-11-30T10:00:00Z", 7*24*time.Hour-2*time.Hour)
	if !p.Deferred.Closed || !p.Deferred.Began {
		t.Errorf("deferred %+v, want Closed and Began", p.Deferred)
	}
	if d.in.Turn.Waiting() && p.Writes() {
		t.Error("a deferred write keeps its place in line")
	}
}

func TestReloadWindowInvalid(t *testing.T) {
	d := newDeferrer(t, reloadWindow("Mon-Fry 02:00-04:00"))
	p := d.at("2026-11-23T12:00:00Z", "cm2")
	wantDeferred(t, p, "", invalidWindowPoll)
	if !p.Deferred.Next.IsZero() || p.Deferred.Invalid == "" {
		t.Errorf("deferred %+v, want no next opening and why", p.Deferred)
	}
	want := `annotation "ripple.dev/reload-window" on the workload: "Mon-Fry 02:00-04:00": at character 5 (window 1)`
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], want) {
		t.Errorf("warnings %q, want one starting %q", p.Warnings, want)
	}
	// once per change set
	if p := d.at("2026-11-23T12:05:00Z", "cm2"); len(p.Warnings) != 0 || p.Deferred == nil {
		t.Errorf("requeue: warnings %q, deferred %+v", p.Warnings, p.Deferred)
	}
	// fixed: rolls at once
	d.in.Workload.Annotations[keys.ReloadWindow] = "Mon-Fri 00:00-24:00 UTC"
	d.at("2026-11-23T12:10:00Z", "cm2")
	d.want([]string{"cm2"}, 1)
}

func TestReloadWindowComposes(t *testing.T) {
	// dry-run: deferred while closed, WouldReload once open
	d := newDeferrer(t, reloadWindow("Tue 00:00-01:00 UTC"), func(i *Input) { i.DryRun = true })
	if p := d.at("2026-11-23T12:00:00Z", "cm2"); p.Deferred == nil || p.WouldReload {
		t.Errorf("dry-run outside the window: deferred %+v, would reload %v", p.Deferred, p.WouldReload)
	}
	if p := d.at("2026-11-24T00:00:00Z", "cm2"); p.Deferred != nil || !p.WouldReload || p.Reloads() {
		t.Errorf("dry-run in the window: deferred %+v, would reload %v, rolls %v", p.Deferred, p.WouldReload, p.Reloads())
	}
	// the settle window comes first: a deferral starts once it has closed
	d = newDeferrer(t, reloadWindow("Tue 00:00-01:00 UTC"), func(i *Input) { i.SettleWindow = 10 * time.Second })
	if p := d.at("2026-11-23T12:00:00Z", "cm2"); p.Deferred != nil || p.Wait != 10*time.Second {
		t.Errorf("settling: deferred %+v, wait %s", p.Deferred, p.Wait)
	}
	wantDeferred(t, d.at("2026-11-23T12:00:10Z", "cm2"), "2026-11-24T00:00:00Z", 12*time.Hour-10*time.Second)
}
