package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/config"
)

// Every invalid value fails at start with exit code 2 and one line that
// names the flag and what it accepts.
func TestInvalidValuesExit2(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown strategy":       {[]string{"--reload-strategy=rolling"}, `--reload-strategy: "rolling" is not a strategy; use env-vars or annotations`},
		"both resources":         {[]string{"--resources-to-ignore=configmaps,secrets"}, "--resources-to-ignore: cannot ignore both configmaps and secrets"},
		"unknown resource":       {[]string{"--resources-to-ignore=pods"}, `--resources-to-ignore: "pods" is not a resource; use configmaps or secrets`},
		"bad namespace selector": {[]string{"--namespace-selector=a in b"}, "--namespace-selector:"},
		"bad resource selector":  {[]string{"--resource-label-selector=!!"}, "--resource-label-selector:"},
		"bad duration":           {[]string{"--settle-window=soon"}, `invalid argument "soon" for "--settle-window" flag`},
		"negative duration":      {[]string{"--settle-window=-1s"}, "--settle-window: -1s is negative"},
		"bad workload type":      {[]string{"--ignored-workload-types=pods"}, `--ignored-workload-types: "pods" is not a workload type; use jobs, cronjobs or both`},
		"unknown log level":      {[]string{"--log-level=loud"}, `--log-level: "loud" is not a level; use trace, debug, info, warning, error, fatal or panic`},
		"unknown log format":     {[]string{"--log-format=xml"}, `--log-format: "xml" is not a format; use json or text`},
		"bad boolean":            {[]string{"--auto-reload-all=yes"}, `invalid argument "yes" for "--auto-reload-all" flag`},
		"unknown flag":           {[]string{"--reload-everything"}, "unknown flag: --reload-everything"},
		"bad namespace":          {[]string{"--namespaces=Team_A"}, `--namespaces: "Team_A" is not a namespace name`},
		// Reloader's string-valued booleans as two arguments: the value is
		// taken, so the next error is the strategy's.
		"two-argument booleans": {[]string{"--reload-on-create", "true", "--is-Argo-Rollouts", "True", "--reload-strategy=rolling"}, `--reload-strategy: "rolling" is not a strategy`},
		"value after a boolean": {[]string{"--enable-ha", "maybe"}, `unexpected argument "maybe" after --enable-ha: a boolean flag takes true or false, as --enable-ha=true or --enable-ha false`},
		"bad webhook":           {[]string{"--webhook-url=ftp://example.com/"}, "--webhook-url: must be an http or https URL"},
		"empty annotation":      {[]string{"--auto-annotation="}, "--auto-annotation: must not be empty"},
		"renew not below lease": {[]string{"--leader-elect", "--leader-election-namespace=ops", "--leader-election-renew-deadline=15s"}, "--leader-election-renew-deadline: 15s must be less than --leader-election-lease-duration 15s"},
		"fractional lease":      {[]string{"--leader-elect", "--leader-election-namespace=ops", "--leader-election-lease-duration=1500ms"}, "--leader-election-lease-duration: 1.5s must be a whole number of seconds"},
		"pprof on metrics port": {[]string{"--enable-pprof", "--pprof-addr=:9090"}, `--pprof-addr: ":9090" must be an address of its own`},
		"unknown command":       {[]string{"explain-everything"}, `unknown command "explain-everything"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), "ripple", tc.args, &stdout, &stderr); code != 2 {
				t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr %q does not contain %q", stderr.String(), tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), "ripple", []string{"version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "ripple ") {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
}

// `ripple --help` prints to stdout, as every command's --help: the
// commands, each one that run dispatches, and the controller's flags with
// their defaults.
func TestHelpListsCommandsAndFlagsWithDefaults(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--dry-run", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), "ripple", args, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
		for _, want := range []string{
			"ripple [flags]", "ripple explain <kind>/<name>", "ripple explain -f", "ripple explain --pending", "ripple history <kind>/<name>",
			"ripple approve <kind>/<name>", "ripple version", "ripple help",
			"--settle-window duration", `(default 1s)`, "--kube-api-qps", "(default 20)", "--reload-strategy", `(default "env-vars")`,
		} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%v lacks %q:\n%s", args, want, stdout.String())
			}
		}
	}
}

// A first word that is no command is an error, even before --help (which
// would otherwise print the controller's help as if it were the command's);
// lint, which other tools have, is `explain -f` here.
func TestUnknownCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lint"}, "ripple: there is no lint command: the lint is ripple explain -f <file|dir|->"},
		{[]string{"lint", "--help"}, "ripple: there is no lint command: the lint is ripple explain -f <file|dir|->"},
		{[]string{"lint", "-f", "app.yaml"}, "the lint is ripple explain -f"},
		{[]string{"explian", "deploy/web"}, `ripple: unknown command "explian"; commands: explain, plan, history, approve, resume, wait, undo, version, help`},
		{[]string{"--dry-run", "explain"}, `unexpected argument "explain" after --dry-run: a boolean flag takes true or false, as --dry-run=true or --dry-run false; commands (first, before any flag): explain`},
		{[]string{"--settle-window=2s", "explain"}, `unexpected argument "explain": the controller takes flags only; commands (first, before any flag): explain`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), "ripple", tc.args, &stdout, &stderr); code != 2 || stdout.Len() > 0 {
			t.Fatalf("%v: exit %d, want 2; stdout %q", tc.args, code, stdout.String())
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not contain %q", tc.args, stderr.String(), tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), "kubectl-ripple", []string{"lint"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "kubectl ripple: there is no lint command: the lint is kubectl ripple explain -f") {
		t.Errorf("kubectl-ripple lint: exit %d, stderr %q", code, stderr.String())
	}
}

// Installed as a kubectl plugin and run without arguments (`kubectl
// ripple`), the binary prints its commands and exits 0 instead of starting
// the controller.
func TestKubectlPluginWithoutArgumentsPrintsUsage(t *testing.T) {
	for _, prog := range []string{"kubectl-ripple", "kubectl-ripple.exe"} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), prog, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d; stderr: %s", prog, code, stderr.String())
		}
		for _, want := range []string{"kubectl ripple explain <kind>/<name>", "kubectl ripple version"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s: usage lacks %q:\n%s", prog, want, stdout.String())
			}
		}
		if strings.Contains(stdout.String(), "run the controller") {
			t.Errorf("%s: usage offers to run the controller, which the plugin never does:\n%s", prog, stdout.String())
		}
	}
}

