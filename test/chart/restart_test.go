package chart

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

// TestRestartMethodRules renders the chart with each way of turning the
// restart methods on (docs/restart-methods.md) in global, single-namespace
// and scoped mode, and checks the exact pod verbs every Ripple
// (Cluster)Role grants: none by default, list and create pods/eviction
// for evict, list and delete for delete, list and patch pods/resize for
// in-place, list alone for reload actions, none in webhook mode (which
// restarts nothing), and the --restart-method argument only when the
// default method is not template. The canary's pod gate
// (canaryGates: [pods]) adds list and watch on pods, and its argument.
// With governance.restartDeleteNamespaces, delete is not in the rules
// Role or ClusterRole but only in a Role <fullname>-pod-delete in each
// listed namespace Ripple watches, and nowhere in webhook mode.
func TestRestartMethodRules(t *testing.T) {
	none := []grant{{"", "pods", nil}, {"", "pods/eviction", nil}, {"", "pods/resize", nil}}
	evict := []grant{{"", "pods", []string{"list"}}, {"", "pods/eviction", []string{"create"}}, {"", "pods/resize", nil}}
	inPlace := []grant{{"", "pods", []string{"list"}}, {"", "pods/eviction", nil}, {"", "pods/resize", []string{"patch"}}}
	reloadAction := []grant{{"", "pods", []string{"list"}}, {"", "pods/eviction", nil}, {"", "pods/resize", nil}}
	del := []grant{{"", "pods", []string{"delete", "list"}}, {"", "pods/eviction", nil}}
	both := []grant{{"", "pods", []string{"delete", "list"}}, {"", "pods/eviction", []string{"create"}}}
	// The canary's pod gate watches the canaries' pods.
	gate := []grant{{"", "pods", []string{"list", "watch"}}, {"", "pods/eviction", nil}}
	gateDel := []grant{{"", "pods", []string{"delete", "list", "watch"}}, {"", "pods/eviction", nil}}
	pods := map[string]any{"canaryGates": []any{"pods"}}
	methods := func(evict, del bool) map[string]any {
		return map[string]any{"restartMethods": map[string]any{"evict": evict, "delete": del}}
	}
	list := []grant{{"", "pods", []string{"list"}}, {"", "pods/eviction", nil}}
	evictList := []grant{{"", "pods", []string{"list"}}, {"", "pods/eviction", []string{"create"}}}
	limited := func(v map[string]any) map[string]any {
		return deepMerge(map[string]any{"governance": map[string]any{"restartDeleteNamespaces": []any{"team-a", relNS, "batch"}}}, v)
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []grant
		arg    string
	}{
		{"defaults", nil, none, ""},
		{"restartMethods.evict", methods(true, false), evict, ""},
		{"restartMethods.delete", methods(false, true), del, ""},
		{"both methods", methods(true, true), both, ""},
		{"restartMethod evict", map[string]any{"restartMethod": "evict"}, evict, "--restart-method=evict"},
		{"restartMethod delete with evict on", deepMerge(map[string]any{"restartMethod": "delete"}, methods(true, false)), both, "--restart-method=delete"},
		{"restartMethod template", map[string]any{"restartMethod": "template"}, none, ""},
		{"restartMethods.inPlace", map[string]any{"restartMethods": map[string]any{"inPlace": true}}, inPlace, ""},
		{"restartMethod in-place", map[string]any{"restartMethod": "in-place"}, inPlace, "--restart-method=in-place"},
		{"restartMethods.reloadAction", map[string]any{"restartMethods": map[string]any{"reloadAction": true}}, reloadAction, ""},
		// With in-place-fallback: evict, a failed endpoint's pod is evicted.
		{"restartMethods.reloadAction with evict", map[string]any{"restartMethods": map[string]any{"reloadAction": true, "evict": true}}, evict, ""},
		// The ports open the NetworkPolicy only (TestReloadActionNetpol).
		{"restartMethods.reloadActionPorts", map[string]any{"restartMethods": map[string]any{"reloadActionPorts": []any{9090}}}, none, ""},
		{"canaryGates pods", pods, gate, ""},
		{"canaryGates pods with delete", deepMerge(map[string]any{"canaryGates": []any{"pods"}}, methods(false, true)), gateDel, ""},
		{"restartDeleteNamespaces", limited(methods(false, true)), list, ""},
		{"restartDeleteNamespaces with evict", limited(methods(true, true)), evictList, ""},
		{"restartDeleteNamespaces with restartMethod delete", limited(map[string]any{"restartMethod": "delete"}), list, "--restart-method=delete"},
		{"restartDeleteNamespaces without delete", limited(methods(true, false)), evict, ""},
	} {
		for _, mode := range []struct {
			name   string
			values map[string]any
		}{
			{"global", nil},
			{"single namespace", r(map[string]any{"watchGlobally": false})},
			{"scoped", r(map[string]any{"watchGlobally": false, "namespaces": []any{"team-a", "team-b"}})},
			{"webhook", r(map[string]any{"webhookUrl": "https://hooks.example.com/ripple"})},
		} {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				values := deepMerge(map[string]any{"ripple": deepMerge(map[string]any{}, tc.values)}, mode.values)
				_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{values}})
				want := tc.want
				if mode.name == "webhook" {
					want = none
				}
				// The listed namespaces Ripple watches get a pod-delete
				// Role when delete is on.
				var wantDelete, gotDelete []string
				if strings.HasPrefix(tc.name, "restartDeleteNamespaces") && !strings.HasSuffix(tc.name, "without delete") {
					switch mode.name {
					case "global":
						wantDelete = []string{"team-a", relNS, "batch"}
					case "single namespace":
						wantDelete = []string{relNS}
					case "scoped": // the release namespace is watched too
						wantDelete = []string{"team-a", relNS}
					}
				}
				rules := 0
				for _, role := range roles(objs) {
					want := want
					if strings.HasSuffix(role.GetName(), "-pod-delete") {
						gotDelete = append(gotDelete, role.GetNamespace())
						if role.GetKind() != "Role" {
							t.Errorf("%s %s: want a Role", role.GetKind(), role.GetName())
						}
						want = []grant{{"", "pods", []string{"delete"}}, {"", "pods/eviction", nil}}
					} else if !strings.HasSuffix(role.GetName(), "-role") || strings.HasSuffix(role.GetName(), "-metadata-role") {
						// The other Roles (leader election, job records,
						// meta-info) never grant pods.
						want = none
					} else {
						rules++
					}
					for _, g := range want {
						if got := grantedVerbs(role, g.group, g.resource); !slices.Equal(got, g.verbs) {
							t.Errorf("%s %s: %s verbs %q, want %q", role.GetKind(), role.GetName(), g.resource, got, g.verbs)
						}
					}
				}
				if rules == 0 {
					t.Fatal("no Ripple rules Role or ClusterRole rendered")
				}
				if !slices.Equal(gotDelete, wantDelete) {
					t.Errorf("pod-delete Roles in %q, want %q", gotDelete, wantDelete)
				}
				_, c := rippleDeployment(t, objs)
				var got []string
				for _, a := range c.Args {
					if strings.HasPrefix(a, "--restart-method") {
						got = append(got, a)
					}
				}
				wantArgs := slices.DeleteFunc([]string{tc.arg}, func(s string) bool { return s == "" })
				if tc.values["canaryGates"] != nil && mode.name != "webhook" {
					if !slices.Contains(c.Args, "--canary-gates=pods") {
						t.Errorf("arguments %q, want --canary-gates=pods", c.Args)
					}
				}
				if !slices.Equal(got, wantArgs) {
					t.Errorf("arguments %q, want %q", got, wantArgs)
				}
			})
		}
	}
}

