package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// approveFlags are the flags of `approve`, in three groups for --help.
type approveFlags struct {
	clusterFlags
	all, own        *pflag.FlagSet
	now             bool
	rippleNamespace string
	targets         []target
}

// target is one workload to approve: its kind, as Kind.Name() names it,
// and its name.
type target struct{ kind, name string }

func newApproveFlags(name string) *approveFlags {
	f := &approveFlags{}
	f.bind()
	f.own = pflag.NewFlagSet("approve", pflag.ContinueOnError)
	f.own.BoolVar(&f.now, "now", false, "Roll even outside the workload's reload window: an emergency fix.")
	f.own.StringVar(&f.rippleNamespace, "ripple-namespace", "", "Namespace of the reloader-meta-info ConfigMap of the Ripple whose settings apply; default: the only one labelled reloader.stakater.com/meta-info in the cluster.")
	f.all = f.join(name+" approve", f.own)
	return f
}

func (f *approveFlags) usage(w io.Writer, name string) {
	fmt.Fprintf(w, `Approve the reload a workload with the manual reload policy
(ripple.dev/reload-policy: manual) waits for: the configs that changed and
their current digests, as Ripple plans them now. It writes the approval on
the workload's metadata (the ripple.dev/approval annotation) with your own
credentials, so the API server's audit log says who approved what; Ripple
then rolls exactly that change set, once. A config that changes again
before Ripple acts needs a new approval. Needs patch on the workload; with
per-key reload or --digest=hmac-sha256, also get on Ripple's digest key
(Secret ripple-digest-key in its namespace).

Usage:
  %[1]s approve <kind>/<name> [<kind>/<name> ...] [-n namespace] [--now] [flags]
  %[1]s approve <kind> <name> [<name> ...] [-n namespace] [--now] [flags]

Kinds: deployment (deploy), statefulset (sts), daemonset (ds), cronjob (cj),
job, rollout (ro), deploymentconfig (dc).

Flags:
%[2]s
Connection flags, as kubectl's (-n/--namespace is the workload's namespace):
%[3]s
Ripple's settings: read from its reloader-meta-info ConfigMap (published
when Ripple runs with RELOADER_NAMESPACE set, as the chart sets it), else
the defaults; without it, a workload without its own policy is approved
only with the controller's --reload-policy given. A flag given here
overrides them:
%[4]s`, name, f.own.FlagUsages(), f.connection.FlagUsages(), f.rippleFlags.FlagUsages())
}

// parse parses args; help is true for --help.
func (f *approveFlags) parse(args []string) (help bool, err error) {
	if help, err := parseFlags(f.all, args); help || err != nil {
		return help, err
	}
	f.targets, err = approveTargets(f.all.Args())
	return false, err
}

// approveTargets reads the workloads to approve, as kubectl reads them:
// <kind>/<name> ..., or <kind> <name> ....
func approveTargets(args []string) ([]target, error) {
	if len(args) == 0 {
		return nil, usageError{errors.New("name a workload as <kind>/<name> (several: <kind>/<name> <kind>/<name>, or <kind> <name> <name>)")}
	}
	words := args
	if !strings.Contains(args[0], "/") {
		if len(args) == 1 {
			return nil, usageError{fmt.Errorf("argument %q: name the workload too, as %[1]s/<name> or %[1]s <name>", args[0])}
		}
		words = nil
		for _, name := range args[1:] {
			words = append(words, args[0]+"/"+name)
		}
	}
	out := make([]target, 0, len(words))
	for _, w := range words {
		kind, name, ok := strings.Cut(w, "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			return nil, usageError{fmt.Errorf("argument %q: name a workload as <kind>/<name>", w)}
		}
		k, err := explain.ParseKind(kind)
		if err != nil {
			return nil, usageError{fmt.Errorf("argument %q: %w", w, err)}
		}
		out = append(out, target{kind: k, name: name})
	}
	return out, nil
}

// runApprove runs `approve`; now is the clock of the approval.
func runApprove(ctx context.Context, name string, args []string, stdout, stderr io.Writer, now func() time.Time) int {
	f := newApproveFlags(name)
	f.all.SetOutput(io.Discard)
	help, err := f.parse(args)
	if help {
		f.usage(stdout, name)
		return 0
	}
	if err == nil {
		err = f.validate() // a bad settings flag is named before any connection
	}
	if err != nil {
		return exitCode(err, stderr, name+" approve")
	}
	// Each workload is approved on its own: one that cannot be does not
	// keep the others waiting.
	var errs []error
	for _, t := range f.targets {
		errs = append(errs, f.approve(ctx, t, stdout, now))
	}
	return exitCode(errors.Join(errs...), stderr, name+" approve")
}

