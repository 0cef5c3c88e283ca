package plan

import (
	"strings"
	"testing"
)

func tightenOnly(i *Input) { i.TightenOnly = true }

func namespaceSays(key, v string) func(*Input) {
	return func(i *Input) {
		if i.Workload.NamespaceAnnotations == nil {
			i.Workload.NamespaceAnnotations = map[string]string{}
		}
		i.Workload.NamespaceAnnotations[key] = v
	}
}

// With --tighten-only a workload's own policy may only tighten its
// Namespace's (or the flag's): auto < manual < notify.
func TestTightenOnlyPolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []func(*Input)
		policy   Policy
		from     string
		warning  string // "" : none
		rolls    bool
		awaiting bool
	}{
		{name: "off: the workload's auto overrides the namespace's manual (today's behaviour)",
			opts:   []func(*Input){namespaceSays(keys.ReloadPolicy, "manual"), annotate(keys.ReloadPolicy, "auto")},
			policy: Auto, from: FromWorkload, rolls: true},
		{name: "auto under a manual namespace: the namespace's applies, a warning names the annotation",
			opts:   []func(*Input){tightenOnly, namespaceSays(keys.ReloadPolicy, "manual"), annotate(keys.ReloadPolicy, "auto")},
			policy: Manual, from: FromNamespace, awaiting: true,
			warning: `annotation "ripple.dev/reload-policy": "auto" would loosen the reload policy "manual" of the namespace (--tighten-only`},
		{name: "empty under a manual namespace: loosens too",
			opts:   []func(*Input){tightenOnly, namespaceSays(keys.ReloadPolicy, "manual"), annotate(keys.ReloadPolicy, "")},
			policy: Manual, from: FromNamespace, awaiting: true, warning: `"" would loosen`},
		{name: "on the pod template: named so",
			opts: []func(*Input){tightenOnly, namespaceSays(keys.ReloadPolicy, "manual"), func(i *Input) {
				i.Workload.Template.Annotations = map[string]string{keys.ReloadPolicy: "auto"}
			}},
			policy: Manual, from: FromNamespace, awaiting: true, warning: `annotation "ripple.dev/reload-policy" on the pod template`},
		{name: "manual under a manual namespace: the workload's, no warning",
			opts:   []func(*Input){tightenOnly, namespaceSays(keys.ReloadPolicy, "manual"), annotate(keys.ReloadPolicy, "manual")},
			policy: Manual, from: FromWorkload, awaiting: true},
		{name: "notify under a manual namespace tightens it",
			opts:   []func(*Input){tightenOnly, namespaceSays(keys.ReloadPolicy, "manual"), annotate(keys.ReloadPolicy, "notify")},
			policy: Notify, from: FromWorkload},
		{name: "manual under a notify namespace loosens it",
			opts:   []func(*Input){tightenOnly, namespaceSays(keys.ReloadPolicy, "notify"), annotate(keys.ReloadPolicy, "manual")},
			policy: Notify, from: FromNamespace, warning: `"manual" would loosen the reload policy "notify"`},
		{name: "no namespace value: the flag's is the floor",
			opts:   []func(*Input){tightenOnly, func(i *Input) { i.ReloadPolicy = "manual" }, annotate(keys.ReloadPolicy, "auto")},
			policy: Manual, from: FromFlag, awaiting: true, warning: `of the flag`},
		{name: "manual over an auto default tightens it",
			opts:   []func(*Input){tightenOnly, annotate(keys.ReloadPolicy, "manual")},
			policy: Manual, from: FromWorkload, awaiting: true},
		{name: "an invalid workload policy counts as manual, never looser than the floor",
			opts:   []func(*Input){tightenOnly, namespaceSays(keys.ReloadPolicy, "notify"), annotate(keys.ReloadPolicy, "sometimes")},
			policy: Notify, from: FromNamespace, warning: `"sometimes" is not a reload policy`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(in(append([]func(*Input){both, digestOf(cmApp, "cm2")}, tc.opts...)...))
			if p.Policy != tc.policy || p.PolicyFrom != tc.from {
				t.Errorf("policy %q from %q, want %q from %q", p.Policy, p.PolicyFrom, tc.policy, tc.from)
			}
			if p.Reloads() != tc.rolls || (p.Awaiting != nil) != tc.awaiting {
				t.Errorf("reloads %v, awaiting %v; want %v, %v", p.Reloads(), p.Awaiting != nil, tc.rolls, tc.awaiting)
			}
			if got := strings.Join(p.Warnings, "\n"); (tc.warning == "") != (got == "") || !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
		})
	}
}

