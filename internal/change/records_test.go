package change

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/workload"
)

// An earlier Ripple's record is carried over when it is of the config's
// data in any of its digest's forms (the form that Ripple wrote, as after
// an upgrade that binds keyed digests to their config), as the change of
// the current form; a record of other data is deleted.
func TestRecordsCarryAnyFormOfTheData(t *testing.T) {
	key := Key{Namespace: "shop", Config: config}
	rec := canary.State{Namespace: "shop", Config: config, Digest: "unbound", Phase: canary.Halted, Since: t0, Why: "stalled",
		Members: []canary.Member{{Ref: workload.Ref{Kind: "Deployment", Namespace: "shop", Name: "a"}, Applied: t0.Add(-time.Minute)}}}
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	record := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ripple", Name: canary.RecordName("shop", config)},
			Data: map[string]string{canary.RecordKey: string(data)}}
	}
	c := fake.NewClientBuilder().WithObjects(record()).Build()
	r := &Records{Reader: c, Client: c, Namespace: "ripple"}
	got, ok := r.Carry(t.Context(), key, "bound", []string{"sha1", "unbound"})
	if !ok || got.Phase != canary.Halted || got.Digest != "bound" {
		t.Fatalf("a record of another form of the data: %+v, %v; want the halt carried, as the current form's", got, ok)
	}
	if _, ok := r.Carry(t.Context(), key, "other-data", []string{"other-sha1"}); ok {
		t.Fatal("a record of other data was carried")
	}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "ripple", Name: canary.RecordName("shop", config)}, &corev1.ConfigMap{}); err == nil {
		t.Error("the record of other data was not deleted")
	}
}
