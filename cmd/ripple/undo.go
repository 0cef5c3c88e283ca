package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/pin"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// undoFlags are the flags of `undo`.
type undoFlags struct {
	clusterFlags
	all, own        *pflag.FlagSet
	rippleNamespace string
	dryRun          bool
}

func newUndoFlags(name string) *undoFlags {
	f := &undoFlags{}
	f.bind()
	f.own = pflag.NewFlagSet("undo", pflag.ContinueOnError)
	f.own.BoolVar(&f.dryRun, "dry-run", false, "Print what would be rolled back, and write nothing.")
	f.own.StringVar(&f.rippleNamespace, "ripple-namespace", "", "Namespace of the reloader-meta-info ConfigMap of the Ripple whose settings apply (its annotation prefix); default: the only one labelled reloader.stakater.com/meta-info in the cluster.")
	f.all = f.join(name+" undo", f.own)
	return f
}

func (f *undoFlags) usage(w io.Writer, name string) {
	fmt.Fprintf(w, `Undo a config's latest change on the workloads that pin it
(docs/pinning.md): each pinned Deployment, StatefulSet, DaemonSet or Argo
Rollout whose pods read a copy holding the config's current data goes
back to its
newest revision that pins other data of it, as kubectl rollout undo
--to-revision would; the canaries of the change first. Workloads that run
older data (held by a halted canary, say) are not touched. Ripple keeps
the undo: it does not roll them forward while the config keeps that
data. The config is not changed: fix it, and the fix rolls as usual.
Writes with your own credentials: needs get on the config and its
copies, list on deployments, statefulsets, daemonsets, replicasets and
controllerrevisions (and rollouts, where served) and patch on the
workloads rolled back in its namespace (the built-in edit role has them).

Usage:
  %[1]s undo configmap/<name> [-n namespace] [flags]
  %[1]s undo secret/<name> [-n namespace] [flags]

Flags:
%[2]s
Connection flags, as kubectl's (-n/--namespace is the config's namespace):
%[3]s`, name, f.own.FlagUsages(), f.connection.FlagUsages())
}

// runUndo runs `undo`.
func runUndo(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	f := newUndoFlags(name)
	f.all.SetOutput(io.Discard)
	if help, err := parseFlags(f.all, args); help {
		f.usage(stdout, name)
		return 0
	} else if err != nil {
		return exitCode(err, stderr, name+" undo")
	}
	if f.all.NArg() != 1 {
		return exitCode(usageError{fmt.Errorf("name one config, as configmap/<name> or secret/<name>")}, stderr, name+" undo")
	}
	err := f.validate()
	if err == nil {
		err = f.undo(ctx, f.all.Arg(0), stdout, stderr)
	}
	return exitCode(err, stderr, name+" undo")
}

// undone is one workload `undo` looked at.
type undone struct {
	w      client.Object
	kind   string
	canary bool
	rb     pin.Rollback
	why    string // why it is left alone
}

func (u undone) String() string { return u.kind + "/" + u.w.GetName() }

// undo rolls back the pinned consumers of the config arg names.
func (f *undoFlags) undo(ctx context.Context, arg string, stdout, stderr io.Writer) error {
	cfg, cfgName, err := configArg(arg)
	if err != nil {
		return err
	}
	c, ns, err := f.connect("ripple-undo")
	if err != nil {
		return err
	}
	_, settings, err := f.settings(ctx, c, f.rippleNamespace, stderr)
	if err != nil {
		return err
	}
	kind, _, _ := strings.Cut(arg, "/")
	what := fmt.Sprintf("%s %s/%s", kind, ns, cfgName)
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: cfgName}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s not found", what)
		}
		return err
	}
	todo, left, err := planUndo(ctx, c, ns, cfg, settings.Plan.Keys.Pinned)
	if err != nil {
		return err
	}
	return f.rollBack(ctx, c, what, todo, left, stdout)
}

