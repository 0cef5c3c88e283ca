package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
)

// waitFlags are the flags of `wait`.
type waitFlags struct {
	clusterFlags
	all, own        *pflag.FlagSet
	rippleNamespace string
	timeout         time.Duration
	version, after  string
}

func newWaitFlags(name string) *waitFlags {
	f := &waitFlags{}
	f.bind()
	f.own = pflag.NewFlagSet("wait", pflag.ContinueOnError)
	f.own.DurationVar(&f.timeout, "timeout", 30*time.Minute, "How long to wait; past it, exit 1 with where the change stands.")
	f.own.StringVar(&f.version, "version", "", "Wait for the change that carries the config's data at this resourceVersion or later (the one your write returned); default: the config's resourceVersion when the command starts, or, when you may not read the config, its newest change.")
	f.own.StringVar(&f.after, "after-version", "", "Wait for a change of the config's data made after this resourceVersion (the config's, read before you triggered a writer that updates it later, such as an ExternalSecret's refresh).")
	f.own.StringVar(&f.rippleNamespace, "ripple-namespace", "", "Namespace of the reloader-meta-info ConfigMap of the Ripple whose settings apply (used only to tell that no workload reads the config); default: the only one labelled reloader.stakater.com/meta-info in the cluster.")
	f.all = f.join(name+" wait", f.own)
	return f
}

func (f *waitFlags) usage(w io.Writer, name string) {
	fmt.Fprintf(w, `Wait until a config's change reaches every workload Ripple rolls for it.
It finds the change that carries the config's data as of your write (its
ConfigRollout: the newest whose status.observedConfigVersion is at least
the config's resourceVersion), follows it when a newer change supersedes
it, and exits 0 once the change that carries the config's current data is
Propagated, printing the consumers that keep the old data (stale). It
exits 1 when that change halts (naming its canary and why) or on the
timeout, and 0 at once when no workload reads the config. Needs get on the
config (or --version) and list on configrollouts.ripple.dev (view has
both for ConfigMaps; for a Secret, edit, or pass --version).

Usage:
  %[1]s wait configmap/<name> [-n namespace] [flags]
  %[1]s wait secret/<name> [-n namespace] [flags]

Flags:
%[2]s
Connection flags, as kubectl's (-n/--namespace is the config's namespace):
%[3]s`, name, f.own.FlagUsages(), f.connection.FlagUsages())
}

// runWait runs `wait`.
func runWait(ctx context.Context, name string, args []string, stdout, stderr io.Writer, now func() time.Time) int {
	f := newWaitFlags(name)
	f.all.SetOutput(io.Discard)
	if help, err := parseFlags(f.all, args); help {
		f.usage(stdout, name)
		return 0
	} else if err != nil {
		return exitCode(err, stderr, name+" wait")
	}
	err := f.check()
	if err == nil {
		err = f.wait(ctx, f.all.Arg(0), stdout, now)
	}
	return exitCode(err, stderr, name+" wait")
}

func (f *waitFlags) check() error {
	switch {
	case f.all.NArg() != 1:
		return usageError{errors.New("name one config, as configmap/<name> or secret/<name>")}
	case f.version != "" && f.after != "":
		return usageError{errors.New("--version and --after-version wait for different changes: give one")}
	case f.timeout <= 0:
		return usageError{fmt.Errorf("--timeout %s: give a positive duration, such as 30m", f.timeout)}
	}
	return f.validate()
}

// waitPoll is how often wait reads the config's changes: a change's status
// is written at most every 0.8 s.
const waitPoll = time.Second

// waiter follows one config's changes for `wait`.
type waiter struct {
	c       client.Client
	ns      string
	ref     refs.Ref
	what    string
	receipt change.Receipt
	out     io.Writer
	last    string
	// noReaders tells whether no workload reads the config.
	noReaders func(ctx context.Context) bool
}

// wait waits for the change of the config named arg.
func (f *waitFlags) wait(ctx context.Context, arg string, stdout io.Writer, now func() time.Time) error {
	obj, cfgName, err := configArg(arg)
	if err != nil {
		return err
	}
	c, ns, err := f.connect("ripple-wait")
	if err != nil {
		return err
	}
	w := &waiter{c: c, ns: ns, ref: refs.Ref{Kind: source.KindOf(obj), Name: cfgName}, out: stdout,
		what: fmt.Sprintf("%s %s/%s", strings.ToLower(string(source.KindOf(obj))), ns, cfgName)}
	w.receipt = change.Receipt{Version: f.version}
	if f.after != "" {
		w.receipt = change.Receipt{Version: f.after, After: true}
	}
	switch err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: cfgName}, obj); {
	case err == nil:
		w.receipt.UID = obj.GetUID()
		if w.receipt.Version == "" {
			w.receipt.Version = obj.GetResourceVersion()
		}
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s not found", w.what)
	case apierrors.IsForbidden(err) && w.receipt.Version == "":
		w.say(fmt.Sprintf("%s: you may not read it, so this waits for its newest change; pass --version with the resourceVersion your write returned to wait for that write", w.what))
	case !apierrors.IsForbidden(err):
		return err
	}
	w.noReaders = f.readersCheck(c, ns, w.ref)
	start := now()
	err = wait.PollUntilContextTimeout(ctx, waitPoll, f.timeout, true, w.look)
	if wait.Interrupted(err) {
		return fmt.Errorf("%s: timed out after %s; %s", w.what, now().Sub(start).Round(time.Second), w.last)
	}
	return err
}