// The kubectl plugin runs on the user's machine: given controller flags
// (`kubectl ripple --dry-run`) it refuses, exit 2, naming the commands,
// and starts no controller beside the one in the cluster; its --help is
// the commands, without the controller's flags. The same flags still run
// the controller as ripple (its --help lists them).
func TestKubectlPluginNeverRunsTheController(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, args := range [][]string{{"--dry-run"}, {"--dry-run", "--help"}, {"--namespaces=shop"}, {"-n", "shop", "explain", "deploy/web"}} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), "kubectl-ripple", args, &stdout, &stderr)
		want := "kubectl ripple: " + args[0] + " is not a command: the kubectl plugin never runs the controller"
		if code != 2 || stdout.Len() > 0 || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "commands: explain, plan, history, approve") {
			t.Errorf("kubectl-ripple %v: exit %d, stdout %q, stderr %q; want 2 and %q", args, code, stdout.String(), stderr.String(), want)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), "kubectl-ripple", args, &stdout, &stderr)
		if out := stdout.String(); code != 0 || !strings.Contains(out, "kubectl ripple explain <kind>/<name>") || strings.Contains(out, "--settle-window") || strings.Contains(out, "run the controller") {
			t.Errorf("kubectl-ripple %v: exit %d, stdout:\n%s", args, code, out)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), "ripple", []string{"--dry-run", "--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "ripple [flags]                    run the controller") {
		t.Errorf("ripple --dry-run --help: exit %d, stdout:\n%s", code, stdout.String())
	}
}

