package admission

import (
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/ripple-dev/ripple/internal/refs"
)

// BenchmarkVerdict is a verdict's cost in CPU and memory, in process and
// without an API server: reviews of a config read by 100 and by 5,000
// auto-reloaded Deployments, read from manifests, each review with data
// of its own (the memo never answers). BenchmarkAdmissionLatency times
// the webhook on a real API server.
func BenchmarkVerdict(b *testing.B) {
	for _, n := range []int{100, 5000} {
		b.Run(fmt.Sprintf("readers-%d", n), func(b *testing.B) {
			h := handler(b, readers("shop", n, refs.ConfigMap))
			h.Budget = 1e12 // the cost, however long it takes
			i := 0
			for b.Loop() {
				i++
				req := review(b, admissionv1.Update, configMap("shop", before, nil), configMap("shop", map[string]string{"db.url": fmt.Sprint(i)}, nil))
				if resp := h.Handle(b.Context(), req); len(resp.Warnings) != 1 {
					b.Fatal(resp.Warnings)
				}
			}
		})
	}
}
