package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
)

// --kube-api-qps and --kube-api-burst limit, for the whole process, the
// requests that are not reloads or Events (watches are never limited, by
// client-go). The reload writes and their Events are not held by the
// limit: at 1 request per second, as with the defaults, the ten workloads
// are patched and their Reloaded Events created at once. (Events have a
// budget of their own since a fan-out's Events held every other request
// of the process on the shared one.)
func TestKubeAPIQPS(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"1 per second", []string{"--kube-api-qps=1", "--kube-api-burst=1"}},
		{"defaults", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, tc.args...)
			deploy := kit.Deployment
			cm := refs.Ref{Kind: refs.ConfigMap, Name: "shared"}
			e.newConfig(t, cm)
			var ws []client.Object
			for i := range 10 {
				ws = append(ws, e.newWorkload(t, deploy, fmt.Sprintf("w%d", i), ann(autoKey, "true"), envFrom(cm.Kind, cm.Name)))
			}
			for _, w := range ws {
				e.waitFor(t, w, "the baseline record", hasBaseline)
			}
			changed := time.Now()
			sum := e.setConfig(t, cm, "v2")
			for _, w := range ws {
				e.waitApplied(t, deploy, w, cm, sum)
			}
			if took := time.Since(changed); took > 5*time.Second {
				t.Errorf("ten reloads took %s: reload writes were throttled", took)
			}
			var all time.Duration
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if e.reloadedEvents(t.Context()) == len(ws) {
					all = time.Since(changed)
					break
				}
			}
			t.Logf("%d Reloaded events after %s", len(ws), all)
			switch {
			case all == 0:
				t.Fatalf("only %d of %d Reloaded events after 30s", e.reloadedEvents(t.Context()), len(ws))
			case all > 4*time.Second:
				t.Errorf("the %d Events took %s: --kube-api-qps held them", len(ws), all)
			}
		})
	}
}

// reloadedEvents counts the Normal Reloaded Events in e's namespace.
func (e *env) reloadedEvents(ctx context.Context) int {
	notes, _ := kit.EventNotes(ctx, e.cs, e.ns, kit.EventMatch{Reason: string(reason.Reloaded), Type: corev1.EventTypeNormal})
	return len(notes)
}
