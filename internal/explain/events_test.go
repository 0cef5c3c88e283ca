package explain

import (
	"testing"

	"github.com/ripple-dev/ripple/internal/reason"
)

// explain shows every Event reason Ripple records (RestartFailed was once
// left out), and no other controller's.
func TestEventsOfRipple(t *testing.T) {
	for _, i := range reason.All() {
		if ripples(string(i.Reason)) != i.Event {
			t.Errorf("%s: shown %v, an Event %v", i.Reason, ripples(string(i.Reason)), i.Event)
		}
	}
	if !ripples("RestartFailed") {
		t.Error("RestartFailed is not shown")
	}
	for _, r := range []string{"ScalingReplicaSet", "Killing", ""} {
		if ripples(r) {
			t.Errorf("%q is shown as Ripple's", r)
		}
	}
}
