// Package history answers "which config did revision 7 run with?": it
// lists the revisions of a workload the cluster still keeps (a
// Deployment's or an Argo Rollout's ReplicaSets, a StatefulSet's or a
// DaemonSet's ControllerRevisions) with the configs and digests each was
// built for, whether a reload or someone else started it, and for the
// current one which configs changed since.
//
// What a revision was built for is read back from its pod template the way
// the planner reads what was applied (package strategy: the STAKATER_*
// env vars or the last-reloaded-from annotation), else from Ripple's
// applied record, which the deployment controller (and Argo Rollouts)
// copies from the workload onto each ReplicaSet. Build is pure; Read does
// the I/O for `ripple history`, gathering the current digests through the
// same code as `ripple explain`.
package history

import (
	"cmp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Revision is one revision of a workload as the cluster keeps it.
type Revision struct {
	Number int64
	// Earlier are the numbers the revision had before its template came
	// back (a Deployment's or Rollout's revision-history annotation).
	Earlier []int64
	// Object names what holds it: "ReplicaSet/web-5d8f7c9b4" or
	// "ControllerRevision/db-6c4b9f".
	Object  string
	Created time.Time
	// Template is the revision's pod template, without the hash label its
	// controller adds.
	Template *corev1.PodTemplateSpec
	// Annotations are the revision object's own. A ReplicaSet's hold a
	// copy of its Deployment's (or Rollout's) taken while it was the
	// newest, Ripple's applied record included.
	Annotations map[string]string
}

// Input is what a history is built from.
type Input struct {
	Workload  Workload
	Revisions []Revision
	Keys      annotation.Keys
	// Strategy is the reload strategy of the Ripple; the other one's
	// slots are read too, after it (the strategy may have been switched).
	Strategy strategy.Strategy
	// Configs are the configs that may reload the workload now, as
	// gathered: the names the env vars of a revision may stand for.
	Configs []refs.Ref
	// Now is the current state of each config in Configs.
	Now map[refs.Ref]Now
}

// Now is a config as it is now.
type Now struct {
	Found bool
	// Digest is the digest a reload would write now.
	Digest string
}

// Workload names the workload.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// StartedBy says who started a revision.
type StartedBy string

// Who starts a revision.
const (
	// ByRipple: only what a reload writes changed from the previous
	// revision. Stakater Reloader writes the same values, so a revision it
	// started reads the same.
	ByRipple StartedBy = "ripple"
	// ByOther: more of the template changed (an apply, helm upgrade,
	// kubectl set image, rollout restart or undo), or it is the first.
	ByOther StartedBy = "other"
	// ByUnknown: the evidence does not tell (the previous revision is no
	// longer kept, or the template returned to an earlier one).
	ByUnknown StartedBy = "unknown"
)

// History is the answer of `ripple history`.
type History struct {
	Workload Workload `json:"workload"`
	// Strategy is the reload strategy the digests were read for first.
	Strategy  string `json:"strategy"`
	Revisions []Row  `json:"revisions"`
	// Current is the newest revision compared with the configs' data now;
	// nil when no revision is kept.
	Current *Current `json:"current,omitempty"`
}

// Row is one revision.
type Row struct {
	Revision int64   `json:"revision"`
	Earlier  []int64 `json:"earlierRevisions,omitempty"`
	Object   string  `json:"object"`
	// Created is when its ReplicaSet or ControllerRevision was created: a
	// revision whose template came back keeps its first creation time.
	Created time.Time `json:"created"`
	Current bool      `json:"current"`
	// Configs are the configs it was built for.
	Configs   []Config  `json:"configs"`
	StartedBy StartedBy `json:"startedBy"`
	// Reason is the evidence for StartedBy.
	Reason string `json:"reason"`
	// Changes are what changed from the previous revision: configs
	// ("ConfigMap/app") and parts of the template ("image of app").
	Changes []string `json:"changes,omitempty"`
}

// Config is a config a revision was built for.
type Config struct {
	Kind string `json:"kind"`
	// Name is empty for an env var that names no config the workload
	// uses now (Slot then says which).
	Name string `json:"name,omitempty"`
	// Digest is the short digest of the data it was built for; empty
	// when the revision records none.
	Digest string `json:"digest,omitempty"`
	// From says where the digest was read: env (the STAKATER_* env var),
	// annotation (last-reloaded-from), record (Ripple's applied record),
	// deleted (a reload for its deletion), or empty.
	From string `json:"from,omitempty"`
	// Slot is the env var, for a config without a name.
	Slot string `json:"slot,omitempty"`
	// full is the whole digest, compared with the data now.
	full string
}

// hiddenDigest stands for a digest of a Secret in a history.
const hiddenDigest = "hidden"

// withoutSecretDigests hides every digest of a Secret in h: under
// --digest=hmac-sha256 no output of Ripple holds one (docs/security.md).
// A changed config stays told as changed.
func (h *History) withoutSecretDigests() {
	secret := string(refs.Secret)
	for i := range h.Revisions {
		for j := range h.Revisions[i].Configs {
			if c := &h.Revisions[i].Configs[j]; c.Kind == secret && c.Digest != "" {
				c.Digest = hiddenDigest
			}
		}
	}
	if h.Current == nil {
		return
	}
	for i := range h.Current.Changed {
		if c := &h.Current.Changed[i]; strings.HasPrefix(c.Config, secret+"/") {
			c.BuiltFor, c.Now = hide(c.BuiltFor), hide(c.Now)
		}
	}
}

func hide(sum string) string {
	if sum == "" {
		return ""
	}
	return hiddenDigest
}

// Ref returns the config's ref; ok is false without a name.
func (c Config) Ref() (refs.Ref, bool) {
	return refs.Ref{Kind: refs.Kind(c.Kind), Name: c.Name}, c.Name != ""
}

// String names the config: "ConfigMap/app".
func (c Config) String() string {
	if c.Name == "" {
		return c.Kind + "/?" + c.Slot
	}
	return c.Kind + "/" + c.Name
}

// Current says whether the current revision's pods read data newer than
// what it was built for.
type Current struct {
	Revision int64 `json:"revision"`
	// Changed are the configs whose data changed since it was built.
	Changed []Changed `json:"changedSince"`
	// Unknown are configs it uses that it records no digest for.
	Unknown []string `json:"unknown,omitempty"`
	// Unread says why the configs' data now was not compared: one of them
	// may not be read with the user's credentials (a Secret, with the
	// built-in view role); Changed is then empty.
	Unread string `json:"unread,omitempty"`
}

// Changed is a config changed since a revision was built.
type Changed struct {
	Config   string `json:"config"`
	BuiltFor string `json:"builtFor"`
	// Now is the short digest now; empty when the config was deleted.
	Now     string `json:"now,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
}

// digestLen is how much of a digest is shown, as in `ripple explain`.
const digestLen = 12

func short(sum string) string {
	if len(sum) > digestLen {
		return sum[:digestLen]
	}
	return sum
}

// Build builds the history of in's revisions, oldest first. It reads
// nothing.
func Build(in Input) History {
	h := History{Workload: in.Workload, Revisions: []Row{}}
	if in.Strategy != nil {
		h.Strategy = in.Strategy.Name()
	}
	revs := slices.Clone(in.Revisions)
	slices.SortFunc(revs, func(a, b Revision) int { return cmp.Compare(a.Number, b.Number) })
	byNumber := map[int64]int{}
	for i, r := range revs {
		byNumber[r.Number] = i
		for _, n := range r.Earlier {
			if _, ok := byNumber[n]; !ok {
				byNumber[n] = i
			}
		}
	}
	built := make([][]Config, len(revs))
	for i, r := range revs {
		built[i] = configs(in, r)
	}
	for i, r := range revs {
		row := Row{Revision: r.Number, Earlier: r.Earlier, Object: r.Object, Created: r.Created, Configs: built[i]}
		var prev *Revision
		var prevConfigs []Config
		if j, ok := byNumber[r.Number-1]; ok && j != i {
			prev, prevConfigs = &revs[j], built[j]
		}
		row.StartedBy, row.Reason, row.Changes = started(r, prev, built[i], prevConfigs)
		h.Revisions = append(h.Revisions, row)
	}
	if n := len(h.Revisions); n > 0 {
		h.Revisions[n-1].Current = true
		h.Current = current(in, h.Revisions[n-1])
	}
	return h
}

// current compares what row was built for with the configs now.
func current(in Input, row Row) *Current {
	c := &Current{Revision: row.Revision, Changed: []Changed{}}
	for _, cfg := range row.Configs {
		ref, ok := cfg.Ref()
		if !ok {
			continue
		}
		now, known := in.Now[ref]
		switch {
		case !known:
			// Not a config the workload may reload by now: nothing to
			// compare with.
		case cfg.full == "":
			if now.Found {
				c.Unknown = append(c.Unknown, cfg.String())
			}
		case !now.Found && cfg.From != fromDeleted:
			c.Changed = append(c.Changed, Changed{Config: cfg.String(), BuiltFor: cfg.Digest, Deleted: true})
		case now.Found && now.Digest != "" && now.Digest != cfg.full:
			c.Changed = append(c.Changed, Changed{Config: cfg.String(), BuiltFor: cfg.Digest, Now: short(now.Digest)})
		}
	}
	return c
}
