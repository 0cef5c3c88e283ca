package optional

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

var rolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

func served(kinds ...string) []*metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: rolloutGVK.GroupVersion().String()}
	for _, k := range kinds {
		l.APIResources = append(l.APIResources, metav1.APIResource{Kind: k})
	}
	return []*metav1.APIResourceList{l}
}

// An optional API is enabled once it is served, once; a failed Enable is
// retried at the next check; an API that goes away and returns is not
// enabled twice.
func TestDiscoverer(t *testing.T) {
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	var enables int
	fail := errors.New("informer not ready")
	var enableErr error
	d := NewDiscoverer(fake, logr.Discard(), API{GVK: rolloutGVK, Flag: "--is-argo-rollouts", Enable: func(context.Context) error {
		enables++
		return enableErr
	}})
	if d.NeedLeaderElection() {
		t.Error("NeedLeaderElection = true: standbys need the optional kinds cached too")
	}
	steps := []struct {
		resources   []*metav1.APIResourceList
		enableErr   error
		wantEnables int
		wantEnabled bool
	}{
		{nil, nil, 0, false},                             // the group is not served
		{served("AnalysisRun"), nil, 0, false},           // the group, not the kind
		{served("Rollout"), fail, 1, false},              // served; Enable fails
		{served("Rollout"), nil, 2, true},                // retried
		{served("Rollout"), nil, 2, true},                // once only
		{nil, nil, 2, true},                              // gone: stays enabled, its informer retries
		{served("Rollout", "AnalysisRun"), nil, 2, true}, // back
	}
	for i, s := range steps {
		fake.Resources, enableErr = s.resources, s.enableErr
		d.check(t.Context(), &d.items[0])
		if enables != s.wantEnables || d.items[0].enabled != s.wantEnabled {
			t.Errorf("step %d: %d enables, enabled %v; want %d, %v", i, enables, d.items[0].enabled, s.wantEnables, s.wantEnabled)
		}
	}
}

// A discovery error is no answer: nothing is enabled on it.
func TestDiscovererError(t *testing.T) {
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: served("Rollout")}}
	fake.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	enabled := false
	d := NewDiscoverer(fake, logr.Discard(), API{GVK: rolloutGVK, Enable: func(context.Context) error { enabled = true; return nil }})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := d.Start(ctx); err != nil || enabled {
		t.Errorf("Start = %v, enabled %v; want nil, false", err, enabled)
	}
}
