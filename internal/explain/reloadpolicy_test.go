package explain

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A manual workload's change waits for an approval: the report says so,
// with the configs, their digests, since when and how to approve; the
// notify policy would reload; --pending keeps only what waits.
func TestBuildReloadPolicy(t *testing.T) {
	written := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	meta := func(policy string) map[string]string {
		return map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "1s", "ripple.dev/reload-policy": policy}
	}
	r := Build(facts(t, meta("manual"), old, current, written, defaults(t)))
	if r.State != PendingApproval || r.Reason != "PendingApproval" || !strings.Contains(r.Verdict, `ConfigMap "app" `+current[:digestLen]) ||
		!strings.Contains(r.Verdict, "ripple approve deployment/web -n shop") {
		t.Errorf("%s (%s): %s", r.State, r.Reason, r.Verdict)
	}
	rp := r.ReloadPolicy
	if rp == nil || rp.Value != "manual" || rp.From != "workload" || rp.Pending == nil || rp.Pending.Since == nil ||
		!rp.Pending.Since.Equal(written) || len(rp.Pending.Configs) != 1 || rp.Pending.Configs[0].Digest != current[:digestLen] {
		t.Fatalf("reload policy %+v", rp)
	}
	var b bytes.Buffer
	if err := Print(&b, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Policy:    manual (reload policy, from the workload)") ||
		!strings.Contains(b.String(), "Pending:   approval of ConfigMap/app "+current[:digestLen]+", since 2026-01-02T03:04:05Z") {
		t.Errorf("table:\n%s", b.String())
	}

	n := Build(facts(t, meta("notify"), old, current, written, defaults(t)))
	if n.State != WouldReload || n.Reason != "NotifyPolicy" || n.ReloadPolicy.Pending != nil {
		t.Errorf("notify: %s (%s): %s", n.State, n.Reason, n.Verdict)
	}
	a := Build(facts(t, meta("auto"), old, current, written, defaults(t)))
	if l := (List{Items: []Report{a, r, n}}).Awaiting(); len(l.Items) != 1 || l.Items[0].State != PendingApproval {
		t.Errorf("--pending lists %+v, want the manual workload only", l.Items)
	}
}
