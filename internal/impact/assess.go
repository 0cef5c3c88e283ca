package impact

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Finder lists the workloads of kind in ns that may use config: the
// controller's cache index (dependents.Index.Of), or every workload of
// the kind (Listed) where there is no index, as in manifest files. It
// may list more than use it: the planner decides.
type Finder func(ctx context.Context, kind workload.Kind, ns string, config refs.Ref) ([]client.Object, error)

// Assessor makes the verdict of a write of a config from what Reader
// holds of the rest of the cluster: the workloads, their Namespaces and
// the other configs, as manifest files (`ripple plan`) or the
// controller's caches (an admission webhook) hold them. Both make it
// here, so that both say the same of the same state.
type Assessor struct {
	Reader   client.Reader
	Settings plan.Settings
	// Kinds are the workload kinds Ripple reloads.
	Kinds []workload.Kind
	Find  Finder
	// Digester digests the configs as the controller's caches do.
	Digester digest.Digester
	// Rollouts reads how a workload's rollout stands by its status
	// (workload.RolloutOf); nil where the objects hold no status
	// (manifest files): complete.
	Rollouts func(workload.Kind, client.Object) rollout.Status
	// Canaries says whether a canaried change can be kept (the
	// admission webhook: the CRD served, ConfigRollouts on): a new
	// change has no canary yet, so it only ever answers none, or why none
	// can be kept; nil (manifest files) takes it that one can.
	Canaries gather.CanaryReader
	// Blind makes the verdict from the write alone, never from what the
	// workloads run: the config's data, before and after, is digested
	// under a key of the call's own (source.TransformBlind), which no
	// workload shows. The admission webhook sets it: whoever reaches its
	// port can send a review of any namespace's Secret, and a verdict
	// that compared the write with what its readers run would tell them
	// whether a guess of the data is right. A write back to the data the
	// readers run is then told as rolling them, a harmless over-warning.
	Blind bool
	// Admit, when set, is asked before a verdict gathers any reader, with
	// how many workloads may read the config: an error ends the verdict
	// with it, and release is called once the verdict is made. The
	// admission webhook bounds its large verdicts so.
	Admit func(readers int) (release func(), err error)
}

// Assess is the verdict of writing cur, a ConfigMap or Secret, over old
// (nil when cur is created; cur is nil when old is deleted), at now.
// Neither is changed. It is Of of Consumers, made a chunk of readers at a
// time (stream.go), so that a config read by thousands costs memory for
// a chunk of them only.
func (a Assessor) Assess(ctx context.Context, old, cur client.Object, now time.Time) (Verdict, error) {
	ch, g, objs, err := a.found(ctx, old, cur)
	if err != nil {
		return Verdict{}, err
	}
	if a.Admit != nil {
		release, err := a.Admit(len(objs))
		if err != nil {
			return Verdict{}, err
		}
		defer release()
	}
	return a.stream(ctx, ch, g, objs, now)
}

// Consumers reads the write of cur over old as a Change, and the
// workloads that may read cur with their plan inputs gathered as the
// write leaves it: what Of decides from.
func (a Assessor) Consumers(ctx context.Context, old, cur client.Object) (Change, []Consumer, error) {
	ch, g, objs, err := a.found(ctx, old, cur)
	if err != nil {
		return ch, nil, err
	}
	cs, err := a.gathered(ctx, g, objs)
	return ch, cs, err
}

// found is a workload of kind that may read the config.
type found struct {
	kind workload.Kind
	obj  client.Object
}

// found reads the write of cur over old as a Change, the gatherer that
// reads the config as the write leaves it, and the workloads that may
// read it.
func (a Assessor) found(ctx context.Context, old, cur client.Object) (Change, gather.Gatherer, []found, error) {
	either := cur
	if either == nil {
		either = old
	}
	kind := source.KindOf(either)
	if kind == "" {
		return Change{}, gather.Gatherer{}, nil, fmt.Errorf("%T is not a ConfigMap or a Secret", either)
	}
	ch := Change{Namespace: either.GetNamespace(), Config: refs.Ref{Kind: kind, Name: either.GetName()}}
	r := withConfig{Reader: a.Reader, kind: kind, key: client.ObjectKeyFromObject(either)}
	digestOf := a.digestOf()
	if cur != nil {
		r.config = digestOf(cur)
		ch.After = &digest.Form{Digest: source.Digest(r.config), Keys: source.Keys(r.config)}
	}
	if old != nil {
		prev := digestOf(old)
		ch.Before = &digest.Form{Digest: source.Digest(prev), Keys: source.Keys(prev)}
	}
	var objs []found
	for _, k := range a.Kinds {
		of, err := a.Find(ctx, k, ch.Namespace, ch.Config)
		if err != nil {
			return ch, gather.Gatherer{}, nil, err
		}
		for _, obj := range of {
			objs = append(objs, found{k, obj})
		}
	}
	g := gather.Gatherer{Reader: r, Settings: a.Settings, Digester: a.Digester, Canaries: a.Canaries}
	return ch, g, objs, nil
}

