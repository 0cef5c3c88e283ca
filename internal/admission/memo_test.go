package admission

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/impact"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// counted is h with its finder counting the verdicts made.
func counted(h *Handler) *atomic.Int32 {
	var n atomic.Int32
	inner := h.Assessor
	h.Assessor = func() impact.Assessor {
		a := inner()
		find := a.Find
		a.Find = func(ctx context.Context, k workload.Kind, ns string, c refs.Ref) ([]client.Object, error) {
			n.Add(1)
			return find(ctx, k, ns, c)
		}
		return a
	}
	return &n
}

// The same write judged again within MemoTTL is answered from the memo,
// with the same answer; another write, or the same one once the entry
// expired, is judged again.
func TestMemoAnswersTheSameWriteOnce(t *testing.T) {
	h := handler(t, readers("shop", 3, refs.ConfigMap))
	clk, _ := h.Clock.(*clocktesting.FakePassiveClock)
	made := counted(h)
	write := review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil))
	first := h.Handle(t.Context(), write)
	for range 10 {
		if again := h.Handle(t.Context(), write); fmt.Sprint(again.Warnings) != fmt.Sprint(first.Warnings) || again.Allowed != first.Allowed {
			t.Fatalf("the same write again: %v %q, want %v %q", again.Allowed, again.Warnings, first.Allowed, first.Warnings)
		}
	}
	if n := made.Load(); n != 1 {
		t.Errorf("11 reviews of the same write made %d verdicts, want 1", n)
	}
	if len(first.Warnings) != 1 || !strings.Contains(first.Warnings[0], "rolls 3 workloads") {
		t.Fatalf("the verdict: %q", first.Warnings)
	}

	other := review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", map[string]string{"db.url": "postgres://other"}, nil))
	h.Handle(t.Context(), other)
	if n := made.Load(); n != 2 {
		t.Errorf("a write of other data made %d verdicts in all, want 2", n)
	}

	clk.SetTime(clk.Now().Add(MemoTTL - 1))
	h.Handle(t.Context(), write)
	if n := made.Load(); n != 2 {
		t.Errorf("the same write just before MemoTTL made %d verdicts in all, want 2", n)
	}
	clk.SetTime(clk.Now().Add(1))
	h.Handle(t.Context(), write)
	if n := made.Load(); n != 3 {
		t.Errorf("the same write at MemoTTL made %d verdicts in all, want 3", n)
	}
}

// A review let through unchecked is not remembered: the next one gets
// its verdict.
func TestMemoKeepsNoUncheckedAnswer(t *testing.T) {
	h := handler(t, readers("shop", 3, refs.ConfigMap))
	h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil)))
	write := review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", map[string]string{"db.url": "x"}, nil))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if resp := h.Handle(ctx, write); len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "not checked") {
		t.Fatalf("a review whose context ended: %q", resp.Warnings)
	}
	if resp := h.Handle(t.Context(), write); len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "rolls 3 workloads") {
		t.Errorf("the same write once the context holds: %q, want its verdict", resp.Warnings)
	}
}

// The memo holds no data: its key is a MAC under a key of the process's
// own, which another memo (another process) does not share, and what it
// keeps of a verdict is its warning line and counts.
func TestMemoKeyHoldsNoData(t *testing.T) {
	const value = "hunter2-hunter2-hunter2-hunter2-"
	secret := func(v string) *corev1.Secret {
		return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app"}, Data: map[string][]byte{"password": []byte(v)}}
	}
	var m, other memo
	k := m.keyOf("Secret", secret("old"), secret(value))
	for _, part := range [][]byte{[]byte(value), []byte(value[:8]), []byte("aHVudGVyMi1odW50ZXIy")} {
		if bytes.Contains(k[:], part) {
			t.Errorf("the key %x holds %q", k, part)
		}
	}
	if k == other.keyOf("Secret", secret("old"), secret(value)) {
		t.Error("two memos key the same write alike: the key is not the process's own")
	}
	if k != m.keyOf("Secret", secret("old"), secret(value)) {
		t.Error("the same write keyed twice differs")
	}
	if k == m.keyOf("Secret", secret("old"), secret(value+"x")) || k == m.keyOf("Secret", secret(value), secret("old")) ||
		k == m.keyOf("Secret", nil, secret(value)) {
		t.Error("another write has the same key")
	}

	h := handler(t, append(readers("shop", 2, refs.Secret), secret("old")))
	h.Handle(t.Context(), review(t, admissionv1.Update, secret("old"), secret(value)))
	if h.memo.len() != 1 {
		t.Fatalf("the memo holds %d verdicts, want 1", h.memo.len())
	}
	if _, ok := h.memo.cache.Get(k); ok {
		t.Fatal("the handler's memo shares the key of another")
	}
	v, ok := h.memo.cache.Get(h.memo.keyOf("Secret", mustDecode(t, secret("old")), mustDecode(t, secret(value))))
	if !ok {
		t.Fatal("the verdict is not remembered by its write")
	}
	if s := fmt.Sprintf("%+v", v); strings.Contains(s, value) || strings.Contains(s, "aHVudGVy") {
		t.Errorf("the memo keeps %s", s)
	}
}

