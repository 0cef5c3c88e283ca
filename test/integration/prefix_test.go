package integration

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
)

// --annotation-prefix moves Ripple's own keys: the applied record and the
// settle-window override are read and written under the new prefix, and
// the default ones are left alone.
func TestAnnotationPrefix(t *testing.T) {
	t.Parallel()
	e := startRipple(t, "--annotation-prefix=example.org", "--settle-window=0")
	deploy := kit.Deployment
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, cm)
	// The override under the new prefix holds the reload for 3 s; one
	// under the default prefix would be ignored.
	w := e.newWorkload(t, deploy, "app", ann(autoKey, "true", "example.org/settle-window", "3s", "ripple.dev/settle-window", "0s"), envFrom(cm.Kind, cm.Name))
	e.waitFor(t, w, "the baseline record under example.org/", func(o client.Object) bool {
		return o.GetAnnotations()["example.org/applied"] != ""
	})
	if _, ok := w.GetAnnotations()[appliedKey]; ok {
		t.Errorf("the record was also written under %s", appliedKey)
	}
	changed := time.Now()
	e.waitApplied(t, deploy, w, cm, e.setConfig(t, cm, "v2"))
	if took := time.Since(changed); took < 2500*time.Millisecond {
		t.Errorf("reloaded %s after the change; the example.org/settle-window of 3s was not honoured", took)
	}
}

// --pause-deployment-annotation and --pause-deployment-time-annotation
// rename the pause keys: the renamed period pauses, the pause time is
// written under the renamed key, and the default key does nothing.
func TestPauseAnnotationRenames(t *testing.T) {
	t.Parallel()
	e := startRipple(t, "--pause-deployment-annotation=example.com/pause", "--pause-deployment-time-annotation=example.com/paused-at")
	deploy := kit.Deployment
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, cm)
	renamed := e.newWorkload(t, deploy, "renamed", ann(autoKey, "true", "example.com/pause", "1h"), envFrom(cm.Kind, cm.Name))
	dflt := e.newWorkload(t, deploy, "default", ann(autoKey, "true", "deployment.reloader.stakater.com/pause-period", "1h"), envFrom(cm.Kind, cm.Name))
	e.waitFor(t, renamed, "the baseline record", hasBaseline)
	e.waitFor(t, dflt, "the baseline record", hasBaseline)
	sum := e.setConfig(t, cm, "v2")
	e.waitApplied(t, deploy, renamed, cm, sum)
	e.waitApplied(t, deploy, dflt, cm, sum)
	if d := renamed.(*appsv1.Deployment); !d.Spec.Paused || d.Annotations["example.com/paused-at"] == "" || d.Annotations["deployment.reloader.stakater.com/paused-at"] != "" {
		t.Errorf("renamed keys: paused %v, annotations %v; want paused with example.com/paused-at only", d.Spec.Paused, d.Annotations)
	}
	if d := dflt.(*appsv1.Deployment); d.Spec.Paused {
		t.Errorf("the default pause-period key paused the Deployment although it was renamed")
	}
}