// rollBack writes the rollbacks of todo (none with --dry-run) and prints
// them, then the workloads left alone and why.
func (f *undoFlags) rollBack(ctx context.Context, c client.Writer, what string, todo, left []undone, stdout io.Writer) error {
	verb := "Rolled back"
	if f.dryRun {
		verb = "Would roll back"
	}
	fmt.Fprintf(stdout, "%s %d workload(s) reading %s to the revision before its latest change:\n", verb, len(todo), what)
	for _, u := range todo {
		if !f.dryRun {
			if err := u.rb.Apply(ctx, c, u.w, client.FieldOwner("ripple-undo")); err != nil {
				if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
					return fmt.Errorf("%s changed while undoing: run the undo again", u)
				}
				return fmt.Errorf("rolling back %s: %w", u, err)
			}
		}
		canary := ""
		if u.canary {
			canary = " (canary)"
		}
		fmt.Fprintf(stdout, "  %s%s: revision %d, reading %s instead of %s\n", u, canary, u.rb.Revision, u.rb.To.Name(), u.rb.From.Name())
	}
	if len(left) > 0 {
		fmt.Fprintln(stdout, "Left alone:")
		for _, u := range left {
			fmt.Fprintf(stdout, "  %s: %s\n", u, u.why)
		}
	}
	return nil
}

// planUndo sorts the workloads of ns that read cfg into those to roll
// back (the canaries of its latest change first) and those left alone.
func planUndo(ctx context.Context, c client.Reader, ns string, cfg client.Object, key string) (todo, left []undone, err error) {
	ref := refs.Ref{Kind: source.KindOf(cfg), Name: cfg.GetName()}
	canaries, err := canariesOf(ctx, c, ns, ref, cfg)
	if err != nil {
		return nil, nil, err
	}
	ws, err := pinnable(ctx, c, ns)
	if err != nil {
		return nil, nil, err
	}
	changed := pin.NewChanged(cfg, ref)
	for _, u := range ws {
		tpl := templateOf(u.w)
		if !slices.Contains(refs.All(&tpl.Spec), ref) {
			continue
		}
		u.canary = canaries[u.String()]
		u.rb, u.why, err = pin.PlanRollback(ctx, c, u.w, tpl, key, changed)
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("%s: %w", u, err)
		case u.why != "":
			left = append(left, u)
		default:
			todo = append(todo, u)
		}
	}
	// The canaries first: they took the change first.
	slices.SortStableFunc(todo, func(a, b undone) int {
		if a.canary != b.canary {
			if a.canary {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.String(), b.String())
	})
	return todo, left, nil
}

// canariesOf names the canaries ("Kind/name") of the config's newest
// change, when one is recorded and the user may read it.
func canariesOf(ctx context.Context, c client.Reader, ns string, ref refs.Ref, cfg client.Object) (map[string]bool, error) {
	items, err := change.List(ctx, c, ns, ref, false)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apimeta.IsNoMatchError(err) {
		return nil, nil // no ConfigRollouts here, or not the user's to read: no order
	}
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	i := slices.IndexFunc(items, func(cr v1alpha1.ConfigRollout) bool { return cr.Spec.Config.UID == cfg.GetUID() })
	if i >= 0 && items[i].Status.Canary != nil {
		for _, w := range items[i].Status.Canary.Workloads {
			out[w.Kind+"/"+w.Name] = true
		}
	}
	return out, nil
}

// pinnable are the workloads of ns whose revisions pinning can go back
// to: Deployments, StatefulSets, DaemonSets and, where the API server
// serves them and the user may list them, Argo Rollouts.
func pinnable(ctx context.Context, c client.Reader, ns string) ([]undone, error) {
	rollouts := &unstructured.UnstructuredList{}
	rollouts.SetGroupVersionKind(workload.RolloutGVK.GroupVersion().WithKind(workload.RolloutGVK.Kind + "List"))
	var out []undone
	for _, l := range []struct {
		list client.ObjectList
		kind string
	}{
		{&appsv1.DeploymentList{}, "Deployment"}, {&appsv1.StatefulSetList{}, "StatefulSet"}, {&appsv1.DaemonSetList{}, "DaemonSet"},
		{rollouts, workload.RolloutGVK.Kind},
	} {
		err := c.List(ctx, l.list, client.InNamespace(ns))
		if l.list == rollouts && (apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err)) {
			continue // Argo Rollouts not installed, or not the user's to read
		}
		if err != nil {
			return nil, err
		}
		if err := apimeta.EachListItem(l.list, func(o runtime.Object) error {
			if w, ok := o.(client.Object); ok {
				out = append(out, undone{w: w, kind: l.kind})
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// templateOf is w's pod template.
func templateOf(w client.Object) *corev1.PodTemplateSpec {
	switch o := w.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *unstructured.Unstructured:
		// A Rollout with a workloadRef has no template of its own: its
		// revisions are the referenced Deployment's to undo.
		var tpl corev1.PodTemplateSpec
		if m, ok, _ := unstructured.NestedMap(o.Object, "spec", "template"); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tpl) == nil {
			return &tpl
		}
	}
	return &corev1.PodTemplateSpec{}
}
