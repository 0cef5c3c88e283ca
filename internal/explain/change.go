package explain

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Change is where a config's current data stands across the workloads
// that use it: `ripple explain configmap/<name>`.
type Change struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// Digest is the short digest of the config's data now.
	Digest string `json:"digest"`
	// Canary is the canaried change of this data as Ripple records it; nil
	// when the change is not canaried, not planned yet, or its record
	// cannot be read.
	Canary *canary.State `json:"canary,omitempty"`
	// Rollout is the newest ConfigRollout of the config, as its status
	// tells the change; nil when there is none, or it cannot be read
	// (no CRD, no right to list them).
	Rollout *ChangeRollout `json:"configRollout,omitempty"`
	// Workloads are those that use the config, with their state.
	Workloads []ChangeWorkload `json:"workloads"`
	// Unplanned are the workloads that may use the config but could not
	// be planned with the user's credentials: another of their configs
	// cannot be read.
	Unplanned []Unplanned `json:"unplanned,omitempty"`
	// Unlisted are the kinds of workload the user may not list, whose
	// workloads are neither shown nor counted.
	Unlisted []Unlisted `json:"unlisted,omitempty"`
	// Unread says why the config could not be read with the user's
	// credentials (a Secret, with the built-in view role): its digest
	// and the workloads' states are then unknown, and only the
	// ConfigRollout, Ripple's own account of the change, is shown.
	Unread string `json:"unread,omitempty"`
}

// Unplanned is a workload explain could not plan, and why.
type Unplanned struct {
	workload.Ref
	Why string `json:"why"`
}

// Unlisted is a kind of workload explain could not list with the user's
// credentials, and why.
type Unlisted struct {
	Kind string `json:"kind"`
	Why  string `json:"why"`
}

// ChangeRollout is a ConfigRollout as explain shows it.
type ChangeRollout struct {
	Name         string          `json:"name"`
	Phase        v1alpha1.Phase  `json:"phase"`
	SeenAt       time.Time       `json:"seenAt,omitzero"`
	PropagatedAt *time.Time      `json:"propagatedAt,omitempty"`
	Counts       v1alpha1.Counts `json:"counts"`
	// TraceID is the change's trace (status.trace), when Ripple exports
	// traces (docs/tracing.md).
	TraceID string `json:"traceID,omitempty"`
}

// ChangeWorkload is one workload that uses the config.
type ChangeWorkload struct {
	workload.Ref
	State  standing.State `json:"state"`
	Reason reason.Reason  `json:"reason"`
	// Canary is set on a canary of the change.
	Canary bool `json:"canary,omitempty"`
}

// Change explains where the current data of config ref in ns stands:
// its canaried change, if any, and the state of every workload of kinds
// in ns that uses it, as `ripple explain` of each says.
func (e Explainer) Change(ctx context.Context, kinds []Kind, ns string, ref refs.Ref) (Change, error) {
	out := Change{Namespace: ns, Kind: string(ref.Kind), Name: ref.Name, Workloads: []ChangeWorkload{}}
	src, err := e.config(ctx, ns, ref)
	switch {
	case apierrors.IsForbidden(err):
		// Every workload's plan needs the data: tell what Ripple records.
		out.Unread = fmt.Sprintf("needs get on %ss in namespace %s (the built-in view role reads no Secrets)", strings.ToLower(string(ref.Kind)), ns)
		out.Rollout = e.rollout(ctx, ns, ref)
		return out, nil
	case err != nil:
		return out, err
	}
	out.Digest = plan.ShortDigest(src.Digest)
	if c, ok, _ := (canaries{reader: e.Reader, ring: e.Digester.Ring, off: !e.Settings.Config.ConfigRollouts}).Canary(ctx, ns, src); ok {
		out.Canary = &c
	}
	if ref.Kind == refs.Secret && e.Digester.Mode == digest.HMACSHA256 {
		// No output of Ripple holds a digest of a Secret (docs/security.md).
		out.Digest = ""
		if out.Canary != nil {
			out.Canary.Digest = ""
		}
	}
	out.Rollout = e.rollout(ctx, ns, ref)
	return out, e.consumers(ctx, kinds, ns, ref, &out)
}

