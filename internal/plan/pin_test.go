package plan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

const (
	appV1 = "2415bbab7ab0c3d1e2f3a4b5c6d7e8f901234567"
	appV2 = "87fd39ba70a4c3d1e2f3a4b5c6d7e8f901234567"
	dbV1  = "9f1c0e2d44b0c3d1e2f3a4b5c6d7e8f901234567"
)

// pinning is a workload that asks for pinning under --pinning, its
// configs at appV1 and dbV1 applied.
func pinning(i *Input) {
	i.Pinning = true
	i.Workload.Annotations[keys.Pin] = "true"
	recorded(map[string]string{"ConfigMap/app": appV1, "Secret/db": dbV1})(i)
	digestOf(cmApp, appV1)(i)
	digestOf(secDB, dbV1)(i)
}

func TestPinnedTemplate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []func(*Input)
		want    string // the template's record; "" when none is written
		warning string
	}{
		{"a change of one config pins every config the template reads",
			[]func(*Input){pinning, digestOf(cmApp, appV2)}, "configmap/app=87fd39ba70a4,secret/db=9f1c0e2d44b0", ""},
		{"without --pinning nothing is pinned",
			[]func(*Input){pinning, digestOf(cmApp, appV2), func(i *Input) { i.Pinning = false }}, "", ""},
		{"where the API server refuses pinning a workload that asks is told why",
			[]func(*Input){pinning, digestOf(cmApp, appV2), func(i *Input) { i.Pinning, i.PinRefusal = false, "no policy here" }},
			"", `annotation "ripple.dev/pin": --pinning is off: no policy here; its pods read the configs live`},
		{"a workload without the annotation in a Namespace that asks is pinned",
			[]func(*Input){pinning, digestOf(cmApp, appV2), func(i *Input) {
				delete(i.Workload.Annotations, keys.Pin)
				i.Workload.NamespaceAnnotations = map[string]string{keys.Pin: "true"}
			}}, "configmap/app=87fd39ba70a4,secret/db=9f1c0e2d44b0", ""},
		{"a workload's own false wins over its Namespace's true",
			[]func(*Input){pinning, digestOf(cmApp, appV2), annotate(keys.Pin, "false"), func(i *Input) {
				i.Workload.NamespaceAnnotations = map[string]string{keys.Pin: "true"}
			}}, "", ""},
		{"a workload that does not ask is not pinned",
			[]func(*Input){pinning, digestOf(cmApp, appV2), annotate(keys.Pin, "false")}, "", ""},
		{"a config gone is read live",
			[]func(*Input){pinning, digestOf(cmApp, appV2), func(i *Input) { i.Sources[1].Found = false }}, "configmap/app=87fd39ba70a4", ""},
		{"a workload no longer pinned loses its record",
			[]func(*Input){pinning, digestOf(cmApp, appV2), annotate(keys.Pin, "false"), func(i *Input) {
				i.Workload.Template.Annotations = map[string]string{keys.Pinned: "configmap/app=2415bbab7ab0"}
			}}, "", ""},
		{"a config whose copy cannot be named is read live, with a warning",
			[]func(*Input){pinning, digestOf(cmApp, appV2), digestOf(secDB, "s1")}, "configmap/app=87fd39ba70a4", `annotation "ripple.dev/pin": Secret/db: digest "s1" is shorter than 12 digits`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(in(tc.opts...))
			if !p.Reloads() || p.Update.Template == nil {
				t.Fatalf("the change writes no template: %+v", p.Update)
			}
			if got := p.Update.Template.Annotations[keys.Pinned]; got != tc.want {
				t.Errorf("pinned = %q, want %q", got, tc.want)
			}
			found := tc.warning == ""
			for _, w := range p.Warnings {
				found = found || strings.Contains(w, tc.warning)
			}
			if !found {
				t.Errorf("warnings %q, want one with %q", p.Warnings, tc.warning)
			}
		})
	}
}

// A plan that rolls nothing writes no pins, and the pins leave the
// configs' own references on the template alone.
func TestPinnedOnlyWithAReload(t *testing.T) {
	p := For(in(pinning))
	if p.Update.Template != nil {
		t.Fatalf("nothing changed, yet the plan writes the template: %v", p.Update.Template.Annotations)
	}
	p = For(in(pinning, digestOf(cmApp, appV2)))
	if got := refs.All(&p.Update.Template.Spec); len(got) != 2 || got[0] != cmApp || got[1] != secDB {
		t.Errorf("the template now references %v, want the configs themselves", got)
	}
}

// --pinning alone changes nothing for a workload that does not ask: its
// plan, the template it writes included, is the one made without the
// flag, whether a config changed or not, and with a Namespace that does
// not ask either.
func TestPinningFlagAloneChangesNothing(t *testing.T) {
	configs := func(i *Input) {
		recorded(map[string]string{"ConfigMap/app": appV1, "Secret/db": dbV1})(i)
		digestOf(cmApp, appV1)(i)
		digestOf(secDB, dbV1)(i)
	}
	for name, opts := range map[string][]func(*Input){
		"no change":           {configs},
		"a change":            {configs, digestOf(cmApp, appV2)},
		"a change, pin false": {configs, digestOf(cmApp, appV2), annotate(keys.Pin, "false")},
		"a change, Namespace asks nothing": {configs, digestOf(cmApp, appV2), func(i *Input) {
			i.Workload.NamespaceAnnotations = map[string]string{"other": "x"}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			without := For(in(opts...))
			with := For(in(append(opts, func(i *Input) { i.Pinning = true })...))
			if !reflect.DeepEqual(with, without) {
				t.Errorf("with --pinning:\n%+v\nwithout:\n%+v", with, without)
			}
		})
	}
}
