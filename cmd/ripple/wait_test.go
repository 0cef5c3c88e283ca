package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/refs"
)

// `wait` exits 2 on a bad argument or flag, naming it, and 0 with its help.
func TestWaitExitCodes(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no config":   {nil, 2, "ripple wait: name one config, as configmap/<name> or secret/<name>"},
		"a workload":  {[]string{"deployment/web"}, 2, `"deployment/web" is not a config`},
		"no name":     {[]string{"configmap/"}, 2, `"configmap/" names no config`},
		"both":        {[]string{"secret/db", "--version=5", "--after-version=4"}, 2, "--version and --after-version wait for different changes"},
		"bad timeout": {[]string{"secret/db", "--timeout=0s"}, 2, "--timeout 0s: give a positive duration"},
		"no cluster":  {[]string{"secret/db", "--server=https://127.0.0.1:1", "--request-timeout=5s"}, 1, "ripple wait: "},
		"help":        {[]string{"--help"}, 0, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "/nonexistent")
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), "ripple", append([]string{"wait"}, tc.args...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d with %q", code, stderr.String(), tc.code, tc.want)
			}
			if tc.code == 0 && !strings.Contains(stdout.String(), "wait configmap/<name>") {
				t.Errorf("help lacks the usage line:\n%s", stdout.String())
			}
		})
	}
}

func waitChange(name, seenAt, observed string, st v1alpha1.ConfigRolloutStatus) *v1alpha1.ConfigRollout {
	st.ObservedConfigVersion = observed
	return &v1alpha1.ConfigRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{v1alpha1.LabelConfigKind: "secret", v1alpha1.LabelConfigName: "db"}},
		Spec:       v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: "Secret", Name: "db", UID: "u", ResourceVersion: seenAt}},
		Status:     st,
	}
}

// A wait looks at the config's changes: it waits while Ripple has not
// seen the version, follows a superseded change to the newest, succeeds
// once that propagated (listing the stale consumers) and fails naming the
// canary when it halted.
func TestWaitLooks(t *testing.T) {
	propagated := v1alpha1.ConfigRolloutStatus{Phase: v1alpha1.PhasePropagated, PropagatedAt: &metav1.Time{Time: time.Unix(1, 0)},
		Counts:    v1alpha1.Counts{Managed: 2, Complete: 2, Stale: 1, Consumers: 3},
		Consumers: []v1alpha1.Consumer{{Kind: "Deployment", Name: "legacy", State: v1alpha1.ConsumerStale}}}
	rolling := v1alpha1.ConfigRolloutStatus{Phase: v1alpha1.PhaseRolling, Counts: v1alpha1.Counts{Managed: 2, Complete: 1}}
	superseded := v1alpha1.ConfigRolloutStatus{Phase: v1alpha1.PhaseSuperseded, SupersededBy: "db-2"}
	halted := v1alpha1.ConfigRolloutStatus{Phase: v1alpha1.PhaseHalted, Canary: &v1alpha1.CanaryStatus{
		Phase: "Halted", Why: `Deployment "d00" stalled`, Workloads: []v1alpha1.CanaryWorkload{{Kind: "Deployment", Name: "d00"}}}}
	for name, tc := range map[string]struct {
		changes  []*v1alpha1.ConfigRollout
		version  string
		done     bool
		err, out string
	}{
		"not seen yet":             {[]*v1alpha1.ConfigRollout{waitChange("db-1", "10", "10", propagated)}, "12", false, "", "waiting for Ripple to see its data at resourceVersion 12"},
		"rolling":                  {[]*v1alpha1.ConfigRollout{waitChange("db-1", "12", "12", rolling)}, "12", false, "", "change db-1 Rolling: 1 of 2 managed consumers updated"},
		"propagated":               {[]*v1alpha1.ConfigRollout{waitChange("db-1", "10", "12", propagated)}, "12", true, "", "stale: Deployment legacy (Stale)"},
		"superseded, newer rolls":  {[]*v1alpha1.ConfigRollout{waitChange("db-1", "12", "12", superseded), waitChange("db-2", "14", "14", rolling)}, "12", false, "", "change db-2 Rolling"},
		"superseded, newer halted": {[]*v1alpha1.ConfigRollout{waitChange("db-1", "12", "12", superseded), waitChange("db-2", "14", "14", halted)}, "12", false, `change db-2 halted: Deployment "d00" stalled (canary Deployment d00)`, ""},
		"superseded, newer done":   {[]*v1alpha1.ConfigRollout{waitChange("db-1", "12", "12", superseded), waitChange("db-2", "14", "14", propagated)}, "12", true, "", "change db-2 Propagated"},
	} {
		t.Run(name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := v1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			objs := make([]client.Object, 0, len(tc.changes))
			for _, cr := range tc.changes {
				objs = append(objs, cr)
			}
			var out bytes.Buffer
			w := &waiter{c: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), ns: "shop",
				ref: refs.Ref{Kind: refs.Secret, Name: "db"}, what: "secret shop/db", out: &out,
				receipt: change.Receipt{UID: "u", Version: tc.version}}
			done, err := w.look(t.Context())
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one with %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Errorf("error %v", err)
			case done != tc.done || !strings.Contains(out.String(), tc.out):
				t.Errorf("done %v, printed %q; want done %v, printing %q", done, out.String(), tc.done, tc.out)
			}
		})
	}
}