// gathered are the consumers among objs, gathered with g, in their order.
func (a Assessor) gathered(ctx context.Context, g gather.Gatherer, objs []found) ([]Consumer, error) {
	cs := make([]*Consumer, len(objs))
	errs := make([]error, len(objs))
	err := eachAtOnce(ctx, len(objs), func(i int) { cs[i], errs[i] = a.consumer(ctx, g, objs[i].kind, objs[i].obj) })
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, err
	}
	out := make([]Consumer, 0, len(cs))
	for _, c := range cs {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out, nil
}

// consumer is obj, of kind, gathered with g as a consumer; nil when it has
// nothing to roll.
func (a Assessor) consumer(ctx context.Context, g gather.Gatherer, k workload.Kind, obj client.Object) (*Consumer, error) {
	tpl, err := workload.Template(ctx, g.Reader, k, obj)
	if err != nil {
		return nil, err
	}
	if tpl == nil || obj.GetDeletionTimestamp() != nil {
		return nil, nil // nothing to roll
	}
	in, err := g.Input(ctx, k, obj, tpl)
	if err != nil {
		return nil, fmt.Errorf("reading the configs of %s %s/%s: %w", k.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	c := &Consumer{Ref: workload.RefTo(k, obj), Input: in,
		First: canary.IsFirst(obj.GetAnnotations(), a.Settings.Keys), Idle: rollout.Idle(obj) != "", Zero: rollout.ScaledToZero(obj)}
	if a.Rollouts != nil {
		st := a.Rollouts(k, obj)
		c.Rollout = &st
	}
	return c, nil
}

// digestOf digests the two versions of the written config: as the
// controller's caches do, or when Blind under one key made for this call.
func (a Assessor) digestOf() func(client.Object) client.Object {
	if !a.Blind {
		return func(obj client.Object) client.Object { return digested(a.Digester, obj) }
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // it never fails: it crashes the process instead
	return func(obj client.Object) client.Object {
		c, _ := obj.DeepCopyObject().(client.Object)
		source.TransformBlind(key, c)
		return c
	}
}

// digested is a copy of a config with its data replaced by its digests,
// as the controller's cache holds it (source.Transform): nothing after
// this holds the data.
func digested(d digest.Digester, obj client.Object) client.Object {
	c, _ := obj.DeepCopyObject().(client.Object)
	_, _ = source.Transform(d, c) // a ConfigMap or Secret: it cannot fail
	return c
}

// Listed is the Finder of a reader without an index: every workload of
// the kind in the namespace (a kind whose API is not served has none).
func Listed(r client.Reader) Finder {
	return func(ctx context.Context, kind workload.Kind, ns string, _ refs.Ref) ([]client.Object, error) {
		list := kind.NewList()
		err := r.List(ctx, list, client.InNamespace(ns))
		if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", kind.Name(), err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		out := make([]client.Object, 0, len(items))
		for _, item := range items {
			if obj, ok := item.(client.Object); ok {
				out = append(out, obj)
			}
		}
		return out, nil
	}
}

// withConfig reads the config of kind at key as the write leaves it,
// digested, in place of what Reader holds of it (a cache holds the
// version before the write): config, or not found once deleted (nil).
type withConfig struct {
	client.Reader
	kind   refs.Kind
	key    client.ObjectKey
	config client.Object
}

func (r withConfig) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key != r.key || source.KindOf(obj) != r.kind {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	switch c := r.config.(type) {
	case *corev1.ConfigMap:
		if o, ok := obj.(*corev1.ConfigMap); ok { // KindOf(obj) says it is
			c.DeepCopyInto(o)
		}
	case *corev1.Secret:
		if o, ok := obj.(*corev1.Secret); ok {
			c.DeepCopyInto(o)
		}
	default:
		return apierrors.NewNotFound(corev1.Resource(strings.ToLower(string(r.kind))+"s"), key.Name)
	}
	return nil
}

// SameData reports whether two versions of a config hold the same data,
// by their digests.
func (a Assessor) SameData(x, y client.Object) bool {
	return source.Digest(digested(a.Digester, x)) == source.Digest(digested(a.Digester, y))
}
