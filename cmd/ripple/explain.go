package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// explainOptions are explain's own flags and arguments.
type explainOptions struct {
	all, allNamespaces bool
	// pending lists only the workloads that wait for an approval.
	pending         bool
	output          string
	rippleNamespace string
	// gitops names the GitOps tool whose settings to print instead of the
	// report.
	gitops string
	// files are the manifest files, directories or stdin given with -f.
	files []string
	// kind (as Kind.Name() names it) and name of the workload, without --all.
	kind, name string
	// config is set when the argument names a ConfigMap or Secret: where
	// its change stands across the workloads that use it.
	config *refs.Ref
	// unknownKind, a usage error, is why kind is not a built-in kind's
	// name: it may still name a declared kind (--workload-kinds), known
	// once the settings are.
	unknownKind error
}

// findKind is the kind of kinds the arguments name, or a usage error.
func (o *explainOptions) findKind(kinds []explain.Kind) (explain.Kind, error) {
	k, ok := explain.Find(kinds, o.kind)
	switch {
	case !ok && o.unknownKind != nil:
		return k, o.unknownKind
	case !ok:
		// Never a zero Kind to explain with: it has no type to read into.
		return k, usageError{fmt.Errorf("no workload kind %q to explain", o.kind)}
	}
	return k, nil
}

// eventCount is how many of Ripple's events on the workload are shown.
const eventCount = 5

// usageError is an error in the arguments: exit code 2.
type usageError struct{ error }

// parseFlags parses a command's args into fs: help is true for --help,
// and a flag error is a usageError.
func parseFlags(fs *pflag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, usageError{err}
	}
	return false, nil
}

// explainFlags are the flags of `explain`, in three groups for --help.
type explainFlags struct {
	clusterFlags
	all, own *pflag.FlagSet
	opts     explainOptions
}

func newExplainFlags(name string) *explainFlags {
	f := &explainFlags{}
	f.bind()
	f.own = pflag.NewFlagSet("explain", pflag.ContinueOnError)
	f.own.StringArrayVarP(&f.opts.files, "filename", "f", nil, "Explain the workloads of these manifest files instead of a cluster: a file, a directory (its .yaml, .yml and .json files, recursively; a symbolic link in it is refused) or - for stdin; repeatable; at most 32 MiB a file and in all. No cluster is read.")
	f.own.BoolVar(&f.opts.all, "all", false, "Explain every opted-in workload (a Ripple or Reloader trigger annotation, or every workload with --auto-reload-all), one line each; with -f, also every workload with findings.")
	f.own.BoolVar(&f.opts.pending, "pending", false, "List every workload whose reload waits for an approval (reload policy manual) or for its reload window, with --all's columns; implies --all.")
	f.own.BoolVarP(&f.opts.allNamespaces, "all-namespaces", "A", false, "With --all or --pending: in every namespace.")
	f.own.StringVarP(&f.opts.output, "output", "o", explain.FormatTable, "Output format: "+strings.Join(explain.Formats, ", ")+". docs/explain.md documents the json and yaml schema.")
	f.own.StringVar(&f.opts.gitops, "gitops", "", "Print, instead of the report, the settings "+strings.Join(explain.GitOpsTools, " or ")+" needs for the workloads (the one named, or --all) so that it shows no drift for what Ripple writes, as YAML to paste (docs/gitops.md).")
	f.own.StringVar(&f.opts.rippleNamespace, "ripple-namespace", "", "Namespace of the reloader-meta-info ConfigMap of the Ripple to explain; default: the only one labelled reloader.stakater.com/meta-info in the cluster.")
	f.all = f.join(name+" explain", f.own)
	return f
}

