package reason

import "testing"

// Each reason is declared once, with what its users need: a log message
// for an Event, and a meaning for the docs.
func TestRegistry(t *testing.T) {
	seen := map[Reason]bool{}
	for _, i := range All() {
		if seen[i.Reason] {
			t.Errorf("%s is declared twice", i.Reason)
		}
		seen[i.Reason] = true
		if i.When == "" || i.Event && i.Log == "" {
			t.Errorf("%s: no meaning or no log message: %+v", i.Reason, i)
		}
		if got, ok := Lookup(i.Reason); !ok || got.Reason != i.Reason {
			t.Errorf("Lookup(%s) = %+v, %v", i.Reason, got, ok)
		}
	}
	if _, ok := Lookup("NoSuchReason"); ok {
		t.Error("an unknown reason is in the registry")
	}
	if Of(RolloutStalled).Type() != "Warning" || Of(Reloaded).Type() != "Normal" {
		t.Error("Event types are wrong")
	}
}
