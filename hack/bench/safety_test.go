package main

import (
	"reflect"
	"testing"
)

func TestWavesPoints(t *testing.T) {
	set := []wavesPlan{{Workloads: 300, Cap: -1}, {Workloads: 300, Cap: 0}}
	for name, c := range map[string]struct {
		n    int
		caps string
		want []wavesPlan
	}{
		"the set's":   {0, "", set},
		"other scale": {1000, "", []wavesPlan{{Workloads: 1000, Cap: -1}, {Workloads: 1000, Cap: 0}}},
		"other caps":  {0, "default, 50", []wavesPlan{{Workloads: 300, Cap: -1}, {Workloads: 300, Cap: 50}}},
	} {
		got, err := wavesPoints(set, c.n, c.caps)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", name, got, err, c.want)
		}
	}
	for _, bad := range []string{"-1", "many", "50,"} {
		if _, err := wavesPoints(set, 0, bad); err == nil {
			t.Errorf("--waves-caps %q was accepted", bad)
		}
	}
	if set[0].Workloads != 300 {
		t.Error("the set's points were changed")
	}
}