// Every command has --help, on stdout, exit 0.
func TestHelpOfEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"ripple explain <kind>/<name>", "ripple version", "ripple [flags]", "ripple history <kind>/<name>", "ripple approve <kind>/<name>"}},
		{[]string{"version", "--help"}, []string{"ripple version"}},
		{[]string{"history", "--help"}, []string{"ripple history <kind>/<name>", "-o, --output", "--kubeconfig", "--settle-window"}},
		{[]string{"approve", "--help"}, []string{"ripple approve <kind>/<name>", "--now", "--kubeconfig"}},
		{[]string{"explain", "--help"}, []string{
			"ripple explain <kind>/<name>", "--all", "-o, --output", "--ripple-namespace",
			"--kubeconfig", "--context", "-n, --namespace", "--namespace-selector", "--settle-window", "--dry-run",
		}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), "ripple", tc.args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d; stderr: %s", tc.args, code, stderr.String())
		}
		for _, want := range tc.want {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%v lacks %q:\n%s", tc.args, want, stdout.String())
			}
		}
	}
}

// Bad explain arguments exit 2, naming the argument or flag, before any
// connection to a cluster.
func TestExplainBadArgumentsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain"}, "name a workload as <kind>/<name>, or use --all"},
		{[]string{"explain", "pods/web"}, `argument "pods/web": unknown workload kind "pods"`},
		{[]string{"explain", "deployment/"}, `argument "deployment/": the workload name is empty`},
		{[]string{"explain", "a/b/c"}, `arguments "a/b/c": name one workload as <kind>/<name>`},
		{[]string{"explain", "deploy/web", "sts/db"}, `arguments "deploy/web sts/db": 2 workloads; name one workload per run`},
		{[]string{"explain", "deploy", "web", "db"}, `arguments "deploy web db": name one workload as <kind>/<name>`},
		// Ripple's settings are checked before the connection, so that the
		// flag at fault is named rather than a missing kubeconfig.
		{[]string{"explain", "deploy/web", "--reload-window=Sat. Sun 00:00-24:00"}, `--reload-window: "Sat. Sun 00:00-24:00": at character 1`},
		{[]string{"explain", "deploy/web", "--reload-policy=later"}, `--reload-policy: "later" is not a reload policy`},
		{[]string{"explain", "--all", "--namespaces=Team_A"}, `--namespaces: "Team_A" is not a namespace name`},
		{[]string{"explain", "--all", "deploy/web"}, `argument "deploy/web": --all explains every opted-in workload`},
		{[]string{"explain", "-A", "deploy/web"}, "--all-namespaces: only with --all"},
		{[]string{"explain", "--pending", "deploy/web"}, `argument "deploy/web": --pending lists every workload that waits and takes no workload`},
		{[]string{"explain", "deploy/web", "--pending", "-n", "shop"}, `argument "deploy/web": --pending lists every workload`},
		{[]string{"explain", "deploy/web", "-o", "wide"}, `--output: "wide" is not a format; use table, json, yaml`},
		{[]string{"explain", "deploy/web", "--settle-window=soon"}, `invalid argument "soon" for "--settle-window" flag`},
		{[]string{"version", "now"}, `unexpected argument "now"`},
	} {
		t.Setenv("KUBECONFIG", "/nonexistent")
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), "ripple", tc.args, &stdout, &stderr); code != 2 {
			t.Fatalf("%v: exit %d, want 2; stderr: %s", tc.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not contain %q", tc.args, stderr.String(), tc.want)
		}
	}
}

// --log-format=json writes Reloader's logrus keys: time (RFC 3339), level
// and msg.
func TestJSONLogKeys(t *testing.T) {
	var out bytes.Buffer
	newLogger(config.Config{Operations: config.Operations{LogJSON: true}}, &out).Info("reloaded", "workload", "shop/web")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	ts, _ := line["time"].(string)
	if _, err := time.Parse(time.RFC3339, ts); err != nil || line["level"] != "info" || line["msg"] != "reloaded" || line["workload"] != "shop/web" {
		t.Errorf("log line %v, want time (RFC 3339), level info, msg and the keys", line)
	}
}