// look reads the config's changes once: done when the change it waits for
// propagated, an error when it halted.
func (w *waiter) look(ctx context.Context) (bool, error) {
	items, err := change.List(ctx, w.c, w.ns, w.ref, false)
	if err != nil {
		if apimeta.IsNoMatchError(err) {
			return false, fmt.Errorf("the API server does not serve ConfigRollouts (configrollouts.ripple.dev): install the CRD, or turn on --config-rollouts (docs/config-rollouts.md)")
		}
		return false, err
	}
	cr, ok := w.receipt.Find(items)
	if !ok {
		if w.noReaders != nil && w.noReaders(ctx) {
			w.say(fmt.Sprintf("%s: no workload reads it; nothing to wait for", w.what))
			return true, nil
		}
		w.say(w.unseen())
		return false, nil
	}
	end := change.Follow(cr, items)
	st := end.Status
	switch {
	case apimeta.IsStatusConditionTrue(cr.Status.Conditions, v1alpha1.Propagated) || st.PropagatedAt != nil:
		w.say(fmt.Sprintf("%s: change %s Propagated: %s", w.what, end.Name, counts(st)))
		w.stale(end)
		return true, nil
	case st.Phase == v1alpha1.PhaseHalted:
		return false, fmt.Errorf("%s: change %s halted: %s", w.what, end.Name, halted(st))
	}
	if st.Phase == "" { // made, its status not written yet
		w.say(fmt.Sprintf("%s: change %s made", w.what, end.Name))
		return false, nil
	}
	w.say(fmt.Sprintf("%s: change %s %s: %s", w.what, end.Name, st.Phase, counts(st)))
	return false, nil
}

func (w *waiter) unseen() string {
	switch {
	case w.receipt.After:
		return fmt.Sprintf("%s: waiting for a change of its data after resourceVersion %s", w.what, w.receipt.Version)
	case w.receipt.Version != "":
		return fmt.Sprintf("%s: waiting for Ripple to see its data at resourceVersion %s", w.what, w.receipt.Version)
	}
	return fmt.Sprintf("%s: waiting for its first change", w.what)
}

// say prints line once: the lines are where the change stands, printed
// when it moves.
func (w *waiter) say(line string) {
	if line != w.last {
		fmt.Fprintln(w.out, line)
	}
	w.last = line
}

func counts(st v1alpha1.ConfigRolloutStatus) string {
	c := st.Counts
	s := fmt.Sprintf("%d of %d managed consumers updated", c.Complete, c.Managed)
	if c.Stale > 0 {
		s += fmt.Sprintf(", %d stale", c.Stale)
	}
	return s
}

// stale prints the consumers of cr that keep the old data: those listed,
// and how many more its counts have.
func (w *waiter) stale(cr *v1alpha1.ConfigRollout) {
	listed := 0
	for _, c := range cr.Status.Consumers {
		if c.State == v1alpha1.ConsumerStale || c.State == v1alpha1.ConsumerNotifyOnly {
			fmt.Fprintf(w.out, "  stale: %s %s (%s): it keeps the old data until it is restarted\n", c.Kind, c.Name, c.State)
			listed++
		}
	}
	if more := int(cr.Status.Counts.Stale) - listed; more > 0 {
		fmt.Fprintf(w.out, "  and %d more stale consumers (ripple explain %s lists them)\n", more, strings.ReplaceAll(w.what, " "+w.ns+"/", "/"))
	}
}

// halted says why a change halted and on which canaries.
func halted(st v1alpha1.ConfigRolloutStatus) string {
	cn := st.Canary
	if cn == nil {
		return "its canary halted it"
	}
	var names []string
	for _, w := range cn.Workloads {
		names = append(names, w.Kind+" "+w.Name)
	}
	why := cn.Why
	if why == "" {
		why = "its canary halted it"
	}
	return fmt.Sprintf("%s (canary %s); fix the config, or continue with ripple resume", why, strings.Join(names, ", "))
}

// readersCheck is the check that no workload reads config ref in ns, as
// `ripple explain configmap/<name>` tells it (a change nobody reads gets
// no ConfigRollout); a kind the user may not list may hold one. The
// Ripple's settings are read once, at the first check; a Ripple whose
// settings cannot be read is never told to read nothing.
func (f *waitFlags) readersCheck(c client.Client, ns string, ref refs.Ref) func(context.Context) bool {
	var e *explain.Explainer
	var kinds []explain.Kind
	var checked time.Time
	unreadable := false
	return func(ctx context.Context) bool {
		if unreadable || time.Since(checked) < readersRecheck {
			return false
		}
		checked = time.Now()
		if e == nil {
			_, settings, err := f.settings(ctx, c, f.rippleNamespace, nil)
			if err != nil {
				unreadable = true
				return false
			}
			e = &explain.Explainer{Reader: c, Settings: settings, Digester: settings.Digester(ctx, c), Now: time.Now}
			kinds = explain.Kinds(settings, c)
		}
		ch, err := e.Change(ctx, kinds, ns, ref)
		return err == nil && len(ch.Workloads) == 0 && len(ch.Unplanned) == 0 && len(ch.Unlisted) == 0
	}
}

// readersRecheck spaces the checks that no workload reads the config: a
// check lists and plans every workload of the namespace.
const readersRecheck = 15 * time.Second
