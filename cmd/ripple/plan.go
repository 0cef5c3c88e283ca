package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/impact"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// exitOverLimit is `ripple plan`'s exit code when a change rolls more
// workloads than --max-rollouts: apart from 1 (an error) and 2 (usage), so
// that CI can tell a large change from a broken run.
const exitOverLimit = 3

// overLimit is the error of a change above --max-rollouts.
type overLimit struct{ error }

// planFlags are the flags of `plan`.
type planFlags struct {
	own, rippleFlags, all *pflag.FlagSet
	ripple                *metainfo.Flags
	old, cur              []string
	namespace, output     string
	maxRollouts           int
}

func newPlanFlags(name string) *planFlags {
	f := &planFlags{}
	f.own = pflag.NewFlagSet("plan", pflag.ContinueOnError)
	f.own.SortFlags = false
	f.own.StringArrayVar(&f.old, "old", nil, "The manifests before the change: a file, a directory (its .yaml, .yml and .json files, recursively; a symbolic link in it is refused) or - for stdin; repeatable; at most 32 MiB a file and in all. Required.")
	f.own.StringArrayVar(&f.cur, "new", nil, "The manifests after the change, as --old; repeatable. Required. The workloads that read a changed config are read from these.")
	f.own.StringVarP(&f.namespace, "namespace", "n", "", "Namespace of the objects that have none (default \"default\"), as kubectl apply -n.")
	f.own.StringVarP(&f.output, "output", "o", impact.FormatText, "Output format: "+strings.Join(impact.Formats, ", ")+" (GitHub-flavoured, for a pull-request comment).")
	f.own.IntVar(&f.maxRollouts, "max-rollouts", 0, fmt.Sprintf("Exit %d when one change rolls more than this many workloads, unless its config's <annotation-prefix>/ack-rollouts acknowledges as many (as the admission guard decides); 0: no limit.", exitOverLimit))
	f.rippleFlags = pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	f.ripple = metainfo.BindFlags(f.rippleFlags)
	_ = f.rippleFlags.MarkHidden("cronjob-reload") // bound with its group, it changes no decision
	f.all = pflag.NewFlagSet(name+" plan", pflag.ContinueOnError)
	f.all.SortFlags = false
	f.all.AddFlagSet(f.own)
	f.all.AddFlagSet(f.rippleFlags)
	return f
}

func (f *planFlags) usage(w io.Writer, name string) {
	fmt.Fprintf(w, `Say what a change of manifests will do before it is applied: for each
ConfigMap and Secret whose data changes between the old and the new
manifests, the workloads of the new manifests that roll (and which is the
canary, and the bake), those that wait (reload window, manual approval,
storm breaker) and why, those that read it without reloading, and the keys
that changed with how many workloads read each. Key names only: never a
value, nor a digest.

It is the verdict Ripple's planner gives, offline: no cluster is read, not
even the kubeconfig. Ripple's settings are the defaults and the flags given.

Usage:
  %[1]s plan --old <file|dir|-> --new <file|dir|-> [flags]

Examples:
  # The rendered manifests of the base branch and of the pull request:
  %[1]s plan --old base/ --new head/
  # A Markdown summary for a pull-request comment; fail above 20 rollouts:
  %[1]s plan --old base/ --new head/ -o markdown --max-rollouts 20
  # A kustomize overlay against what main renders, with Ripple's settings:
  kustomize build overlays/prod | %[1]s plan --old main.yaml --new - --reload-window 'Mon-Fri 02:00-04:00'

Exit codes: 0 done; 1 a manifest could not be read; 2 a flag is wrong;
%[3]d a change rolls more than --max-rollouts workloads.

Flags:
%[2]s
Ripple's settings (the defaults unless given):
%[4]s`, name, f.own.FlagUsages(), exitOverLimit, f.rippleFlags.FlagUsages())
}

// parse parses args; help is true for --help.
func (f *planFlags) parse(args []string) (help bool, err error) {
	if help, err := parseFlags(f.all, args); help || err != nil {
		return help, err
	}
	switch {
	case f.all.NArg() > 0:
		return false, usageError{fmt.Errorf("unexpected argument %q: name the manifests with --old and --new", f.all.Arg(0))}
	case len(f.old) == 0 || len(f.cur) == 0:
		return false, usageError{errors.New("--old and --new are required: the manifests before and after the change")}
	case !slices.Contains(impact.Formats, f.output):
		return false, usageError{fmt.Errorf("--output: %q is not a format; use %s", f.output, strings.Join(impact.Formats, ", "))}
	case f.maxRollouts < 0:
		return false, usageError{fmt.Errorf("--max-rollouts: %d is negative; 0 is no limit", f.maxRollouts)}
	case slices.Contains(f.old, "-") && slices.Contains(f.cur, "-"):
		return false, usageError{errors.New("--old and --new: only one of them can read stdin (-)")}
	}
	return false, nil
}