// approve plans the workload t as the controller would, and writes the
// approval of what waits.
func (f *approveFlags) approve(ctx context.Context, t target, stdout io.Writer, now func() time.Time) error {
	// Never with Ripple's defaults for its settings: an approval decided
	// otherwise than the controller decides would name digests or keys
	// it never sees.
	w, err := f.readWorkload(ctx, "ripple-approve", f.rippleNamespace, nil, t.kind, t.name)
	if err != nil {
		return err
	}
	c, settings, kind, obj := w.client, w.settings, w.kind, w.obj
	what := fmt.Sprintf("%s %s/%s", kind.Name(), obj.GetNamespace(), t.name)
	// Planned without an approval not yet acted on: this one replaces it
	// and approves the whole change set.
	bare, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%s: cannot copy", what)
	}
	annotations := bare.GetAnnotations()
	delete(annotations, settings.Plan.Keys.Approval)
	bare.SetAnnotations(annotations)
	p, err := explain.Explainer{Reader: c, Settings: settings, Digester: settings.Digester(ctx, c), Now: now}.Plan(ctx, kind, bare)
	if err != nil {
		return err
	}
	w.settings = settings // with what reading the digest key found
	waiting, revisions, err := waitingOf(ctx, c, what, p, w)
	if err != nil {
		return err
	}
	changes := waiting.Changes
	a := plan.ApprovalOf(waiting, whoAmI(ctx, c), now(), f.now)
	if err := writeApproval(ctx, c, obj, settings.Plan.Keys.Approval, a); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("%s changed while approving: approve again to approve what waits now", what)
		}
		return fmt.Errorf("writing the approval on %s: %w", what, err)
	}
	fmt.Fprintf(stdout, "Approved the reload of %s", what)
	if f.now {
		fmt.Fprint(stdout, " (--now: even outside its reload window)")
	}
	fmt.Fprintln(stdout, ":")
	for i, ch := range changes {
		digest := ch.Hash[:min(len(ch.Hash), 12)] // as ReloadPending and explain show it
		switch {
		case ch.Deleted:
			digest = "(deleted)"
		case revisions != nil:
			digest = fmt.Sprintf("(revision %s, resourceVersion %s)", revisions[i], waiting.Versions[ch.Ref])
		}
		fmt.Fprintf(stdout, "  %s %q %s\n", ch.Ref.Kind, ch.Ref.Name, digest)
	}
	return nil
}

// unpublished is where approve looked for Ripple's published settings,
// when it found none and its own default stands for the controller's
// --reload-policy; "" when the settings were found or the flag given.
func unpublished(w workloadRead) string {
	if w.meta.Origin != "" || slices.ContainsFunc(w.settings.Shown, func(s metainfo.Setting) bool {
		return s.Flag == "--reload-policy" && s.From != "default"
	}) {
		return ""
	}
	return w.meta.Searched
}

// approvable returns what of p waits for an approval, or why there is
// nothing to approve. searched, when set, says where no published
// settings were found: a policy from the flag is then approve's default,
// not the controller's, and is not told as the controller's.
func approvable(what string, p plan.Plan, key, searched string) (plan.Awaiting, error) {
	if err := manualOnly(what, p, key, searched); err != nil {
		return plan.Awaiting{}, err
	}
	switch {
	case p.Awaiting != nil:
		return *p.Awaiting, nil
	case len(p.Changes) > 0 && p.Wait > 0:
		return plan.Awaiting{}, fmt.Errorf("%s: the changes in %s are still settling (%s): approve once they wait for approval (ripple explain shows it)", what, strings.Join(names(p.Changes), ", "), p.Wait.Round(time.Second))
	}
	return plan.Awaiting{}, fmt.Errorf("%s: nothing waits for an approval", what)
}

// manualOnly refuses a workload whose policy is not manual: it waits for
// no approval. searched is as approvable's.
func manualOnly(what string, p plan.Plan, key, searched string) error {
	switch {
	case p.Policy != plan.Manual && p.PolicyFrom == plan.FromFlag && searched != "":
		return fmt.Errorf("%s sets no %s, so the controller's --reload-policy applies, and no published settings of Ripple were found (no reloader-meta-info ConfigMap in %s; Ripple publishes it when run with RELOADER_NAMESPACE set, as the chart does): "+
			"name Ripple's namespace with --ripple-namespace, or give the controller's setting, e.g. --reload-policy=manual", what, key, searched)
	case p.Policy != plan.Manual:
		return fmt.Errorf("%s has reload policy %q (from the %s), not manual: it waits for no approval; set %s: manual to gate its reloads", what, p.Policy, p.PolicyFrom, key)
	}
	return nil
}

// keyedUnread says why an approval of digests made with Ripple's digest
// key cannot be made when the user cannot read it: it would name digests
// Ripple never writes, and be refused as superseded.
func keyedUnread(what string, p plan.Plan, w plan.Awaiting, s metainfo.Settings) error {
	if s.KeyUnread == nil {
		return nil
	}
	var keyed []strategy.Change
	for _, c := range w.Changes {
		i := slices.IndexFunc(p.Sources, func(sp plan.SourcePlan) bool { return sp.Ref == c.Ref })
		if s.Config.Digest == digest.HMACSHA256 || (i >= 0 && p.Sources[i].Keys != nil) {
			keyed = append(keyed, c)
		}
	}
	if len(keyed) == 0 {
		return nil
	}
	why := "per-key reload"
	if s.Config.Digest == digest.HMACSHA256 {
		why = "--digest=" + string(digest.HMACSHA256)
	}
	return fmt.Errorf("%s: the digests of %s are keyed (%s) with Ripple's digest key, which your credentials cannot read (needs get on secrets named %s in namespace %s; docs/change-policies.md, who may approve): %w",
		what, strings.Join(names(keyed), ", "), why, digestkey.Secret, s.Namespace, s.KeyUnread)
}

func names(changes []strategy.Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = fmt.Sprintf("%s %q", c.Ref.Kind, c.Ref.Name)
	}
	return out
}

// writeApproval writes the approval on obj's metadata: a merge patch
// locked on the resourceVersion that was planned, so that an approval is
// never written for data Ripple has already moved past.
func writeApproval(ctx context.Context, c client.Client, obj client.Object, key string, a plan.Approval) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"annotations":     map[string]string{key: string(b)},
	}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
}

// whoAmI is the user the credentials authenticate as, for the approval's
// informational "by"; empty when the API server does not say.
func whoAmI(ctx context.Context, c client.Client) string {
	r := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, r); err != nil {
		return ""
	}
	return r.Status.UserInfo.Username
}
