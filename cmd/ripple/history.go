package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/history"
)

// historyKinds are the kinds that keep revisions, as Kind.Name() names them.
var historyKinds = []string{"Deployment", "StatefulSet", "DaemonSet", "Rollout"}

// historyFlags are the flags of `history`, in three groups for --help.
type historyFlags struct {
	clusterFlags
	all, own                *pflag.FlagSet
	output, rippleNamespace string
	kind, name              string
}

func newHistoryFlags(name string) *historyFlags {
	f := &historyFlags{}
	f.bind()
	f.own = pflag.NewFlagSet("history", pflag.ContinueOnError)
	f.own.StringVarP(&f.output, "output", "o", history.FormatTable, "Output format: "+strings.Join(history.Formats, ", ")+". docs/history.md documents the json schema.")
	f.own.StringVar(&f.rippleNamespace, "ripple-namespace", "", "Namespace of the reloader-meta-info ConfigMap of the Ripple whose settings (strategy, annotation prefix) apply; default: the only one labelled reloader.stakater.com/meta-info in the cluster.")
	f.all = f.join(name+" history", f.own)
	return f
}

func (f *historyFlags) usage(w io.Writer, name string) {
	fmt.Fprintf(w, `Show the revisions of a workload the cluster still keeps (ReplicaSets,
ControllerRevisions), one line each: when it started, the configs and
digests it was built for, whether a reload (Ripple) or someone else started
it, and for the current one which configs changed since. Read only; the
controller need not run. docs/history.md says how each column is decided.

Usage:
  %[1]s history <kind>/<name> [-n namespace] [flags]

Kinds: deployment (deploy), statefulset (sts), daemonset (ds), rollout (ro).

Flags:
%[2]s
Connection flags, as kubectl's (-n/--namespace is the workload's namespace):
%[3]s
Ripple's settings: read from its reloader-meta-info ConfigMap, else the
defaults; a flag given here overrides them:
%[4]s`, name, f.own.FlagUsages(), f.connection.FlagUsages(), f.rippleFlags.FlagUsages())
}

// parse parses args; help is true for --help.
func (f *historyFlags) parse(args []string) (help bool, err error) {
	if help, err := parseFlags(f.all, args); help || err != nil {
		return help, err
	}
	if !slices.Contains(history.Formats, f.output) {
		return false, usageError{fmt.Errorf("--output: %q is not a format; use %s", f.output, strings.Join(history.Formats, ", "))}
	}
	o := explainOptions{}
	if err := o.target(f.all.Args(), false); err != nil {
		return false, err
	}
	if !slices.Contains(historyKinds, o.kind) {
		return false, usageError{fmt.Errorf("argument %q: a %s keeps no revisions; history covers deployment, statefulset, daemonset and rollout", strings.Join(f.all.Args(), " "), o.kind)}
	}
	f.kind, f.name = o.kind, o.name
	return false, nil
}

// runHistory runs `history`; now is the clock the current digests are
// planned at.
func runHistory(ctx context.Context, name string, args []string, stdout, stderr io.Writer, now func() time.Time) int {
	f := newHistoryFlags(name)
	f.all.SetOutput(io.Discard)
	help, err := f.parse(args)
	if help {
		f.usage(stdout, name)
		return 0
	}
	if err == nil {
		err = f.validate()
	}
	if err == nil {
		err = f.history(ctx, stdout, stderr, now)
	}
	return exitCode(err, stderr, name+" history")
}

// history connects, reads Ripple's settings and the workload, and prints
// its history; a warning goes to stderr.
func (f *historyFlags) history(ctx context.Context, stdout, stderr io.Writer, now func() time.Time) error {
	// It only reads: without Ripple's settings it goes on with the
	// defaults and the flags, and says so on stderr.
	w, err := f.readWorkload(ctx, "ripple-history", f.rippleNamespace, stderr, f.kind, f.name)
	if err != nil {
		return err
	}
	h, err := history.Reader{Reader: w.client, Settings: w.settings.Plan, Digester: w.settings.Digester(ctx, w.client), Now: now}.Read(ctx, w.kind.Kind, w.obj)
	if err != nil {
		return err
	}
	return history.Print(stdout, f.output, h)
}
