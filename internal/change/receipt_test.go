package change

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/api/v1alpha1"
)

func change(name, uid, seenAt, observed string, phase v1alpha1.Phase, by string) v1alpha1.ConfigRollout {
	return v1alpha1.ConfigRollout{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: "ConfigMap", Name: "db", UID: types.UID(uid), ResourceVersion: seenAt}},
		Status:     v1alpha1.ConfigRolloutStatus{ObservedConfigVersion: observed, Phase: phase, SupersededBy: by},
	}
}

func TestReceiptFind(t *testing.T) {
	// Newest first: c3 seen at 300; c2 at 200 and still the data at 250
	// (a label edit), superseded by c3; c1 of an earlier config of the name.
	items := []v1alpha1.ConfigRollout{
		change("c3", "u", "300", "300", v1alpha1.PhaseRolling, ""),
		change("c2", "u", "200", "250", v1alpha1.PhaseSuperseded, "c3"),
		change("c1", "old", "100", "100", v1alpha1.PhasePropagated, ""),
	}
	for _, tc := range []struct {
		name string
		r    Receipt
		want string
	}{
		{"the write's own change", Receipt{UID: "u", Version: "300"}, "c3"},
		{"a version the older change still covered: the newest that covers it", Receipt{UID: "u", Version: "240"}, "c3"},
		{"a version Ripple has not seen yet", Receipt{UID: "u", Version: "301"}, ""},
		{"a longer version is newer, not smaller", Receipt{UID: "u", Version: "1000"}, ""},
		{"no version: the newest change", Receipt{UID: "u"}, "c3"},
		{"an earlier config of the name is never the answer", Receipt{UID: "old", Version: "150"}, ""},
		{"no UID (the config cannot be read): any change of the name", Receipt{Version: "90"}, "c3"},
		{"after a version: the first change seen after it", Receipt{UID: "u", Version: "250", After: true}, "c3"},
		{"after the newest change's version: none yet", Receipt{UID: "u", Version: "300", After: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.r.Find(items)
			switch {
			case tc.want == "" && ok:
				t.Errorf("found %s, want none", got.Name)
			case tc.want != "" && (!ok || got.Name != tc.want):
				t.Errorf("found %v (%v), want %s", got, ok, tc.want)
			}
		})
	}
}

func TestReceiptFollow(t *testing.T) {
	items := []v1alpha1.ConfigRollout{
		change("c3", "u", "300", "300", v1alpha1.PhaseHalted, ""),
		change("c2", "u", "200", "200", v1alpha1.PhaseSuperseded, "c3"),
		change("c1", "u", "100", "100", v1alpha1.PhaseSuperseded, "c2"),
		change("c0", "u", "50", "50", v1alpha1.PhaseSuperseded, "gone"),
	}
	for from, want := range map[string]string{"c1": "c3", "c2": "c3", "c3": "c3", "c0": "c3"} {
		cr, _ := Receipt{UID: "u", Version: items[0].Spec.Config.ResourceVersion}.Find(items)
		for i := range items {
			if items[i].Name == from {
				cr = &items[i]
			}
		}
		if got := Follow(cr, items); got.Name != want {
			t.Errorf("from %s: followed to %s, want %s", from, got.Name, want)
		}
	}
	// A loop of links (objects a person edited) ends.
	loop := []v1alpha1.ConfigRollout{
		change("a", "u", "2", "2", v1alpha1.PhaseSuperseded, "b"),
		change("b", "u", "1", "1", v1alpha1.PhaseSuperseded, "a"),
	}
	if got := Follow(&loop[1], loop); got == nil {
		t.Error("no change at the end of a loop")
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
		ok   bool
	}{
		{"9", "10", -1, true}, {"10", "10", 0, true}, {"200", "19", 1, true}, {"", "1", 0, false}, {"abc", "1", 0, false},
	} {
		if got, ok := CompareVersions(tc.a, tc.b); got != tc.want || ok != tc.ok {
			t.Errorf("CompareVersions(%q, %q) = %d, %v; want %d, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}
