package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

func approvedAs(a Approval) func(*Input) {
	b, _ := json.Marshal(a)
	return annotate(keys.Approval, string(b))
}

// An approval is bound to the data it approved (when it was written) and
// to a time.
func TestApprovalBinding(t *testing.T) {
	t1 := now.Add(-time.Hour) // the data the approval saw was written
	cm2 := func(written time.Time) []Approved {
		return []Approved{{Config: "ConfigMap/app", Digest: "cm2", Written: written}}
	}
	for _, tc := range []struct {
		name  string
		opts  []func(*Input)
		rolls bool
		why   string // in the ApprovalSuperseded notice when it does not roll
	}{
		{
			name:  "the approved data: rolls",
			opts:  []func(*Input){writtenAt(cmApp, t1), approvedAs(Approval{Changes: cm2(t1), By: "alice", At: t1.Add(time.Minute)})},
			rolls: true,
		},
		{
			// A→B approved, then →A and →B again: the same digest, written
			// after the approval saw it. Before the binding, it rolled.
			name: "A→B→A→B: the data written again after the approval is not approved by it",
			opts: []func(*Input){writtenAt(cmApp, t1.Add(30*time.Minute)), approvedAs(Approval{Changes: cm2(t1), By: "alice", At: t1.Add(time.Minute)})},
			why:  "written again after the approval",
		},
		{
			name:  "an approval without the data's time (today's format), data written before it: rolls",
			opts:  []func(*Input){writtenAt(cmApp, t1), approvedAs(Approval{Changes: cm2(time.Time{}), By: "alice", At: t1.Add(time.Minute)})},
			rolls: true,
		},
		{
			name: "an approval without the data's time, data written after it: stale",
			opts: []func(*Input){writtenAt(cmApp, t1.Add(30*time.Minute)), approvedAs(Approval{Changes: cm2(time.Time{}), By: "alice", At: t1.Add(time.Minute)})},
			why:  "written again after the approval",
		},
		{
			// A client may write managedFields: clearing the time the
			// approval saw made it match by digest alone. It fails closed.
			name: "the write time the approval saw is gone from the config: stale",
			opts: []func(*Input){approvedAs(Approval{Changes: cm2(t1), By: "alice", At: t1.Add(time.Minute)})},
			why:  "written again after the approval",
		},
		{
			name:  "no write time known, then or now (a SecretProviderClass): the digest and the approval's time decide",
			opts:  []func(*Input){approvedAs(Approval{Changes: cm2(time.Time{}), By: "alice", At: t1.Add(time.Minute)})},
			rolls: true,
		},
		{
			// The writer set the data's time a day ahead before the
			// approval, then wrote A and B again at a time before it.
			name: "the approval saw a write time ahead of its own: stale",
			opts: []func(*Input){writtenAt(cmApp, t1.Add(30*time.Minute)), approvedAs(Approval{Changes: cm2(t1.Add(24 * time.Hour)), By: "alice", At: t1.Add(time.Minute)})},
			why:  "written again after the approval",
		},
		{
			name: "bound to the resourceVersion it saw: rolls",
			opts: []func(*Input){writtenAt(cmApp, t1), versionOf(cmApp, "41"),
				approvedAs(Approval{Changes: []Approved{{Config: "ConfigMap/app", Digest: "cm2", Written: t1, Version: "41"}}, By: "alice", At: t1.Add(time.Minute)})},
			rolls: true,
		},
		{
			// A→B→A→B with the write times set back to the approved one's:
			// only the resourceVersion tells.
			name: "A→B→A→B with the write time moved back: another resourceVersion, stale",
			opts: []func(*Input){writtenAt(cmApp, t1), versionOf(cmApp, "57"),
				approvedAs(Approval{Changes: []Approved{{Config: "ConfigMap/app", Digest: "cm2", Written: t1, Version: "41"}}, By: "alice", At: t1.Add(time.Minute)})},
			why: "a later resourceVersion",
		},
		{
			name: "without a digest (approved without Ripple's key), the resourceVersion names the data: rolls",
			opts: []func(*Input){versionOf(cmApp, "41"),
				approvedAs(Approval{Changes: []Approved{{Config: "ConfigMap/app", Version: "41"}}, By: "alice", At: t1.Add(time.Minute)})},
			rolls: true,
		},
		{
			name: "without a digest or a resourceVersion: names nothing",
			opts: []func(*Input){approvedAs(Approval{Changes: []Approved{{Config: "ConfigMap/app"}}, By: "alice", At: t1.Add(time.Minute)})},
			why:  "nothing of it is pending",
		},
		{
			name: "older than --approval-max-age: expired",
			opts: []func(*Input){writtenAt(cmApp, t1.Add(-48*time.Hour)), approvedAs(Approval{Changes: cm2(t1.Add(-48 * time.Hour)), By: "alice", At: now.Add(-25 * time.Hour)})},
			why:  "more than 24h0m0s ago (--approval-max-age)",
		},
		{
			name: "--approval-max-age 0: no bound",
			opts: []func(*Input){writtenAt(cmApp, t1.Add(-48*time.Hour)), approvedAs(Approval{Changes: cm2(t1.Add(-48 * time.Hour)), By: "alice", At: now.Add(-25 * time.Hour)}),
				func(i *Input) { i.ApprovalMaxAge = 0 }},
			rolls: true,
		},
		{
			name: "no time: its age is unknown",
			opts: []func(*Input){approvedAs(Approval{Changes: cm2(time.Time{}), By: "alice"})},
			why:  `no "at" time`,
		},
		{
			name: "from the future",
			opts: []func(*Input){approvedAs(Approval{Changes: cm2(time.Time{}), By: "alice", At: now.Add(time.Hour)})},
			why:  "ahead of Ripple's clock",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]func(*Input){manual, both, digestOf(cmApp, "cm2"), func(i *Input) { i.ApprovalMaxAge = 24 * time.Hour }}, tc.opts...)
			p := For(in(opts...))
			if p.Reloads() != tc.rolls {
				t.Fatalf("reloads %v, want %v", p.Reloads(), tc.rolls)
			}
			if v, ok := p.Update.Annotations[keys.Approval]; !ok || v != nil {
				t.Error("the approval is not dropped")
			}
			if tc.rolls {
				return
			}
			if got := awaitingOf(p); !slices.Equal(got, []string{"ConfigMap/app=cm2"}) {
				t.Errorf("awaiting %v: want the change still waiting", got)
			}
			i := slices.IndexFunc(p.Notices, func(n Notice) bool { return n.Reason == reason.ApprovalSuperseded })
			if i < 0 || !strings.Contains(p.Notices[i].Message, tc.why) {
				t.Errorf("notices %+v: want ApprovalSuperseded saying %q", p.Notices, tc.why)
			}
		})
	}
}