// With --tighten-only a workload's own window may only narrow its
// Namespace's (or the flag's). now is Monday 12:00 UTC: the namespace's
// window is closed.
func TestTightenOnlyWindow(t *testing.T) {
	const nsWindow = "Mon-Fri 02:00-04:00 UTC"
	for _, tc := range []struct {
		name     string
		opts     []func(*Input)
		value    string
		from     string
		warning  string
		deferred bool
	}{
		{name: "off: an empty workload window removes the namespace's (today's behaviour)",
			opts:  []func(*Input){namespaceSays(keys.ReloadWindow, nsWindow), reloadWindow("")},
			value: "", from: FromWorkload},
		{name: "a narrower window is the workload's",
			opts:  []func(*Input){tightenOnly, namespaceSays(keys.ReloadWindow, nsWindow), reloadWindow("Mon-Fri 02:30-03:30 UTC")},
			value: "Mon-Fri 02:30-03:30 UTC", from: FromWorkload, deferred: true},
		{name: "narrower in another zone (Berlin is UTC+1 in November)",
			opts:  []func(*Input){tightenOnly, namespaceSays(keys.ReloadWindow, nsWindow), reloadWindow("Tue,Thu 03:15-04:45 Europe/Berlin")},
			value: "Tue,Thu 03:15-04:45 Europe/Berlin", from: FromWorkload, deferred: true},
		{name: "empty removes it: the namespace's applies, a warning names the annotation",
			opts:  []func(*Input){tightenOnly, namespaceSays(keys.ReloadWindow, nsWindow), reloadWindow("")},
			value: nsWindow, from: FromNamespace, deferred: true,
			warning: `annotation "ripple.dev/reload-window": "" would widen or remove the reload window "Mon-Fri 02:00-04:00 UTC" of the namespace (--tighten-only`},
		{name: "always removes it",
			opts:  []func(*Input){tightenOnly, namespaceSays(keys.ReloadWindow, nsWindow), reloadWindow("always")},
			value: nsWindow, from: FromNamespace, deferred: true, warning: `"always" would widen`},
		{name: "wider",
			opts:  []func(*Input){tightenOnly, namespaceSays(keys.ReloadWindow, nsWindow), reloadWindow("00:00-24:00")},
			value: nsWindow, from: FromNamespace, deferred: true, warning: `"00:00-24:00" would widen`},
		{name: "partly outside",
			opts:  []func(*Input){tightenOnly, namespaceSays(keys.ReloadWindow, nsWindow), reloadWindow("Mon-Fri 03:00-05:00 UTC")},
			value: nsWindow, from: FromNamespace, deferred: true, warning: "would widen"},
		{name: "on a day the namespace's is closed",
			opts:  []func(*Input){tightenOnly, namespaceSays(keys.ReloadWindow, nsWindow), reloadWindow("Sat 02:00-03:00 UTC")},
			value: nsWindow, from: FromNamespace, deferred: true, warning: "would widen"},
		{name: "the flag's window is the floor without a namespace's",
			opts:  []func(*Input){tightenOnly, func(i *Input) { i.ReloadWindow = nsWindow }, reloadWindow("12:00-13:00 UTC")},
			value: nsWindow, from: FromFlag, deferred: true, warning: "of the flag"},
		{name: "no floor: any window of the workload's narrows it",
			opts:  []func(*Input){tightenOnly, reloadWindow("Sat 02:00-03:00 UTC")},
			value: "Sat 02:00-03:00 UTC", from: FromWorkload, deferred: true},
		{name: "an invalid floor: the workload's window cannot be shown narrower, the floor's applies",
			opts:  []func(*Input){tightenOnly, namespaceSays(keys.ReloadWindow, "Mon-Fry 02:00-04:00"), reloadWindow("Mon 02:00-03:00 UTC")},
			value: "Mon-Fry 02:00-04:00", from: FromNamespace, deferred: true, warning: "would widen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := in(append([]func(*Input){both, digestOf(cmApp, "cm2")}, tc.opts...)...)
			_, value, from, _ := ReloadWindow(i.Workload, i.Settings, i.Now)
			if value != tc.value || from != tc.from {
				t.Errorf("window %q from %q, want %q from %q", value, from, tc.value, tc.from)
			}
			p := For(i)
			if (p.Deferred != nil) != tc.deferred || p.Reloads() == tc.deferred {
				t.Errorf("deferred %v, reloads %v; want deferred %v", p.Deferred != nil, p.Reloads(), tc.deferred)
			}
			var loosened []string
			for _, w := range p.Warnings {
				if strings.Contains(w, "--tighten-only") || strings.Contains(w, tc.warning) && tc.warning != "" {
					loosened = append(loosened, w)
				}
			}
			if got := strings.Join(loosened, "\n"); (tc.warning == "") != (got == "") || !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q, want %q", p.Warnings, tc.warning)
			}
		})
	}
}