// consumers adds to out each opted-in workload of kinds in ns that uses
// the config ref, with its state, or as not planned when it may use it
// and another of its configs cannot be read.
func (e Explainer) consumers(ctx context.Context, kinds []Kind, ns string, ref refs.Ref, out *Change) error {
	var err error
	out.Unlisted, err = e.each(ctx, kinds, ns, func(kind Kind, obj client.Object, optedIn bool) error {
		if !optedIn {
			return nil
		}
		r, err := e.explain(ctx, kind, obj)
		switch {
		case apierrors.IsForbidden(err) && mayUse(kind, obj, ref, e.Settings.Plan.Keys):
			// Another of its configs is a Secret the user may not read
			// (the built-in view role): told, not guessed.
			out.Unplanned = append(out.Unplanned, Unplanned{Ref: workload.RefTo(kind.Kind, obj), Why: err.Error()})
			return nil
		case apierrors.IsForbidden(err):
			return nil // it does not use the config
		case err != nil:
			return err
		}
		for _, s := range r.Sources {
			if s.Kind == string(ref.Kind) && s.Name == ref.Name {
				cw := ChangeWorkload{Ref: r.Workload, State: r.State, Reason: r.Reason}
				cw.Canary = out.Canary != nil && out.Canary.IsCanary(r.Workload)
				out.Workloads = append(out.Workloads, cw)
				break
			}
		}
		return nil
	})
	return err
}

// mayUse reports whether obj may use the config ref: its pod template or
// its own fields reference it, or its annotations name configs of its kind or search
// them.
func mayUse(kind Kind, obj client.Object, ref refs.Ref, keys annotation.Keys) bool {
	tpl, _ := kind.PodTemplate(obj)
	if tpl != nil && slices.Contains(refs.All(&tpl.Spec), ref) {
		return true
	}
	if fr, ok := kind.Kind.(workload.FieldReferrer); ok {
		fields, _ := fr.FieldRefs(obj)
		if slices.ContainsFunc(fields, func(f refs.FieldRef) bool { return f.Ref == ref }) {
			return true
		}
	}
	for _, key := range []string{keys.ReloadKey(ref.Kind), keys.Search} {
		if _, ok := obj.GetAnnotations()[key]; ok {
			return true
		}
		if _, ok := tplAnnotations(tpl)[key]; ok {
			return true
		}
	}
	return false
}

// config reads the config ref in ns and digests its data, as a source of
// a plan.
func (e Explainer) config(ctx context.Context, ns string, ref refs.Ref) (plan.Source, error) {
	src := plan.Source{Ref: ref}
	key := types.NamespacedName{Namespace: ns, Name: ref.Name}
	if ref.Kind == refs.Secret {
		var s corev1.Secret
		if err := e.Reader.Get(ctx, key, &s); err != nil {
			return src, err
		}
		sums := e.Digester.Secret(&s)
		src.UID, src.Digest, src.Others = s.UID, sums.Digest, sums.Others
		return src, nil
	}
	var cm corev1.ConfigMap
	if err := e.Reader.Get(ctx, key, &cm); err != nil {
		return src, err
	}
	sums := e.Digester.ConfigMap(&cm)
	src.UID, src.Digest, src.Others = cm.UID, sums.Digest, sums.Others
	return src, nil
}

// rollout is the newest ConfigRollout of config ref in ns, read with the
// user's rights in ns; nil when there is none or it cannot be read.
func (e Explainer) rollout(ctx context.Context, ns string, ref refs.Ref) *ChangeRollout {
	items, err := change.List(ctx, e.Reader, ns, ref, false)
	if err != nil || len(items) == 0 {
		return nil // no CRD, or no right to list them: the rest still explains
	}
	newest := &items[0]
	r := &ChangeRollout{Name: newest.Name, Phase: newest.Status.Phase, SeenAt: newest.Status.SeenAt.Time, Counts: newest.Status.Counts}
	if at := newest.Status.PropagatedAt; at != nil {
		r.PropagatedAt = &at.Time
	}
	if tr := newest.Status.Trace; tr != nil {
		r.TraceID = tr.TraceID
	}
	return r
}

