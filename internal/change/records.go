package change

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/canary"
)

// Records are the canary records a Ripple before canaries lived on
// ConfigRollouts kept: ConfigMaps ripple-canary-<hash> in its namespace.
// A canaried change in flight across the upgrade (a bake, a halt) is
// carried over from its record once, when its ConfigRollout first needs a
// canary, and the record is then deleted: it is neither lost nor rolled
// early, and nothing is left behind.
type Records struct {
	// Reader reads the records from the API server (the cache drops
	// configs' data); Client deletes them.
	Reader    client.Reader
	Client    client.Client
	Namespace string
}

// Carry is the canaried change of key's config at data digest that its
// record holds; false when there is none, it cannot be read, it is of
// other data (deleted then), or it is not the record of this config (a
// record is verified before it is acted on). others are the other forms
// of the same data's digest (an earlier Ripple wrote its record with the
// form it wrote then): a record of one of them is of this data.
func (r *Records) Carry(ctx context.Context, key Key, digest string, others []string) (canary.State, bool) {
	if r == nil || r.Namespace == "" {
		return canary.State{}, false
	}
	var cm corev1.ConfigMap
	if err := r.Reader.Get(ctx, r.name(key), &cm); err != nil {
		if !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "reading the canary record an earlier Ripple kept; choosing the canaries anew", "record", r.name(key).String())
		}
		return canary.State{}, false
	}
	c, err := canary.ParseRecord(cm.Data[canary.RecordKey], key.Namespace, key.Config)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("ignoring a canary record", "record", klog.KObj(&cm), "error", err.Error())
		return canary.State{}, false
	}
	if c.Digest != digest && !slices.Contains(others, c.Digest) {
		r.Drop(ctx, key) // of a change the config has moved past
		return canary.State{}, false
	}
	c.Digest = digest
	return c, true
}

// Drop deletes key's record; a failure is logged, and the record stays
// until the config's next canaried change.
func (r *Records) Drop(ctx context.Context, key Key) {
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = r.Namespace, r.name(key).Name
	if err := client.IgnoreNotFound(r.Client.Delete(ctx, cm)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "deleting a canary record carried over to its ConfigRollout", "record", klog.KObj(cm))
	}
}

func (r *Records) name(key Key) types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: canary.RecordName(key.Namespace, key.Config)}
}
