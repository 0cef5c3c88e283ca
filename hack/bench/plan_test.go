package main

import (
	"reflect"
	"testing"
)

func TestFanOutPoints(t *testing.T) {
	got, err := fanOutPoints("300, 3000")
	want := []fanOutPoint{{Workloads: 300, ChangeSets: 2, Defaults: true}, {Workloads: 3000, ChangeSets: 1, Defaults: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"0", "many", "300,"} {
		if _, err := fanOutPoints(bad); err == nil {
			t.Errorf("--fan-out %q was accepted", bad)
		}
	}
}

func TestPlanSets(t *testing.T) {
	set, p, _, err := options{large: true, fanOut: "300"}.plan()
	if err != nil || set != "large" || len(p.LargeScale) != 2 || len(p.Waves) != 0 {
		t.Fatalf("--large: %s %+v %v", set, p, err)
	}
	if !reflect.DeepEqual(p.FanOut, []fanOutPoint{fanOutDefaults(300)}) {
		t.Errorf("--fan-out did not replace the set's fan-out points: %+v", p.FanOut)
	}
	for _, l := range p.LargeScale {
		if l.Namespaces*(l.ConfigMapsPerNS+l.SecretsPerNS) != 5000 {
			t.Errorf("the large set has 5,000 configs, not %+v", l)
		}
	}
	_, p, _, err = options{large: true, largeScales: "10000"}.plan()
	if err != nil || len(p.LargeScale) != 1 || p.LargeScale[0].WorkloadsPerNS != 20 {
		t.Errorf("--large-scales 10000: %+v %v", p.LargeScale, err)
	}
	for _, bad := range []options{{large: true, largeScales: "10001"}, {largeScales: "10000"}, {large: true, quick: true}} {
		if _, _, _, err := bad.plan(); err == nil {
			t.Errorf("%+v was accepted", bad)
		}
	}
	if _, _, _, err := (options{large: true, quick: true}).plan(); err == nil {
		t.Error("--quick --large was accepted")
	}
	_, p, _, err = options{}.plan()
	if err != nil || len(p.LargeScale) != 0 || len(p.Waves) != 2 || !p.Waves[1].Canary {
		t.Errorf("the default set: %+v %v", p, err)
	}
}

func TestLargeScalePicks(t *testing.T) {
	s := &session{r: &runner{nsPrefix: "rb"}}
	p := largeSetPlan().LargeScale[1] // 100 Deployments per namespace
	ref, keys := p.config(s, 499, 7)
	if ref.String() != "secret/rb-499/secret-02" || len(keys) != 20 || keys[0] != "rb-499/app-002" || keys[19] != "rb-499/app-097" {
		t.Errorf("config 7 of the last namespace: %s used by %d %v", ref, len(keys), keys)
	}
	refs, users := p.picks(s, 1)
	seen := map[string]bool{}
	for i, keys := range users {
		for _, k := range keys {
			if seen[k] {
				t.Fatalf("%s: %s is also a user of an earlier pick", refs[i], k)
			}
			seen[k] = true
		}
	}
	if len(refs) != p.Updates || len(seen) != 20*p.Updates {
		t.Errorf("%d picks reaching %d Deployments, want %d and %d", len(refs), len(seen), p.Updates, 20*p.Updates)
	}
	if probe, key := p.probe(s); probe.Name != "first-reload" || key != "rb-499/app-099" {
		t.Errorf("first reload of %s through %s", key, probe)
	}
}
