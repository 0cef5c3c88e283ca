package plan

import (
	"fmt"
	"testing"
	"time"
)

// A change set waiting for its reload window, then a pod template changed
// by someone else: the template change started pods that read the new
// data, so the plan records the change as applied by it (TemplateApplied,
// no rollout) and the deferral ends; nothing rolls at the opening
// (docs/change-policies.md).
func TestTemplateChangedWhileDeferred(t *testing.T) {
	h := (now.UTC().Hour() + 12) % 24
	closed := annotate(keys.ReloadWindow, fmt.Sprintf("%02d:00-%02d:30 UTC", h, h))
	base := []func(*Input){templateRolls, both, digestOf(cmApp, "cm2"), envVar(cmApp, "cm1"), closed,
		func(i *Input) { i.SettleWindow = time.Second }}
	first := in(base...)
	first.Memory = Memory{}.Notice(now.Add(-time.Minute))
	p := For(first)
	if p.Deferred == nil || p.Reloads() {
		t.Fatalf("deferred %+v, reloads %v: want the change deferred", p.Deferred, p.Reloads())
	}
	m := first.Planned(p)

	again := in(append(base, newImage)...)
	again.Memory = m
	p = For(again)
	if p.Deferred != nil || p.Reloads() || len(p.Changes) != 0 {
		t.Fatalf("deferred %+v, reloads %v, changes %v: the template change applied the data", p.Deferred, p.Reloads(), changed(p))
	}
	if got := states(p)[cmApp]; got != TemplateApplied || len(p.WithTemplate) != 1 {
		t.Errorf("state %s, with template %d: want TemplateApplied, recorded once", got, len(p.WithTemplate))
	}
	if a := p.Update.Annotations[keys.AppliedAlias]; a == nil {
		t.Error("no applied alias written: the next plan would defer the change again")
	}
	if m = again.Planned(p).Wrote(p, Write{}, now); m.Deferred != "" || m.Pending != (Pending{}) {
		t.Errorf("memory deferred %q, pending %+v: want the deferral over", m.Deferred, m.Pending)
	}
}

// A change set waiting for an approval (manual), then a pod template
// changed by someone else: the change set had settled when it began to
// wait, so the rule (which orders a template change within a change set's
// settle schedule) does not apply. The change keeps waiting, and its
// approval rolls the workload, although the template change's pods may
// already read the new data (docs/change-policies.md).
func TestTemplateChangedWhileAwaitingApproval(t *testing.T) {
	base := []func(*Input){templateRolls, manual, both, digestOf(cmApp, "cm2"), envVar(cmApp, "cm1"),
		func(i *Input) { i.SettleWindow = time.Second }}
	first := in(base...)
	first.Memory = Memory{}.Notice(now.Add(-time.Minute))
	p := For(first)
	if p.Awaiting == nil || p.Reloads() {
		t.Fatalf("awaiting %v, reloads %v: want the change waiting for approval", p.Awaiting, p.Reloads())
	}
	m := first.Planned(p)

	again := in(append(base, newImage)...)
	again.Memory = m
	p = For(again)
	if p.Awaiting == nil || p.Awaiting.Began || p.Reloads() || len(p.WithTemplate) != 0 {
		t.Fatalf("awaiting %+v, reloads %v, with template %d: want the change still waiting, reported once",
			p.Awaiting, p.Reloads(), len(p.WithTemplate))
	}
	if !p.Template.Changed.Equal(now) {
		t.Errorf("template %+v: want the change seen now", p.Template)
	}
	m = again.Planned(p)

	approved := in(append(base, newImage, approve(Approved{Config: "ConfigMap/app", Digest: "cm2"}))...)
	approved.Memory = m
	if p = For(approved); !p.Reloads() || len(p.WithTemplate) != 0 {
		t.Errorf("reloads %v, with template %d: want the approval to roll the change", p.Reloads(), len(p.WithTemplate))
	}
}