func versionOf(ref refs.Ref, v string) func(*Input) {
	return func(i *Input) {
		for j := range i.Sources {
			if i.Sources[j].Ref == ref {
				i.Sources[j].Version = v
			}
		}
	}
}

// ripple approve records when the approved data was written and the
// config's resourceVersion, so that the plan can tell the approved data
// from the same data written again.
func TestApprovalOfRecordsTheDataTime(t *testing.T) {
	t1 := now.Add(-time.Hour)
	p := For(in(manual, both, digestOf(cmApp, "cm2"), writtenAt(cmApp, t1), versionOf(cmApp, "41")))
	if p.Awaiting == nil {
		t.Fatal("nothing waits")
	}
	a := ApprovalOf(*p.Awaiting, "alice", now, false)
	if len(a.Changes) != 1 || !a.Changes[0].Written.Equal(t1) || a.Changes[0].Digest != "cm2" || a.Changes[0].Version != "41" {
		t.Fatalf("approval %+v: want ConfigMap/app at cm2, written %v, resourceVersion 41", a, t1)
	}
	again := in(manual, both, digestOf(cmApp, "cm2"), writtenAt(cmApp, now.Add(time.Minute)), approvedAs(a))
	again.Now = now.Add(2 * time.Minute)
	if For(again).Reloads() {
		t.Error("the approval rolled data written after it")
	}
}

// Who approved is the approval's own word unless an admission policy
// checks it.
func TestApprovedByUnverified(t *testing.T) {
	for _, verified := range []bool{false, true} {
		b, _ := json.Marshal(ApprovalOf(Awaiting{Changes: []strategy.Change{{Ref: cmApp, Hash: "cm2"}}}, "bob", now, false))
		p := For(in(manual, both, digestOf(cmApp, "cm2"), annotate(keys.Approval, string(b)), func(i *Input) { i.ApprovalsVerified = verified }))
		n, ok := p.Written("env var", "", nil)
		if !ok {
			t.Fatal("no notice of the write")
		}
		want := "approved by bob (unverified)"
		if verified {
			want = "approved by bob)"
		}
		if !strings.Contains(n.Message, want) {
			t.Errorf("verified %v: %q, want %q", verified, n.Message, want)
		}
	}
}
