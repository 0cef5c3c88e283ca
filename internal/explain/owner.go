package explain

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/reason"
)

// reasonReverted is the Warning of a reload another manager undid.
const reasonReverted = string(reason.ReloadReverted)

// restartAdvice is what to do when the template's owner undoes Ripple's
// writes.
const restartAdvice = "let the owner reload it, or restart its pods without touching the template: " +
	"the restart method evict (annotation ripple.dev/restart-method); docs/gitops.md"

// ownership flags a workload whose pod template another controller owns
// (a controller ownerReference) or whose reload was reverted (a
// ReloadReverted event), and says what to do.
func ownership(obj client.Object, events []Event) []string {
	var out []string
	if ref := metav1.GetControllerOf(obj); ref != nil {
		out = append(out, fmt.Sprintf("owned by %s %s (a controller ownerReference): if it re-renders the pod template it removes Ripple's value (a ReloadReverted Warning); %s",
			ref.Kind, ref.Name, restartAdvice))
	}
	for _, e := range events {
		if e.Reason == reasonReverted {
			msg, _, _ := strings.Cut(e.Message, ": ")
			out = append(out, fmt.Sprintf("%s (%s ago): Ripple does not write it again until the next config change; %s", msg, e.Age, restartAdvice))
			break // the newest
		}
	}
	return out
}