func (f *explainFlags) usage(w io.Writer, name string) {
	fmt.Fprintf(w, `Say why Ripple reloads a workload or not: the sources it uses and where, the
policy its annotations set, each source's digest and decision, what Ripple
waits for, the settings in play and Ripple's last events on it.

Usage:
  %[1]s explain <kind>/<name> [-n namespace] [flags]
  %[1]s explain --all [-n namespace | -A] [flags]
  %[1]s explain --pending [-n namespace | -A] [flags]
  %[1]s explain -f <file|dir|-> [<kind>/<name>] [flags]
  %[1]s explain configmap/<name> | secret/<name> [-n namespace] [-f <file|dir|->] [flags]

A config (configmap/<name>, secret/<name>) shows where its current data
stands across the workloads that use it: its canaried change (the
canaries, rolling, baking until, halted and why) and each workload's state.
With -f, its digest and the state of each workload in the files that uses
it (no canary record or ConfigRollout exists offline).

With -f (offline), the workloads and configs are read from manifest files
(Helm or kustomize output, kubectl YAML or JSON) and no cluster is contacted,
not even the kubeconfig is loaded: -n only sets the namespace of objects
without one. Without a workload, every opted-in workload in the files is
listed, and every workload with a finding. Ripple's settings are the
defaults and the flags given. The report adds lint findings (misspelled
keys, named reloads matching nothing in the files, typed auto on an unused
kind, patterns that do not compile); the exit code is 1 when a finding
printed is an error, so it can gate CI. Offline there are no events, no
applied digests beyond what the objects carry and no settle times.

Kinds: deployment (deploy), statefulset (sts), daemonset (ds), cronjob (cj),
job, rollout (ro), deploymentconfig (dc).

Flags:
%[2]s
Connection flags, as kubectl's (-n/--namespace is the workload's namespace;
--namespaces is Ripple's watched namespaces):
%[3]s
Ripple's settings: read from its reloader-meta-info ConfigMap, else (none
found, or your credentials may not read it: a warning says so) the
defaults; a flag given here overrides them:
%[4]s`, name, f.own.FlagUsages(), f.connection.FlagUsages(), f.rippleFlags.FlagUsages())
}

// parse parses args; help is true for --help.
func (f *explainFlags) parse(args []string) (help bool, err error) {
	if help, err := parseFlags(f.all, args); help || err != nil {
		return help, err
	}
	o := &f.opts
	if !slices.Contains(explain.Formats, o.output) {
		return false, usageError{fmt.Errorf("--output: %q is not a format; use %s", o.output, strings.Join(explain.Formats, ", "))}
	}
	if o.gitops != "" && !slices.Contains(explain.GitOpsTools, o.gitops) {
		return false, usageError{fmt.Errorf("--gitops: %q is not a GitOps tool; use %s", o.gitops, strings.Join(explain.GitOpsTools, ", "))}
	}
	if o.rippleNamespace != "" && len(o.files) > 0 {
		return false, usageError{errors.New("--ripple-namespace: not with -f, which reads no cluster")}
	}
	if len(o.files) > 0 && len(f.all.Args()) == 0 {
		o.all = true // the files' workloads
	}
	if o.pending {
		if len(o.files) > 0 {
			return false, usageError{errors.New("--pending: not with -f: what waits is read from a cluster")}
		}
		o.all = true
	}
	if o.allNamespaces && !o.all {
		return false, usageError{errors.New("--all-namespaces: only with --all or --pending")}
	}
	return false, o.target(f.all.Args(), f.all.Changed("workload-kinds") || f.all.Changed("workload-kinds-preset"))
}

