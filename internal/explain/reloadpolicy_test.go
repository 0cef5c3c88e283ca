package explain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/standing"
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
	// The verdict is the ReloadPending Event's message.
	want := `Reload pending approval (reload policy manual, from the workload): changes in ConfigMap "app" ` + current[:digestLen] +
		", waiting since 2026-01-02T03:04:05Z; approve with `ripple approve deployment/web -n shop`"
	if r.State != standing.Waiting || r.Reason != "ReloadPending" || r.Verdict != want {
		t.Errorf("%s (%s): %s\nwant the verdict %s", r.State, r.Reason, r.Verdict, want)
	}
	rp := r.ReloadPolicy
	if rp == nil || rp.Value != "manual" || rp.From != "workload" || rp.Pending == nil || rp.Pending.Since == nil ||
		!rp.Pending.Since.Equal(written) || len(rp.Pending.Configs) != 1 || rp.Pending.Configs[0].Digest != current[:digestLen] ||
		rp.Pending.Approve != "ripple approve deployment/web -n shop" {
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
	if n.State != standing.NotifyOnly || n.Reason != "WouldReload" || n.ReloadPolicy.Pending != nil ||
		n.Verdict != `Would reload for changes in ConfigMap "app" (reload policy notify)` {
		t.Errorf("notify: %s (%s): %s", n.State, n.Reason, n.Verdict)
	}
	a := Build(facts(t, meta("auto"), old, current, written, defaults(t)))
	if l := (List{Items: []Report{a, r, n}}).Awaiting(); len(l.Items) != 1 || l.Items[0].State != standing.Waiting {
		t.Errorf("--pending lists %+v, want the manual workload only", l.Items)
	}
}

// published is what a controller started with args publishes in its
// reloader-meta-info, as explain reads it back.
func published(t *testing.T, args ...string) metainfo.Info {
	t.Helper()
	o := config.NewOptions()
	o.ReadEnv(func(k string) string { return map[string]string{"RELOADER_NAMESPACE": "ripple"}[k] })
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := config.Parse(fs, args); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg.MetaInfo.Options)
	if err != nil {
		t.Fatal(err)
	}
	meta := metainfo.Info{Origin: "ConfigMap ripple/reloader-meta-info"}
	if err := json.Unmarshal(b, &meta.Options); err != nil {
		t.Fatal(err)
	}
	return meta
}

// The controller's cluster-wide reload policy and restart method reach
// explain and approve through the published settings: a workload without
// its own reload-policy annotation waits for an approval, as the
// controller makes it wait, and --pending lists it.
func TestPublishedReloadPolicyAndRestartMethod(t *testing.T) {
	fs := pflag.NewFlagSet("explain", pflag.ContinueOnError)
	s, err := metainfo.BindFlags(fs).Resolve(published(t, "--reload-policy=manual", "--restart-method=evict"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Plan.ReloadPolicy != "manual" || s.Config.RestartMethod != "evict" {
		t.Errorf("reload policy %q, restart method %q; want the controller's manual and evict", s.Plan.ReloadPolicy, s.Config.RestartMethod)
	}
	for flag, want := range map[string]string{
		"reload-policy":  "--reload-policy=manual (from ConfigMap ripple/reloader-meta-info)",
		"restart-method": "--restart-method=evict (from ConfigMap ripple/reloader-meta-info)",
	} {
		if got := s.Flag(flag); got != want {
			t.Errorf("setting %s = %q, want %q", flag, got, want)
		}
	}
	written := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	meta := map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "1s"}
	r := Build(facts(t, meta, old, current, written, s))
	if r.State != standing.Waiting || r.ReloadPolicy.From != "flag" {
		t.Errorf("%s (%s): %s; want Waiting (ReloadPending) from the flag", r.State, r.Reason, r.Verdict)
	}
	if l := (List{Items: []Report{r}}).Awaiting(); len(l.Items) != 1 {
		t.Errorf("--pending lists %d workloads, want the waiting one", len(l.Items))
	}
}
