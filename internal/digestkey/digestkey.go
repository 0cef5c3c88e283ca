// Package digestkey keeps the install's digest key ring (digest.Ring) in
// a Secret of Ripple's own namespace: Ripple creates it at its first
// start, every replica reads the same one, and an operator rotates it.
package digestkey

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
)

// Secret is the name of the Secret, in Ripple's own namespace, that holds
// the key ring.
const Secret = "ripple-digest-key"

// The Secret's data keys: the key digests are made with, and the one
// before it (after a rotation), whose digests are still recognised.
const (
	CurrentKey  = "current"
	PreviousKey = "previous"
)

// keyBytes is the size of a generated key, and the least accepted: the
// output size of SHA-256, as HMAC wants.
const keyBytes = 32

// Load reads the key ring from the Secret in namespace through r (around
// the cache, which drops Secrets' data), and creates the Secret with a new
// random key through c when it does not exist. Replicas starting together
// race to create it: the losers get AlreadyExists and read the winner's.
func Load(ctx context.Context, r client.Reader, c client.Client, namespace, fieldOwner string) (digest.Ring, error) {
	name := types.NamespacedName{Namespace: namespace, Name: Secret}
	secret := &corev1.Secret{}
	err := r.Get(ctx, name, secret)
	if apierrors.IsNotFound(err) {
		key := make([]byte, keyBytes)
		if _, err := rand.Read(key); err != nil {
			return digest.Ring{}, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: Secret},
			Data:       map[string][]byte{CurrentKey: key},
		}
		err = c.Create(ctx, secret, client.FieldOwner(fieldOwner))
		if apierrors.IsAlreadyExists(err) {
			err = r.Get(ctx, name, secret)
		}
	}
	if err != nil {
		return digest.Ring{}, fmt.Errorf("the digest key, Secret %s/%s: %w", namespace, Secret, err)
	}
	return Ring(secret)
}

// Read reads the key ring from the Secret in namespace, without creating
// it: `ripple explain` does, with its user's credentials.
func Read(ctx context.Context, r client.Reader, namespace string) (digest.Ring, error) {
	secret := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: Secret}, secret); err != nil {
		return digest.Ring{}, fmt.Errorf("the digest key, Secret %s/%s: %w", namespace, Secret, err)
	}
	return Ring(secret)
}

// Ring is the key ring a Secret holds. A current key is required; a
// previous one is optional. Both must be at least 32 bytes.
func Ring(secret *corev1.Secret) (digest.Ring, error) {
	ring := digest.Ring{Current: secret.Data[CurrentKey], Previous: secret.Data[PreviousKey]}
	what := fmt.Sprintf("the digest key, Secret %s/%s", secret.Namespace, secret.Name)
	if len(ring.Current) < keyBytes {
		return digest.Ring{}, fmt.Errorf("%s: data key %q holds %d bytes, want at least %d random bytes (docs/security.md: rotating the key)",
			what, CurrentKey, len(ring.Current), keyBytes)
	}
	if _, ok := secret.Data[PreviousKey]; ok && len(ring.Previous) < keyBytes {
		return digest.Ring{}, fmt.Errorf("%s: data key %q holds %d bytes, want at least %d random bytes, or no %q",
			what, PreviousKey, len(ring.Previous), keyBytes, PreviousKey)
	}
	return ring, nil
}
