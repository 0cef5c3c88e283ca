package digestkey

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func keySecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ripple", Name: Secret}, Data: data}
}

// Absent, the Secret is created with a random 32-byte key, which the next
// start reads back.
func TestLoadCreatesThenReads(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	ring, err := Load(t.Context(), c, c, "ripple", "ripple")
	if err != nil {
		t.Fatal(err)
	}
	if len(ring.Current) != keyBytes || ring.Previous != nil || bytes.Equal(ring.Current, make([]byte, keyBytes)) {
		t.Fatalf("created ring %+v", ring)
	}
	again, err := Load(t.Context(), c, c, "ripple", "ripple")
	if err != nil || !bytes.Equal(again.Current, ring.Current) {
		t.Fatalf("second start: %x, %v; want the first key %x", again.Current, err, ring.Current)
	}
	other := fake.NewClientBuilder().Build()
	if o, _ := Load(t.Context(), other, other, "ripple", "ripple"); bytes.Equal(o.Current, ring.Current) {
		t.Fatal("two installs drew the same key")
	}
}

// A replica that loses the race to create the Secret reads the winner's
// key: every replica uses one key.
func TestLoadConvergesOnTheWinnersKey(t *testing.T) {
	winner := bytes.Repeat([]byte{7}, keyBytes)
	base := fake.NewClientBuilder().Build()
	c := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			// Another replica created it between our get and our create.
			if err := cl.Create(ctx, keySecret(map[string][]byte{CurrentKey: winner})); err != nil {
				return err
			}
			return cl.Create(ctx, obj, opts...)
		},
	})
	ring, err := Load(t.Context(), c, c, "ripple", "ripple")
	if err != nil || !bytes.Equal(ring.Current, winner) {
		t.Fatalf("got %x, %v; want the winner's key", ring.Current, err)
	}
	var s corev1.Secret
	if err := base.Get(t.Context(), types.NamespacedName{Namespace: "ripple", Name: Secret}, &s); err != nil || !bytes.Equal(s.Data[CurrentKey], winner) {
		t.Fatalf("the Secret holds %x, %v", s.Data[CurrentKey], err)
	}
}

func TestRing(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 40)
	ring, err := Ring(keySecret(map[string][]byte{CurrentKey: k2, PreviousKey: k1}))
	if err != nil || !bytes.Equal(ring.Current, k2) || !bytes.Equal(ring.Previous, k1) {
		t.Fatalf("%+v, %v", ring, err)
	}
	for name, data := range map[string]map[string][]byte{
		"no current key":    {PreviousKey: k1},
		"a short key":       {CurrentKey: []byte("1234")},
		"a short previous":  {CurrentKey: k1, PreviousKey: []byte("1234")},
		"an empty previous": {CurrentKey: k1, PreviousKey: {}},
	} {
		_, err := Ring(keySecret(data))
		if err == nil || !strings.Contains(err.Error(), "Secret ripple/"+Secret) {
			t.Errorf("%s: %v, want an error naming the Secret", name, err)
		}
	}
}
