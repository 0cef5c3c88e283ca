package main

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// `approve` exits 2 on a bad argument, 1 when the cluster cannot be read,
// 0 with its help; as kubectl-ripple it names itself `kubectl ripple
// approve`, and both list it among the commands.
func TestApproveExitCodes(t *testing.T) {
	tests := map[string]struct {
		prog string
		args []string
		code int
		want string
	}{
		"no workload":    {"ripple", nil, 2, "ripple approve: name a workload as <kind>/<name> (several"},
		"kind only":      {"ripple", []string{"deploy"}, 2, `argument "deploy": name the workload too, as deploy/<name> or deploy <name>`},
		"second bad":     {"ripple", []string{"deploy/web", "pod/api"}, 2, `argument "pod/api": unknown workload kind "pod"`},
		"no kubeconfig":  {"ripple", []string{"deploy/web"}, 1, "no kubeconfig: $KUBECONFIG is /nonexistent, and no such file exists"},
		"bad kubeconfig": {"ripple", []string{"deploy/web", "--kubeconfig=/nonexistent/config"}, 1, "--kubeconfig /nonexistent/config: "},
		"unknown kind":   {"ripple", []string{"pod/web"}, 2, `argument "pod/web": unknown workload kind "pod"`},
		"unknown flag":   {"ripple", []string{"deploy/web", "--all"}, 2, "unknown flag: --all"},
		"plugin name":    {"kubectl-ripple", []string{"ds"}, 2, "kubectl ripple approve: "},
		"no cluster":     {"ripple", []string{"deploy/web", "--now", "--server=https://127.0.0.1:1", "--request-timeout=5s"}, 1, "ripple approve: "},
		"help":           {"ripple", []string{"--help"}, 0, ""},
		"help of plugin": {"kubectl-ripple", []string{"-h"}, 0, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "/nonexistent")
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.prog, append([]string{"approve"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.want)
			}
			if tc.code == 0 && !strings.Contains(stdout.String(), "approve <kind>/<name>") {
				t.Errorf("help lacks the usage line:\n%s", stdout.String())
			}
		})
	}
	for _, prog := range []string{"ripple", "kubectl-ripple"} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), prog, []string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), " approve <kind>/<name>") {
			t.Errorf("%s help, exit %d:\n%s", prog, code, stdout.String())
		}
	}
}

