package config

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/digest"
)

// parse runs args through the real flag set, with env as the environment.
func parse(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	o := NewOptions()
	o.ReadEnv(func(k string) string { return env[k] })
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := Parse(fs, args); err != nil {
		return Config{}, err
	}
	return o.Config()
}

func TestDefaults(t *testing.T) {
	cfg, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Strategy.Name() != "env-vars" || cfg.SettleWindow.String() != "1s" || cfg.KubeAPIQPS != 20 || cfg.KubeAPIBurst != 30 {
		t.Errorf("defaults: strategy %s, settle %s, qps %v, burst %d", cfg.Strategy.Name(), cfg.SettleWindow, cfg.KubeAPIQPS, cfg.KubeAPIBurst)
	}
	if len(cfg.Kinds) != 2 || len(cfg.Namespaces) != 0 || cfg.NamespaceSelector != nil || cfg.ResourceSelector != nil {
		t.Errorf("defaults: kinds %v, namespaces %v, selectors %v %v", cfg.Kinds, cfg.Namespaces, cfg.NamespaceSelector, cfg.ResourceSelector)
	}
	if cfg.Keys.Auto != "reloader.stakater.com/auto" || cfg.Keys.SettleWindow != "ripple.dev/settle-window" {
		t.Errorf("keys: %+v", cfg.Keys)
	}
}

func TestScope(t *testing.T) {
	tests := map[string]struct {
		env        map[string]string
		args       []string
		namespaces []string
		ignored    []string
		selector   string
		warned     bool
	}{
		"global":                           {},
		"scoped":                           {args: []string{"--namespaces=a,b"}, namespaces: []string{"a", "b"}},
		"single from KUBERNETES_NAMESPACE": {env: map[string]string{"KUBERNETES_NAMESPACE": "team"}, namespaces: []string{"team"}},
		"--namespaces beats the env var":   {env: map[string]string{"KUBERNETES_NAMESPACE": "team"}, args: []string{"--namespaces=a"}, namespaces: []string{"a"}},
		"ignore and selector in global mode": {
			args:    []string{"--namespaces-to-ignore=kube-system, other", "--namespace-selector=team:a"},
			ignored: []string{"kube-system", "other"}, selector: "team=a",
		},
		"ignore and selector are ignored when scoped": {
			args:       []string{"--namespaces=a", "--namespaces-to-ignore=b", "--namespace-selector=team=a"},
			namespaces: []string{"a"}, warned: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := parse(t, tc.env, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(cfg.Namespaces, ",") != strings.Join(tc.namespaces, ",") {
				t.Errorf("namespaces %v, want %v", cfg.Namespaces, tc.namespaces)
			}
			if strings.Join(cfg.NamespacesToIgnore, ",") != strings.Join(tc.ignored, ",") {
				t.Errorf("ignored %v, want %v", cfg.NamespacesToIgnore, tc.ignored)
			}
			got := ""
			if cfg.NamespaceSelector != nil {
				got = cfg.NamespaceSelector.String()
			}
			if got != tc.selector {
				t.Errorf("selector %q, want %q", got, tc.selector)
			}
			if (len(cfg.Warnings) > 0) != tc.warned {
				t.Errorf("warnings %v, want some: %v", cfg.Warnings, tc.warned)
			}
		})
	}
}