// target reads the workload argument: <kind>/<name> or <kind> <name>.
// With declared kinds, a kind that is not built in is looked up among
// them once they are known (findKind).
func (o *explainOptions) target(args []string, declared bool) error {
	if o.all {
		return o.noWorkload(args)
	}
	var kind, name string
	switch {
	case len(args) == 1 && strings.Count(args[0], "/") == 1:
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) > 1 && !slices.ContainsFunc(args, func(a string) bool { return strings.Count(a, "/") != 1 }):
		return usageError{fmt.Errorf("arguments %q: %d workloads; name one workload per run", strings.Join(args, " "), len(args))}
	case len(args) == 2:
		kind, name = args[0], args[1]
	case len(args) == 0:
		return usageError{errors.New("name a workload as <kind>/<name>, or use --all")}
	default:
		return usageError{fmt.Errorf("arguments %q: name one workload as <kind>/<name>", strings.Join(args, " "))}
	}
	if name == "" {
		return usageError{fmt.Errorf("argument %q: the workload name is empty", strings.Join(args, " "))}
	}
	switch strings.ToLower(kind) {
	case "configmap", "configmaps", "cm":
		o.config = &refs.Ref{Kind: refs.ConfigMap, Name: name}
		return nil
	case "secret", "secrets":
		o.config = &refs.Ref{Kind: refs.Secret, Name: name}
		return nil
	}
	k, err := explain.ParseKind(kind)
	switch {
	case err != nil && declared:
		k, o.unknownKind = kind, usageError{fmt.Errorf("argument %q: %w, nor a declared kind", strings.Join(args, " "), err)}
	case err != nil:
		return usageError{fmt.Errorf("argument %q: %w", strings.Join(args, " "), err)}
	}
	o.kind, o.name = k, name
	return nil
}

// noWorkload refuses a workload argument with --all or --pending, naming
// the flag the user gave (--pending implies --all).
func (o *explainOptions) noWorkload(args []string) error {
	switch {
	case len(args) > 0 && o.pending:
		return usageError{fmt.Errorf("argument %q: --pending lists every workload that waits and takes no workload; for one workload's wait, explain it without --pending", args[0])}
	case len(args) > 0:
		return usageError{fmt.Errorf("argument %q: --all explains every opted-in workload and takes no workload", args[0])}
	}
	return nil
}

// runExplain runs `explain`; stdin is read for -f -, and now is the clock
// of the report.
func runExplain(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	f := newExplainFlags(name)
	f.all.SetOutput(io.Discard)
	help, err := f.parse(args)
	if help {
		f.usage(stdout, name)
		return 0
	}
	if err == nil {
		err = f.validate()
	}
	switch {
	case err == nil && len(f.opts.files) > 0:
		err = f.explainFiles(ctx, stdin, stdout, now)
	case err == nil:
		err = f.explain(ctx, stdout, stderr, now)
	}
	return exitCode(err, stderr, name+" explain")
}

// explain connects, reads Ripple's settings and prints the report; a
// warning goes to stderr.
func (f *explainFlags) explain(ctx context.Context, stdout, stderr io.Writer, now func() time.Time) error {
	c, ns, err := f.connect("ripple-explain")
	if err != nil {
		return err
	}
	// It only reads: without Ripple's settings it explains with the
	// defaults and the flags, and its report says so.
	_, settings, err := f.settings(ctx, c, f.opts.rippleNamespace, stderr)
	if err != nil {
		return err
	}
	if err := f.refusePinning(&settings); err != nil {
		return err
	}
	kinds := explain.Kinds(settings, c)
	digester := settings.Digester(ctx, c)
	e := explain.Explainer{Reader: c, Settings: settings, Digester: digester, Events: explain.ClusterEvents(c, eventCount), Rollouts: workload.RolloutOf, Now: now}
	if f.opts.all {
		if f.opts.allNamespaces {
			ns = ""
		}
		list, err := e.All(ctx, kinds, ns)
		if err != nil {
			return err
		}
		if f.opts.pending {
			list = list.Awaiting()
		}
		if f.opts.gitops != "" {
			return explain.PrintGitOps(stdout, f.opts.gitops, list.Items, settings)
		}
		return explain.PrintList(stdout, f.opts.output, list, f.opts.allNamespaces)
	}
	if f.opts.config != nil {
		c, err := e.Change(ctx, kinds, ns, *f.opts.config)
		if err != nil {
			return err
		}
		return explain.PrintChange(stdout, f.opts.output, c)
	}
	kind, err := f.opts.findKind(kinds)
	if err != nil {
		return err
	}
	r, err := e.Explain(ctx, kind, ns, f.opts.name)
	if err != nil {
		return err
	}
	if f.opts.gitops != "" {
		return explain.PrintGitOps(stdout, f.opts.gitops, []explain.Report{r}, settings)
	}
	return explain.Print(stdout, f.opts.output, r)
}
