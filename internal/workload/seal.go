package workload

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RecordKeySecret is the Secret, in Ripple's own namespace, holding the
// key that seals the Job re-create records. Ripple creates it the first
// time it needs it.
const RecordKeySecret = "ripple-job-record-key"

// recordKeyData is the Secret's data key: 32 random bytes (AES-256).
const recordKeyData = "key"

// sealer seals and opens re-create records with the key in RecordKeySecret,
// loaded (or created) once and shared by the copies of the Job kind.
//
// A record is sealed with AES-256-GCM, its name and the UID of the Job it
// replaces as additional data: one that anybody else wrote, altered, or
// copied under another name does not open, and the tenant's Job spec
// (literal env values included) is not readable in Ripple's namespace.
type sealer struct {
	mu  sync.Mutex
	key []byte
}

// aead returns the cipher of the record key, reading the Secret through r
// (around the cache, which drops Secrets' data) and creating it with c
// when it does not exist.
func (s *sealer) aead(ctx context.Context, r client.Reader, c client.Client, namespace string) (cipher.AEAD, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key == nil {
		key, err := loadKey(ctx, r, c, namespace)
		if err != nil {
			return nil, fmt.Errorf("the Job re-create record key, Secret %s/%s: %w", namespace, RecordKeySecret, err)
		}
		s.key = key
	}
	block, err := aes.NewCipher(s.key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// loadKey reads the key Secret, or creates it; another Ripple creating it
// at the same time wins, and its key is read.
func loadKey(ctx context.Context, r client.Reader, c client.Client, namespace string) ([]byte, error) {
	name := types.NamespacedName{Namespace: namespace, Name: RecordKeySecret}
	secret := &corev1.Secret{}
	err := r.Get(ctx, name, secret)
	if apierrors.IsNotFound(err) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: RecordKeySecret},
			Immutable:  ptr.To(true),
			Data:       map[string][]byte{recordKeyData: key},
		}
		err = c.Create(ctx, secret, client.FieldOwner(FieldManager))
		if apierrors.IsAlreadyExists(err) {
			err = r.Get(ctx, name, secret)
		}
	}
	if err != nil {
		return nil, err
	}
	if key := secret.Data[recordKeyData]; len(key) == 32 {
		return key, nil
	}
	return nil, fmt.Errorf("data key %q does not hold 32 bytes", recordKeyData)
}

// errUnsealed is why a record that does not open is refused.
var errUnsealed = errors.New("it is not sealed with Ripple's record key (written by hand, altered, copied under another name, " +
	"or by an earlier Ripple, which did not seal them): no Job is created from it")

// seal encrypts plain for the record named name that replaces uid.
func seal(aead cipher.AEAD, name, uid string, plain []byte) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plain, []byte(name+"\n"+uid)), nil
}

// open decrypts a sealed record named name that replaces uid.
func open(aead cipher.AEAD, name, uid string, sealed []byte) ([]byte, error) {
	if len(sealed) < aead.NonceSize() {
		return nil, errUnsealed
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(name+"\n"+uid))
	if err != nil {
		return nil, errUnsealed
	}
	return plain, nil
}