func TestParseSelector(t *testing.T) {
	tests := map[string]struct {
		items []string
		want  string
	}{
		"none":                 {nil, ""},
		"equality":             {[]string{"a=b"}, "a=b"},
		"legacy colon":         {[]string{"a:b"}, "a=b"},
		"legacy colon, extra":  {[]string{"a:b:c"}, "a=b"},
		"legacy exists":        {[]string{"a:*"}, "a"},
		"legacy equals star":   {[]string{"a=*"}, "a"},
		"several":              {[]string{"a=b", "c:*"}, "a=b,c"},
		"set split by the CSV": {[]string{"env in (x", "y)"}, "env in (x,y)"},
		"quoted by a chart":    {[]string{`"env notin (x,y)"`}, "env notin (x,y)"},
		"mixed in one item":    {[]string{`env in (a,b),team:x`}, "env in (a,b),team=x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sel, err := ParseSelector(tc.items)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if sel != nil {
				got = sel.String()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Reloader's string booleans keep working, and so do bare flags. (Its bug
// 12, only the exact string "true" counts and anything else is silently
// false, is kept for those three flags so a Reloader user's flags mean
// the same, but no longer silently: TestReloaderStringBooleans.)
func TestBooleanFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--reload-on-create=true", "--reload-on-delete=true", "--is-Argo-Rollouts=true", "--enable-csi-integration=true", "--sync-after-restart=true", "--auto-reload-all=true"},
		{"--reload-on-create", "--reload-on-delete", "--is-Argo-Rollouts", "--enable-csi-integration", "--sync-after-restart", "--auto-reload-all"},
		{"--reload-on-create=true", "--reload-on-delete", "--is-Argo-Rollouts", "--enable-csi-integration=t", "--sync-after-restart=True", "--auto-reload-all=1"},
	} {
		cfg, err := parse(t, nil, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !cfg.ReloadOnCreate || !cfg.ReloadOnDelete || !cfg.SyncAfterRestart || !cfg.AutoReloadAll {
			t.Errorf("%v: %+v", args, cfg)
		}
	}
	for _, args := range [][]string{
		// Reloader's string-valued booleans as two arguments, as
		// Reloader users may write them.
		{"--reload-on-create", "true", "--reload-on-delete", "true", "--is-Argo-Rollouts", "true", "--sync-after-restart", "--auto-reload-all", "1"},
		{"--is-Argo-Rollouts", "true", "--reload-on-create=true", "--reload-on-delete", "--sync-after-restart", "true", "--auto-reload-all"},
	} {
		cfg, err := parse(t, nil, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !cfg.ReloadOnCreate || !cfg.ReloadOnDelete || !cfg.ArgoRollouts || !cfg.SyncAfterRestart || !cfg.AutoReloadAll || len(cfg.Warnings) > 0 {
			t.Errorf("%v: create %v, delete %v, argo %v, sync %v, all %v, warnings %q; want all true, no warning", args,
				cfg.ReloadOnCreate, cfg.ReloadOnDelete, cfg.ArgoRollouts, cfg.SyncAfterRestart, cfg.AutoReloadAll, cfg.Warnings)
		}
	}
}

// TestReloaderStringBooleans: Reloader turns its three string-valued
// booleans on only for the exact value "true"; anything else is false
// there, silently. Ripple reads them the same and warns.
func TestReloaderStringBooleans(t *testing.T) {
	t.Parallel()
	cfg, err := parse(t, nil, "--reload-on-create", "false", "--is-Argo-Rollouts", "True", "--reload-on-delete=yes", "--enable-csi-integration=TRUE")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ReloadOnCreate || cfg.ArgoRollouts || cfg.ReloadOnDelete || !cfg.CSI {
		t.Errorf("create %v, argo %v, delete %v, csi %v; want all false, as Reloader, and csi true", cfg.ReloadOnCreate, cfg.ArgoRollouts, cfg.ReloadOnDelete, cfg.CSI)
	}
	want := []string{
		`--reload-on-delete="yes" is read as false, as Reloader reads every value but the exact string true; write --reload-on-delete=true to turn it on`,
		`--is-Argo-Rollouts="True" is read as false, as Reloader reads every value but the exact string true; write --is-Argo-Rollouts=true to turn it on`,
	}
	if !slices.Equal(cfg.Warnings, want) {
		t.Errorf("warnings:\n%q\nwant\n%q", cfg.Warnings, want)
	}
	// Other boolean flags keep Go's reading and reject a non-boolean.
	if _, err := parse(t, nil, "--auto-reload-all=yes"); err == nil || !strings.Contains(err.Error(), "auto-reload-all") {
		t.Errorf("--auto-reload-all=yes: got %v, want an error naming the flag", err)
	}
}

// Reloader's bug 11: --ignored-workload-types was case-sensitive, never
// validated, and one bad entry disabled the whole list.
func TestIgnoredWorkloadTypes(t *testing.T) {
	cfg, err := parse(t, nil, "--ignored-workload-types=Jobs,CRONJOBS")
	if err != nil || !cfg.IgnoreJobs || !cfg.IgnoreCronJobs {
		t.Fatalf("got jobs=%v cronjobs=%v err=%v", cfg.IgnoreJobs, cfg.IgnoreCronJobs, err)
	}
	if _, err := parse(t, nil, "--ignored-workload-types=jobs,deployments"); err == nil || !strings.Contains(err.Error(), `--ignored-workload-types: "deployments"`) {
		t.Fatalf("got %v, want an error naming the flag and the bad value", err)
	}
}

// --enable-ha needs no $POD_NAME (Reloader does, though it only names the
// Lease holder, which Ripple names after its host): the Lease is in
// $POD_NAMESPACE, else the pod's namespace.
func TestEnableHAWithoutPodName(t *testing.T) {
	cfg, err := parse(t, map[string]string{"POD_NAMESPACE": "ops"}, "--enable-ha")
	if err != nil || !cfg.LeaderElection || cfg.LeaderElectionNamespace != "ops" {
		t.Fatalf("--enable-ha with $POD_NAMESPACE only: election %v in %q, %v; want it in ops", cfg.LeaderElection, cfg.LeaderElectionNamespace, err)
	}
	cfg, err = parse(t, map[string]string{"POD_NAME": "ripple-0", "POD_NAMESPACE": "ops"}, "--enable-ha", "--leader-election-namespace=locks")
	if err != nil || cfg.LeaderElectionNamespace != "locks" {
		t.Fatalf("--leader-election-namespace: %q, %v; want locks", cfg.LeaderElectionNamespace, err)
	}
}

// Ripple's own namespace, where it keeps the Job re-create records, is
// $POD_NAMESPACE, else the pod's, else "default"; a bad value is refused.
func TestOwnNamespace(t *testing.T) {
	cfg, err := parse(t, map[string]string{"POD_NAMESPACE": "ripple-system"})
	if err != nil || cfg.Namespace != "ripple-system" {
		t.Errorf("with $POD_NAMESPACE: namespace %q, error %v", cfg.Namespace, err)
	}
	want := "default"
	if b, err := os.ReadFile(InClusterNamespace); err == nil { // the tests run in a pod
		want = strings.TrimSpace(string(b))
	}
	if cfg, err := parse(t, nil); err != nil || cfg.Namespace != want {
		t.Errorf("without $POD_NAMESPACE: namespace %q, error %v; want %q", cfg.Namespace, err, want)
	}
	if _, err := parse(t, map[string]string{"POD_NAMESPACE": "Not_A_Namespace"}); err == nil || !strings.Contains(err.Error(), "$POD_NAMESPACE") {
		t.Errorf("a bad $POD_NAMESPACE: error %v, want one naming it", err)
	}
	if _, err := parse(t, nil, "--cache-sync-timeout=0s"); err == nil || !strings.Contains(err.Error(), "--cache-sync-timeout") {
		t.Errorf("--cache-sync-timeout=0s: error %v, want one naming it", err)
	}
}

func TestMaxConcurrentReconciles(t *testing.T) {
	if cfg, err := parse(t, nil); err != nil || cfg.MaxConcurrentReconciles != DefaultMaxConcurrentReconciles {
		t.Errorf("default: %d, error %v; want %d", cfg.MaxConcurrentReconciles, err, DefaultMaxConcurrentReconciles)
	}
	if cfg, err := parse(t, nil, "--max-concurrent-reconciles=32"); err != nil || cfg.MaxConcurrentReconciles != 32 {
		t.Errorf("--max-concurrent-reconciles=32: %d, error %v", cfg.MaxConcurrentReconciles, err)
	}
	for _, v := range []string{"0", "-1", "1001"} {
		if _, err := parse(t, nil, "--max-concurrent-reconciles="+v); err == nil || !strings.Contains(err.Error(), "--max-concurrent-reconciles") {
			t.Errorf("--max-concurrent-reconciles=%s: error %v, want one naming it", v, err)
		}
	}
}

// Only a boolean flag followed by a value joins it; `--` ends the flags.
func TestJoinBoolValues(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	o.BindFlags(fs)
	for _, c := range []struct{ in, want []string }{
		{[]string{"--enable-ha", "true"}, []string{"--enable-ha=true"}},
		{[]string{"--enable-ha", "explain"}, []string{"--enable-ha", "explain"}},
		{[]string{"--reload-on-create", "--namespaces=a"}, []string{"--reload-on-create", "--namespaces=a"}},
		{[]string{"--reload-on-create", "yes"}, []string{"--reload-on-create=yes"}},
		{[]string{"--namespaces", "true"}, []string{"--namespaces", "true"}},
		{[]string{"--reload-on-create=true", "false"}, []string{"--reload-on-create=true", "false"}},
		{[]string{"--", "--enable-ha", "true"}, []string{"--", "--enable-ha", "true"}},
		{[]string{"--reload-on-create"}, []string{"--reload-on-create"}},
	} {
		if got := JoinBoolValues(fs, c.in); !slices.Equal(got, c.want) {
			t.Errorf("JoinBoolValues(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The governance flags: the delete allow-list names namespaces, and a
// negative approval age is refused, each error naming its flag.
func TestGovernanceFlags(t *testing.T) {
	cfg, err := parse(t, nil, "--restart-delete-namespaces= shop ,batch", "--approval-max-age=0")
	if err != nil || !slices.Equal(cfg.DeleteNamespaces, []string{"shop", "batch"}) || cfg.ApprovalMaxAge != 0 {
		t.Fatalf("got %v, %v, %v; want [shop batch], no age bound", cfg.DeleteNamespaces, cfg.ApprovalMaxAge, err)
	}
	if cfg, _ := parse(t, nil); cfg.ApprovalMaxAge != DefaultApprovalMaxAge || cfg.DeleteNamespaces != nil {
		t.Errorf("defaults: %v, %v; want %v and no allow-list", cfg.ApprovalMaxAge, cfg.DeleteNamespaces, DefaultApprovalMaxAge)
	}
	for flag, want := range map[string]string{
		"--restart-delete-namespaces=Shop_1": `--restart-delete-namespaces: "Shop_1" is not a namespace name`,
		"--approval-max-age=-1h":             "--approval-max-age: -1h0m0s is negative",
	} {
		if _, err := parse(t, nil, flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", flag, err, want)
		}
	}
}

// --digest defaults to Reloader's sha1 and takes hmac-sha256; anything else
// is an error naming the flag.
func TestDigest(t *testing.T) {
	if cfg, err := parse(t, nil); err != nil || cfg.Digest != digest.SHA1 {
		t.Errorf("default: %q, error %v; want sha1", cfg.Digest, err)
	}
	if cfg, err := parse(t, nil, "--digest=hmac-sha256"); err != nil || cfg.Digest != digest.HMACSHA256 {
		t.Errorf("--digest=hmac-sha256: %q, error %v", cfg.Digest, err)
	}
	for _, v := range []string{"", "md5", "HMAC-SHA256"} {
		if _, err := parse(t, nil, "--digest="+v); err == nil || !strings.Contains(err.Error(), "--digest") {
			t.Errorf("--digest=%s: error %v, want one naming it", v, err)
		}
	}
}

// --canary-unkept holds a canaried change no canary can be kept for by
// default and rolls it with roll, as the planner's settings say; anything
// else is an error naming the flag.
func TestCanaryUnkept(t *testing.T) {
	for args, rolls := range map[string]bool{"": false, "--canary-unkept=hold": false, "--canary-unkept=roll": true} {
		var given []string
		if args != "" {
			given = []string{args}
		}
		cfg, err := parse(t, nil, given...)
		if err != nil || cfg.PlanSettings(time.Time{}).UnkeptRolls != rolls {
			t.Errorf("%q: rolls %v, error %v; want rolls %v", args, cfg.PlanSettings(time.Time{}).UnkeptRolls, err, rolls)
		}
	}
	for _, v := range []string{"", "Roll", "pass"} {
		if _, err := parse(t, nil, "--canary-unkept="+v); err == nil || !strings.Contains(err.Error(), "--canary-unkept") {
			t.Errorf("--canary-unkept=%s: error %v, want one naming it", v, err)
		}
	}
	// A default canary without ConfigRollouts would hold every change.
	if _, err := parse(t, nil, "--canary=1", "--config-rollouts=false"); err == nil || !strings.Contains(err.Error(), "--canary: needs --config-rollouts") {
		t.Errorf("--canary=1 --config-rollouts=false: error %v, want one naming --canary", err)
	}
	for _, args := range [][]string{{"--canary=1", "--config-rollouts=false", "--canary-unkept=roll"}, {"--canary=0", "--config-rollouts=false"}} {
		if _, err := parse(t, nil, args...); err != nil {
			t.Errorf("%q: %v, want it taken", args, err)
		}
	}
}
