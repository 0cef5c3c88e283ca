package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
)

// resumeFlags are the flags of `resume`.
type resumeFlags struct {
	clusterFlags
	all, own        *pflag.FlagSet
	rippleNamespace string
}

func newResumeFlags(name string) *resumeFlags {
	f := &resumeFlags{}
	f.bind()
	f.own = pflag.NewFlagSet("resume", pflag.ContinueOnError)
	f.own.StringVar(&f.rippleNamespace, "ripple-namespace", "", "Namespace of the reloader-meta-info ConfigMap of the Ripple whose settings apply (its annotation prefix); default: the only one labelled reloader.stakater.com/meta-info in the cluster.")
	f.all = f.join(name+" resume", f.own)
	return f
}

func (f *resumeFlags) usage(w io.Writer, name string) {
	fmt.Fprintf(w, `Continue a canaried config change that its canary halted: the other
workloads roll it anyway. It finds the config's newest change (its
ConfigRollout) and, when its canary halted it, writes that ConfigRollout's
name in the ripple.dev/canary-resume annotation of the config, with your
own credentials; Ripple continues that change, and no other (not a later
change back to the same data). Changing the config again (the fix) needs
no resume: the new change starts from its canaries. Needs get and patch
on the config and list on configrollouts.ripple.dev in its namespace (the
built-in edit role has them), nothing in Ripple's namespace: without its
settings (--ripple-namespace names where they are) the default annotation
prefix, or --annotation-prefix's, is used, and a warning says so.

Usage:
  %[1]s resume configmap/<name> [-n namespace] [flags]
  %[1]s resume secret/<name> [-n namespace] [flags]

Flags:
%[2]s
Connection flags, as kubectl's (-n/--namespace is the config's namespace):
%[3]s`, name, f.own.FlagUsages(), f.connection.FlagUsages())
}

// runResume runs `resume`.
func runResume(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	f := newResumeFlags(name)
	f.all.SetOutput(io.Discard)
	if help, err := parseFlags(f.all, args); help {
		f.usage(stdout, name)
		return 0
	} else if err != nil {
		return exitCode(err, stderr, name+" resume")
	}
	if f.all.NArg() != 1 {
		return exitCode(usageError{fmt.Errorf("name one config, as configmap/<name> or secret/<name>")}, stderr, name+" resume")
	}
	err := f.validate()
	if err == nil {
		err = f.resume(ctx, f.all.Arg(0), stdout, stderr)
	}
	return exitCode(err, stderr, name+" resume")
}

// resume writes the resume annotation of the config named arg; a
// warning goes to stderr.
func (f *resumeFlags) resume(ctx context.Context, arg string, stdout, stderr io.Writer) error {
	obj, cfgName, err := configArg(arg)
	if err != nil {
		return err
	}
	kind, _, _ := strings.Cut(arg, "/")
	c, ns, err := f.connect("ripple-resume")
	if err != nil {
		return err
	}
	// Of the settings only the annotation prefix matters here: without
	// them the default's key is written (or --annotation-prefix's), and
	// stderr says so.
	_, settings, err := f.settings(ctx, c, f.rippleNamespace, stderr)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%s %s/%s", kind, ns, cfgName)
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: cfgName}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s not found", what)
		}
		return err
	}
	// The change is named by its ConfigRollout: a resume continues that
	// change, never a later one, not even of the same data.
	ref := refs.Ref{Kind: source.KindOf(obj), Name: cfgName}
	cr, err := haltedChange(ctx, c, ns, ref, obj.GetUID())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations":     map[string]string{settings.Plan.Keys.CanaryResume: cr.Name},
		"resourceVersion": obj.GetResourceVersion(), // the data resumed is the data read
	}})
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("%s changed while resuming: a new change starts from its canaries; resume again if it halts", what)
		}
		return fmt.Errorf("writing %s on %s: %w", settings.Plan.Keys.CanaryResume, what, err)
	}
	fmt.Fprintf(stdout, "Resumed the change %s of %s: the workloads it holds roll it (ripple explain shows them)\n", cr.Name, what)
	return nil
}

// configArg is the config arg names, as configmap/<name> or
// secret/<name>: an empty object of its kind, and its name.
func configArg(arg string) (client.Object, string, error) {
	kind, name, _ := strings.Cut(arg, "/")
	var obj client.Object
	switch strings.ToLower(kind) {
	case "configmap", "configmaps", "cm":
		obj = &corev1.ConfigMap{}
	case "secret", "secrets":
		obj = &corev1.Secret{}
	default:
		return nil, "", usageError{fmt.Errorf("%q is not a config: name it as configmap/<name> or secret/<name>", arg)}
	}
	if name == "" {
		return nil, "", usageError{fmt.Errorf("%q names no config: use configmap/<name> or secret/<name>", arg)}
	}
	return obj, name, nil
}

// haltedChange is the newest change of the config ref (uid) in ns, read
// with the user's rights, when its canary halted it.
func haltedChange(ctx context.Context, c client.Reader, ns string, ref refs.Ref, uid types.UID) (*v1alpha1.ConfigRollout, error) {
	items, err := change.List(ctx, c, ns, ref, false)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(items, func(cr v1alpha1.ConfigRollout) bool { return cr.Spec.Config.UID == uid })
	switch {
	case i < 0:
		return nil, errors.New("no ConfigRollout of its current data: the change has no canary that halted (ripple explain shows why)")
	case items[i].Status.Canary == nil || items[i].Status.Canary.Phase != string(canary.Halted):
		phase := "not canaried"
		if cn := items[i].Status.Canary; cn != nil {
			phase = cn.Phase
		}
		return nil, fmt.Errorf("its newest change (ConfigRollout %s) did not halt: its canary is %s; nothing to resume", items[i].Name, phase)
	}
	return &items[i], nil
}