// Several workloads are read as several, in either of kubectl's forms;
// an approve error names approve's own flags, not explain's.
func TestApproveTargets(t *testing.T) {
	for args, want := range map[string][]target{
		"deploy/web sts/db": {{"Deployment", "web"}, {"StatefulSet", "db"}},
		"deploy web api":    {{"Deployment", "web"}, {"Deployment", "api"}},
		"deployment/web":    {{"Deployment", "web"}},
	} {
		got, err := approveTargets(strings.Fields(args))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", args, got, err, want)
		}
	}
	for args, want := range map[string]string{
		"deploy/web/x":      `argument "deploy/web/x": name a workload as <kind>/<name>`,
		"deploy/web api":    `argument "api": name a workload as <kind>/<name>`,
		"deploy/":           `argument "deploy/": name a workload as <kind>/<name>`,
		"deploy/web pods/x": `argument "pods/x": unknown workload kind "pods"`,
	} {
		_, err := approveTargets(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "--all") {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// approve approves what waits, and says why when nothing does.
func TestApprovable(t *testing.T) {
	c := strategy.Change{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "app"}, Hash: "abc"}
	tests := map[string]struct {
		p    plan.Plan
		want string
	}{
		"not manual":      {plan.Plan{Policy: plan.Auto, PolicyFrom: plan.FromFlag}, `reload policy "auto" (from the flag), not manual`},
		"settling":        {plan.Plan{Policy: plan.Manual, Changes: []strategy.Change{c}, Wait: 3 * time.Second}, `changes in ConfigMap "app" are still settling (3s)`},
		"nothing pending": {plan.Plan{Policy: plan.Manual}, "nothing waits for an approval"},
		"waiting":         {plan.Plan{Policy: plan.Manual, Awaiting: &plan.Awaiting{Changes: []strategy.Change{c}}}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := approvable("Deployment shop/web", tc.p, "ripple.dev/reload-policy", "")
			switch {
			case tc.want == "" && (err != nil || len(got.Changes) != 1 || got.Changes[0] != c):
				t.Errorf("got %v, %v; want the waiting change", got, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Without published settings (Ripple run without RELOADER_NAMESPACE),
// approve does not answer from its own default --reload-policy as if it
// were the controller's: it says that none were found, where it looked and
// how to point at them. A policy the flag gives, or the meta-info
// publishes, or a workload's own, is told as before.
func TestApproveWithoutPublishedSettings(t *testing.T) {
	settings := func(t *testing.T, meta metainfo.Info, args ...string) workloadRead {
		t.Helper()
		fs := pflag.NewFlagSet("approve", pflag.ContinueOnError)
		f := metainfo.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		s, err := f.Resolve(meta)
		if err != nil {
			t.Fatal(err)
		}
		return workloadRead{settings: s, meta: meta}
	}
	published := metainfo.Info{Origin: "ConfigMap ripple/reloader-meta-info", Namespace: "ripple", Options: map[string]any{"reloadPolicy": "auto"}}
	fromFlag := plan.Plan{Policy: plan.Auto, PolicyFrom: plan.FromFlag}
	tests := map[string]struct {
		w    workloadRead
		p    plan.Plan
		want []string
		// none is set when the answer must say no settings were found.
		none bool
	}{
		"none published": {settings(t, metainfo.Info{Searched: "the cluster"}), fromFlag, []string{
			"Deployment shop/web sets no ripple.dev/reload-policy", "no published settings of Ripple were found (no reloader-meta-info ConfigMap in the cluster",
			"RELOADER_NAMESPACE", "--ripple-namespace", "--reload-policy=manual",
		}, true},
		"none in the namespace named": {settings(t, metainfo.Info{Searched: "namespace ops", Namespace: "ops"}), fromFlag, []string{"no reloader-meta-info ConfigMap in namespace ops"}, true},
		"published":                   {settings(t, published), fromFlag, []string{`reload policy "auto" (from the flag), not manual`}, false},
		"flag given":                  {settings(t, metainfo.Info{Searched: "the cluster"}, "--reload-policy=auto"), fromFlag, []string{`reload policy "auto" (from the flag), not manual`}, false},
		"the workload's own":          {settings(t, metainfo.Info{Searched: "the cluster"}), plan.Plan{Policy: plan.Notify, PolicyFrom: plan.FromWorkload}, []string{`reload policy "notify" (from the workload), not manual`}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := approvable("Deployment shop/web", tc.p, "ripple.dev/reload-policy", unpublished(tc.w))
			if err == nil {
				t.Fatal("approvable: no error, want one: nothing waits")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want %q", err, want)
				}
			}
			if none := strings.Contains(err.Error(), "no published settings"); none != tc.none {
				t.Errorf("error %v: says no settings were published: %t, want %t", err, none, tc.none)
			}
		})
	}
}

// An approval of keyed digests needs the digest key: without it approve
// refuses, naming the Secret; without a key anywhere, or for Reloader's
// unkeyed digests, it goes on.
func TestKeyedUnread(t *testing.T) {
	app := strategy.Change{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "app"}, Hash: "abc"}
	w := plan.Awaiting{Changes: []strategy.Change{app}}
	whole := plan.Plan{Sources: []plan.SourcePlan{{Ref: app.Ref}}}
	perKey := plan.Plan{Sources: []plan.SourcePlan{{Ref: app.Ref, Keys: []string{"k"}}}}
	forbidden := errors.New(`secrets "ripple-digest-key" is forbidden`)
	tests := map[string]struct {
		p      plan.Plan
		mode   digest.Mode
		unread error
		want   string
	}{
		"key read":                {perKey, digest.HMACSHA256, nil, ""},
		"unkeyed digest":          {whole, digest.SHA1, forbidden, ""},
		"per-key, key unread":     {perKey, digest.SHA1, forbidden, `ConfigMap "app" are keyed (per-key reload)`},
		"hmac-sha256, key unread": {whole, digest.HMACSHA256, forbidden, "keyed (--digest=hmac-sha256)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := metainfo.Settings{Namespace: "ripple", KeyUnread: tc.unread}
			s.Config.Digest = tc.mode
			err := keyedUnread("Deployment shop/web", tc.p, w, s)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "get on secrets named ripple-digest-key in namespace ripple")):
				t.Errorf("error %v, want %q and the Secret named", err, tc.want)
			}
		})
	}
}