// runPlan runs `plan`; stdin is read for - and now is the clock of the
// verdicts.
func runPlan(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	f := newPlanFlags(name)
	f.all.SetOutput(io.Discard)
	help, err := f.parse(args)
	if help {
		f.usage(stdout, name)
		return 0
	}
	if err == nil {
		err = f.plan(ctx, stdin, stdout, now())
	}
	return exitCode(err, stderr, name+" plan")
}

// plan prints the verdict of every config whose data changes, and fails
// when one rolls more than --max-rollouts.
func (f *planFlags) plan(ctx context.Context, stdin io.Reader, stdout io.Writer, now time.Time) error {
	settings, err := f.ripple.Resolve(metainfo.Info{})
	if err != nil {
		return usageError{err}
	}
	old, err := manifest.Load(f.old, stdin, f.namespace)
	if err != nil {
		return fmt.Errorf("--old: %w", err)
	}
	cur, err := manifest.Load(f.cur, stdin, f.namespace)
	if err != nil {
		return fmt.Errorf("--new: %w", err)
	}
	reader := manifest.NewReader(cur)
	a := impact.Assessor{Reader: reader, Settings: settings.Plan, Kinds: reloadedKinds(settings, reader), Find: impact.Listed(reader)}
	var verdicts []impact.Verdict
	var acks []impact.Ack
	for _, c := range changedConfigs(a, old, cur) {
		v, err := a.Assess(ctx, c.old, c.cur, now)
		if err != nil {
			return err
		}
		verdicts = append(verdicts, v)
		acks = append(acks, impact.AckOf(cmp.Or[client.Object](c.cur, c.old), settings.Plan.Keys.AckRollouts))
	}
	if err := impact.Print(stdout, f.output, verdicts); err != nil {
		return err
	}
	return f.checkLimit(verdicts, acks)
}

// reloadedKinds are the workload kinds Ripple reloads under settings; r
// reads a Rollout's workloadRef Deployment.
func reloadedKinds(settings metainfo.Settings, r client.Reader) []workload.Kind {
	var kinds []workload.Kind
	for _, k := range explain.Kinds(settings, r) {
		if k.Off == "" {
			kinds = append(kinds, k.Kind)
		}
	}
	return kinds
}

// checkLimit fails when a verdict rolls more than --max-rollouts and its
// config does not acknowledge as many (acks[i] is vs[i]'s), as the
// admission guard decides.
func (f *planFlags) checkLimit(vs []impact.Verdict, acks []impact.Ack) error {
	if f.maxRollouts == 0 {
		return nil
	}
	var over []string
	for i, v := range vs {
		if v.Rolls > f.maxRollouts && !acks[i].Covers(v.Rolls) {
			over = append(over, fmt.Sprintf("%s %s/%s rolls %d", v.Kind, v.Namespace, v.Name, v.Rolls))
		}
	}
	if len(over) == 0 {
		return nil
	}
	return overLimit{fmt.Errorf("above --max-rollouts=%d: %s", f.maxRollouts, strings.Join(over, "; "))}
}

// configWrite is a config's write: its old version (nil when the old
// manifests do not have it) and its new one (nil when the new ones do
// not).
type configWrite struct{ old, cur client.Object }

// changedConfigs are the ConfigMaps and Secrets whose data differs
// between old and cur, created or deleted, by namespace, kind and name, as
// their digests tell it: the data itself is compared nowhere else.
func changedConfigs(a impact.Assessor, old, cur []client.Object) []configWrite {
	type key struct{ ns, kind, name string }
	keyOf := func(o client.Object) key { return key{o.GetNamespace(), string(source.KindOf(o)), o.GetName()} }
	writes := map[key]*configWrite{}
	for _, side := range []struct {
		objs []client.Object
		set  func(*configWrite, client.Object)
	}{
		{old, func(w *configWrite, o client.Object) { w.old = o }},
		{cur, func(w *configWrite, o client.Object) { w.cur = o }},
	} {
		for _, o := range side.objs {
			if source.KindOf(o) == "" {
				continue
			}
			if writes[keyOf(o)] == nil {
				writes[keyOf(o)] = &configWrite{}
			}
			side.set(writes[keyOf(o)], o)
		}
	}
	keys := slices.SortedFunc(maps.Keys(writes), func(x, y key) int {
		return cmp.Or(strings.Compare(x.ns, y.ns), strings.Compare(x.kind, y.kind), strings.Compare(x.name, y.name))
	})
	var out []configWrite
	for _, k := range keys {
		w := writes[k]
		if w.old != nil && w.cur != nil && a.SameData(w.old, w.cur) {
			continue
		}
		out = append(out, *w)
	}
	return out
}