// mustDecode is obj as the webhook decodes it from a review.
func mustDecode(t *testing.T, obj *corev1.Secret) client.Object {
	t.Helper()
	_, cur, err := (&Handler{}).decode(review(t, admissionv1.Update, obj, obj))
	if err != nil {
		t.Fatal(err)
	}
	return cur
}

// The memo keeps at most MemoSize verdicts, the latest.
func TestMemoIsBounded(t *testing.T) {
	h := handler(t, readers("shop", 1, refs.ConfigMap))
	for i := range MemoSize + 50 {
		h.Handle(t.Context(), review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", map[string]string{"db.url": fmt.Sprint(i)}, nil)))
	}
	if n := h.memo.len(); n != MemoSize {
		t.Errorf("the memo holds %d verdicts after %d writes, want %d", n, MemoSize+50, MemoSize)
	}
}

// At most MaxBigInFlight verdicts of configs read by more than BigVerdict
// workloads are made at once: past them, such a review is let through
// unchecked at once, while a config read by fewer still gets its verdict.
func TestBigVerdictsAreBounded(t *testing.T) {
	objs := readers("shop", BigVerdict+1, refs.ConfigMap)
	objs = append(objs, readers("cafe", 2, refs.ConfigMap)...)
	h := handler(t, objs)
	// What is bounded here is how many big verdicts run at once, not how
	// long one takes: 1,001 readers under the race detector on a busy
	// machine may take longer than DefaultBudget.
	h.Budget = time.Minute
	big := review(t, admissionv1.Update, configMap("shop", before, nil), configMap("shop", after, nil))
	small := review(t, admissionv1.Update, configMap("cafe", before, nil), configMap("cafe", after, nil))
	h.Handle(t.Context(), small) // makes the handler's slots
	for range MaxBigInFlight {
		h.big <- struct{}{}
	}
	if resp := h.Handle(t.Context(), big); len(resp.Warnings) != 1 || resp.Warnings[0] != "ripple: busy checking other writes; this one is not checked" {
		t.Errorf("a big verdict past MaxBigInFlight: %q, want it not checked", resp.Warnings)
	}
	if resp := h.Handle(t.Context(), review(t, admissionv1.Update, configMap("cafe", before, nil), configMap("cafe", map[string]string{"db.url": "x"}, nil))); len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "rolls 2 workloads") {
		t.Errorf("a small verdict meanwhile: %q, want its verdict", resp.Warnings)
	}
	for range MaxBigInFlight {
		<-h.big
	}
	if resp := h.Handle(t.Context(), big); len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], fmt.Sprintf("rolls %d workloads", BigVerdict+1)) {
		t.Errorf("a big verdict once none is in flight: %q, want its verdict", resp.Warnings)
	}
	if n := len(h.big); n != 0 {
		t.Errorf("%d big verdicts still counted in flight after they ended", n)
	}
}

// A big verdict lowers the GC target to bigGOGC while it is made, and
// sets it back after; one set meanwhile by another stands.
func TestBigVerdictLowersTheGCTarget(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	restore := lowGC()
	if got := debug.SetGCPercent(bigGOGC); got != bigGOGC {
		t.Errorf("while a big verdict is made, the GC target is %d, want %d", got, bigGOGC)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after it, the GC target is %d, want 100", got)
	}
	restore = lowGC()
	debug.SetGCPercent(80) // another sets it meanwhile
	restore()
	if got := debug.SetGCPercent(100); got != 80 {
		t.Errorf("after a target set meanwhile, the GC target is %d, want that one (80)", got)
	}
	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	lowGC()()
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("with $GOGC set, the GC target is %d, want $GOGC's", got)
	}
}