// TestReloadActionNetpol: ripple.prometheus.url (the query gate) adds an
// egress rule for its port, and ripple.restartMethods.reloadActionPorts one
// with exactly those TCP ports, after the others and with no destination
// (Prometheus may be anywhere; Ripple calls pod IPs in any namespace it
// watches, whatever netpol.to limits the API server to), which the API
// server accepts; no reload-action rule when the list is empty, none at
// all when the NetworkPolicy is off, and neither in webhook mode (which
// calls no pod and no Prometheus).
func TestReloadActionNetpol(t *testing.T) {
	ensureNamespace(t, kubernetes.NewForConfigOrDie(api.Config), relNS, nil)
	netpol := func(extra map[string]any) map[string]any {
		return deepMerge(map[string]any{"netpol": map[string]any{"enabled": true, "to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.1/32"}}}}}, extra)
	}
	ports := func(ps ...any) map[string]any {
		return map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadAction": true, "reloadActionPorts": ps}}}
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		// egress is wantNetpol's; nil: no NetworkPolicy.
		egress []string
	}{
		{"ports without netpol", ports(9090, "http"), nil},
		{"netpol without ports", r(netpol(nil)), []string{"443/TCP 6443/TCP", "53/UDP 53/TCP"}},
		{"netpol with an empty list", deepMerge(r(netpol(nil)), ports()), []string{"443/TCP 6443/TCP", "53/UDP 53/TCP"}},
		{"netpol with ports", deepMerge(r(netpol(nil)), ports(9090, "http", 8080)), []string{"443/TCP 6443/TCP", "53/UDP 53/TCP", "9090/TCP http/TCP 8080/TCP"}},
		{"netpol with ports in webhook mode", deepMerge(r(netpol(map[string]any{"webhookUrl": "https://hooks.example.com/ripple"})), ports(9090)), []string{"443/TCP 6443/TCP", "53/UDP 53/TCP", "443/TCP"}},
		{"netpol with the query gate", deepMerge(r(netpol(nil)), queryGateValues()), []string{"443/TCP 6443/TCP", "53/UDP 53/TCP", "9091/TCP"}},
		{"netpol with the query gate on http", deepMerge(r(netpol(nil)), map[string]any{"ripple": map[string]any{"prometheus": map[string]any{"url": "http://prometheus.monitoring.svc"}}}), []string{"443/TCP 6443/TCP", "53/UDP 53/TCP", "80/TCP"}},
		{"netpol with the query gate and reload actions", deepMerge(deepMerge(r(netpol(nil)), queryGateValues()), ports(8080)), []string{"443/TCP 6443/TCP", "53/UDP 53/TCP", "9091/TCP", "8080/TCP"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{tc.values}})
			nps := find(objs, "NetworkPolicy")
			if tc.egress == nil {
				if len(nps) != 0 {
					t.Fatalf("%d NetworkPolicies, want none", len(nps))
				}
				return
			}
			wantNetpol(t, objs, tc.egress...)
			egress, _, _ := unstructured.NestedSlice(nps[0].Object, "spec", "egress")
			for i, e := range egress {
				_, to := e.(map[string]any)["to"]
				// Only the API server's rule (the first) takes netpol.to.
				if to != (i == 0) {
					t.Errorf("egress rule %d: destination %v, want one only on the API server's", i, to)
				}
			}
			if err := newApplier(t, api.Config).apply(t.Context(), nps[0], true); err != nil {
				t.Errorf("the API server rejects the NetworkPolicy: %v", err)
			}
		})
	}
}
