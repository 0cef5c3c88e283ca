package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
)

var cmDash = refs.Ref{Kind: refs.ConfigMap, Name: "dash"}

// selecting is a workload that selects the ConfigMaps labelled team=a (and
// references none of them), with ConfigMap dash as gathered: found with
// labels, or gone when labels is nil.
func selecting(labels map[string]string, created time.Time) func(*Input) {
	return func(i *Input) {
		i.Workload.Annotations = map[string]string{keys.ConfigMapSelector: "team=a"}
		i.Sources = []Source{{Ref: cmDash, Found: labels != nil, Labels: labels, Digest: "d1", Created: created}}
		if labels == nil {
			i.Sources[0].Digest = ""
		}
	}
}

// A label selector's configs roll the workload as named ones do, and one
// created or deleted while selected rolls it without --reload-on-create
// or --reload-on-delete; one that leaves by a change of labels leaves the
// record without a rollout.
func TestSelectedConfigs(t *testing.T) {
	team := map[string]string{"team": "a"}
	old := started.Add(-2 * time.Hour)
	for _, tc := range []struct {
		name   string
		opts   []func(*Input)
		state  State
		reason decide.Reason
		rolls  bool
		env    string // the strategy's value on the template after the plan
		record map[string]string
	}{
		{name: "first sight is a baseline", opts: []func(*Input){selecting(team, old)},
			state: Baseline, reason: decide.SelectorMatch, record: map[string]string{"ConfigMap/dash": "d1"}},
		{name: "a change of a selected config rolls", opts: []func(*Input){selecting(team, old), recorded(map[string]string{"ConfigMap/dash": "d0"})},
			state: Changed, reason: decide.SelectorMatch, rolls: true, env: "d1", record: map[string]string{"ConfigMap/dash": "d1"}},
		{name: "created after the workload and Ripple's start rolls", opts: []func(*Input){selecting(team, now.Add(-time.Minute))},
			state: Created, reason: decide.SelectorMatch, rolls: true, env: "d1", record: map[string]string{"ConfigMap/dash": "d1"}},
		{name: "deleted while selected rolls: its env var removed, its record dropped",
			opts: []func(*Input){selecting(nil, old), annotate(keys.Auto, "true"), envVar(cmDash, "d1"), recorded(map[string]string{"ConfigMap/dash": "d1", "ConfigMap/app": "cm1"}),
				func(i *Input) {
					i.Sources = append(i.Sources, Source{Ref: cmApp, Found: true, Digest: "cm1", Created: old})
				}},
			state: Deleted, reason: decide.SelectorMatch, rolls: true, record: map[string]string{"ConfigMap/app": "cm1"}},
		{name: "gone and never recorded is nothing", opts: []func(*Input){selecting(nil, old)},
			state: NotReloading, reason: decide.NotOptedIn},
		{name: "relabelled out leaves the record without a rollout", opts: []func(*Input){selecting(map[string]string{"team": "b"}, old), recorded(map[string]string{"ConfigMap/dash": "d1"})},
			state: NotReloading, reason: decide.NotOptedIn},
		{name: "an invalid selector selects nothing", opts: []func(*Input){selecting(team, old), annotate(keys.ConfigMapSelector, "team in (a")},
			state: NotReloading, reason: decide.NotOptedIn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(in(tc.opts...))
			sp := p.Sources[0]
			if sp.State != tc.state || sp.Decision.Reason != tc.reason {
				t.Fatalf("state %s, reason %s (%s); want %s, %s", sp.State, sp.Decision.Reason, sp.Decision.Message, tc.state, tc.reason)
			}
			if p.Reloads() != tc.rolls {
				t.Fatalf("rolls %v, want %v", p.Reloads(), tc.rolls)
			}
			if env, _ := envOf(p, cmDash); tc.rolls && env != tc.env {
				t.Errorf("the template shows %q, want %q", env, tc.env)
			}
			if rec := recordOf(t, p); tc.record != nil && !mapsEqual(rec, tc.record) {
				t.Errorf("record %v, want %v", rec, tc.record)
			}
		})
	}
}

// A selector refused as too broad selects nothing, its configs included,
// and every plan tells it; an invalid one is an InvalidAnnotation naming
// the annotation.
func TestSelectorRefusals(t *testing.T) {
	broad := func(i *Input) {
		i.Workload.TooBroad = []TooBroad{{Kind: refs.ConfigMap, Message: `annotation "ripple.dev/configmap-selector" selects 101 ConfigMaps, more than 100`}}
	}
	p := For(in(selecting(map[string]string{"team": "a"}, started.Add(-2*time.Hour)), recorded(map[string]string{"ConfigMap/dash": "d0"}), broad))
	if p.Reloads() || p.Sources[0].Decision.Reason != decide.NotOptedIn {
		t.Errorf("a too broad selector rolled, or decided %s", p.Sources[0].Decision.Reason)
	}
	if !slices.ContainsFunc(p.Notices, func(n Notice) bool { return n.Reason == reason.SelectorTooBroad }) {
		t.Errorf("no SelectorTooBroad notice: %+v", p.Notices)
	}
	p = For(in(annotate(keys.ConfigMapSelector, "team in (a")))
	if !slices.ContainsFunc(p.Notices, func(n Notice) bool {
		return n.Reason == reason.InvalidAnnotation && strings.Contains(n.Message, keys.ConfigMapSelector)
	}) {
		t.Errorf("no InvalidAnnotation naming %s: %+v", keys.ConfigMapSelector, p.Notices)
	}
	// The workload's other configs still reload it.
	p = For(in(both, digestOf(cmApp, "cm2"), annotate(keys.ConfigMapSelector, "team in (a"), broad))
	if got := changed(p); !slices.Equal(got, []string{"ConfigMap/app=cm2"}) {
		t.Errorf("changes %v, want the referenced ConfigMap's", got)
	}
}