// traces sets the trace of the newest change of each config in sources
// (in ns) whose ConfigRollout records one; a change that cannot be read
// has none.
func (e Explainer) traces(ctx context.Context, ns string, sources []Source) {
	if !e.Settings.Config.ConfigRollouts {
		return
	}
	for i, s := range sources {
		if !s.Found || (s.Kind != string(refs.ConfigMap) && s.Kind != string(refs.Secret)) {
			continue
		}
		if r := e.rollout(ctx, ns, refs.Ref{Kind: refs.Kind(s.Kind), Name: s.Name}); r != nil {
			sources[i].Trace = r.TraceID
		}
	}
}

// PrintChange writes the explanation of a config's change in format.
func PrintChange(w io.Writer, format string, c Change) error {
	if format != FormatTable {
		return encode(w, format, c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Config:\t%s %s/%s\n", c.Kind, c.Namespace, c.Name)
	if c.Unread != "" {
		return printUnread(w, &b, c)
	}
	fmt.Fprintf(&b, "Data:\t%s\n", c.Digest)
	if cn := c.Canary; cn != nil {
		fmt.Fprintf(&b, "Canary:\t%s (since %s)\n", canary.Stage(*cn), cn.Since.UTC().Format(time.RFC3339))
		for _, m := range cn.Members {
			applied := "not yet"
			if !m.Applied.IsZero() {
				applied = m.Applied.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(&b, "\t%s %s, applied %s\n", m.Ref.Kind, m.Ref.Name, applied)
		}
	} else {
		fmt.Fprintf(&b, "Canary:\tnone recorded for this data\n")
	}
	printRollout(&b, c.Rollout)
	counts := map[standing.State]int{}
	for _, wl := range c.Workloads {
		counts[wl.State]++
	}
	var parts []string
	for _, s := range standing.States() {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	fmt.Fprintf(&b, "Workloads:\t%d use it: %s\n\nKIND\tNAME\tSTATE\tREASON\tCANARY\n", len(c.Workloads), dash(strings.Join(parts, ", ")))
	for _, wl := range c.Workloads {
		canary := "-"
		if wl.Canary {
			canary = "yes"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\n", wl.Kind, wl.Name, wl.State, wl.Reason, canary)
	}
	printUnplanned(&b, c.Unplanned, c.Unlisted)
	return aligned(w, b.String())
}

// printUnplanned lists the workloads explain could not plan, and the
// kinds it could not list, and why.
func printUnplanned(b *strings.Builder, us []Unplanned, kinds []Unlisted) {
	if len(us)+len(kinds) > 0 {
		fmt.Fprintf(b, "\nNot planned (with your rights):\n")
		for _, u := range us {
			fmt.Fprintf(b, "%s %s: %s\n", u.Kind, u.Name, u.Why)
		}
		for _, k := range kinds {
			fmt.Fprintf(b, "every %s: %s\n", k.Kind, k.Why)
		}
	}
}

func printRollout(b *strings.Builder, r *ChangeRollout) {
	if r != nil {
		fmt.Fprintf(b, "Change:\t%s: %s, %d of %d managed consumers updated, %d stale (seen %s)\n", r.Name, dash(string(r.Phase)),
			r.Counts.Complete, r.Counts.Managed, r.Counts.Stale, r.SeenAt.UTC().Format(time.RFC3339))
		if r.TraceID != "" {
			fmt.Fprintf(b, "Trace:\t%s\n", r.TraceID)
		}
	}
}

// printUnread writes what is known of a config the user may not read:
// the change as Ripple records it, and where its consumers are listed.
func printUnread(w io.Writer, b *strings.Builder, c Change) error {
	fmt.Fprintf(b, "Data:\tnot read: %s\n", c.Unread)
	printRollout(b, c.Rollout)
	if r := c.Rollout; r != nil {
		fmt.Fprintf(b, "Workloads:\tnot planned without the data; Ripple's account of each: kubectl get configrollout %s -n %s -o yaml (status.consumers)\n", r.Name, c.Namespace)
	} else {
		fmt.Fprintf(b, "Workloads:\tnot planned without the data, and no ConfigRollout of %s %q can be read (none yet, no CRD, or no list on configrollouts.ripple.dev)\n", c.Kind, c.Name)
	}
	return aligned(w, b.String())
}
