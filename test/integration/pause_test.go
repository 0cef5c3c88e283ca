package integration

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
)

const (
	pausePeriodKey = "deployment.reloader.stakater.com/pause-period"
	pausedAtKey    = "deployment.reloader.stakater.com/paused-at"
)

// pausedAt returns the Deployment's paused-at time, if it is paused with one.
func pausedAt(o client.Object) (time.Time, bool) {
	v, ok := o.GetAnnotations()[pausedAtKey]
	if !ok || !o.(*appsv1.Deployment).Spec.Paused {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, v)
	return at, err == nil
}

// running: not paused, and no paused-at left behind.
func running(o client.Object) bool {
	_, marked := o.GetAnnotations()[pausedAtKey]
	return !o.(*appsv1.Deployment).Spec.Paused && !marked
}

// pausedReload changes r and waits until d shows the change; it must be
// paused by Ripple in the same write. It returns the paused-at time.
func (e *env) pausedReload(t *testing.T, d client.Object, r refs.Ref, value string) time.Time {
	t.Helper()
	e.waitApplied(t, kit.Deployment, d, r, e.setConfig(t, r, value))
	at, ok := pausedAt(d)
	if !ok {
		t.Fatalf("Deployment %s shows the reload but is not paused by Ripple: paused=%v annotations %v",
			d.GetName(), d.(*appsv1.Deployment).Spec.Paused, d.GetAnnotations())
	}
	return at
}

// waitResumed waits until d runs again, and checks it ran no earlier than
// the period allows.
func (e *env) waitResumed(t *testing.T, d client.Object, at time.Time, period time.Duration) {
	t.Helper()
	e.waitFor(t, d, "the resume", running)
	if now := time.Now(); now.Before(at.Add(period)) {
		t.Fatalf("Deployment %s resumed at %s, before its pause of %s from %s ended", d.GetName(), now.Format(time.RFC3339Nano), period, at.Format(time.RFC3339))
	}
}

// Reloader's pause-period (A15/A16): the reloads of the period are written
// on a paused Deployment, and it is resumed once, when the period has
// passed. Unlike Reloader, the schedule is the paused-at annotation only:
// a manual resume or a re-created Deployment leaves nothing stuck, and an
// invalid period reloads without a pause.
func TestPausePeriod(t *testing.T) {
	e := startRipple(t)
	deploy := kit.Deployment

	t.Run("changes in the period roll out once, at its end", func(t *testing.T) {
		t.Parallel()
		// Long enough for three reloads on a busy machine.
		const period = 6 * time.Second
		r := refs.Ref{Kind: refs.ConfigMap, Name: "burst"}
		e.newConfig(t, r)
		d := e.newWorkload(t, deploy, "burst", ann(autoKey, "true", pausePeriodKey, period.String()), envFrom(r.Kind, r.Name))
		e.waitFor(t, d, "the baseline record", hasBaseline)
		at := e.pausedReload(t, d, r, "v2")
		e.waitApplied(t, deploy, d, r, e.setConfig(t, r, "v3"))
		last := e.setConfig(t, r, "v4")
		e.waitApplied(t, deploy, d, r, last)
		// A fixed window from the first reload: later ones do not move it.
		if again, ok := pausedAt(d); !ok || !again.Equal(at) {
			t.Fatalf("after three changes paused-at is %v (paused %v), want %s", again, ok, at.Format(time.RFC3339))
		}
		e.waitResumed(t, d, at, period)
		e.waitApplied(t, deploy, d, r, last)
	})

	t.Run("a manual resume leaves nothing stuck", func(t *testing.T) {
		t.Parallel()
		const period = 3 * time.Second
		r := refs.Ref{Kind: refs.ConfigMap, Name: "manual"}
		e.newConfig(t, r)
		d := e.newWorkload(t, deploy, "manual", ann(autoKey, "true", pausePeriodKey, period.String()), envFrom(r.Kind, r.Name))
		e.waitFor(t, d, "the baseline record", hasBaseline)
		e.pausedReload(t, d, r, "v2")

		// kubectl rollout resume: spec.paused only.
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false}}`))
		if err := e.c.Patch(t.Context(), d, patch); err != nil {
			t.Fatal(err)
		}
		e.waitFor(t, d, "the stale paused-at removed", running)
		time.Sleep(period) // past the first pause's end
		if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		if !running(d) {
			t.Fatalf("Deployment %s was paused again after a manual resume: annotations %v", d.GetName(), d.GetAnnotations())
		}

		at := e.pausedReload(t, d, r, "v3")
		e.waitResumed(t, d, at, period)
	})

	t.Run("a Deployment re-created during the pause is not left paused", func(t *testing.T) {
		t.Parallel()
		const period = 3 * time.Second
		r := refs.Ref{Kind: refs.ConfigMap, Name: "again"}
		e.newConfig(t, r)
		meta := ann(autoKey, "true", pausePeriodKey, period.String())
		d := e.newWorkload(t, deploy, "again", meta, envFrom(r.Kind, r.Name))
		e.waitFor(t, d, "the baseline record", hasBaseline)
		at := e.pausedReload(t, d, r, "v2")

		if err := e.c.Delete(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		e.waitGone(t, deploy.New(metav1.ObjectMeta{Name: d.GetName(), Namespace: e.ns}, corev1.PodTemplateSpec{}))
		d = e.newWorkload(t, deploy, "again", meta, envFrom(r.Kind, r.Name))
		e.waitFor(t, d, "the baseline record", hasBaseline)
		time.Sleep(time.Until(at.Add(period + time.Second))) // past the old pause's end
		if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		if !running(d) {
			t.Fatalf("the re-created Deployment %s is paused: annotations %v", d.GetName(), d.GetAnnotations())
		}

		// Its own pause ends too (Reloader's stale timer kept it paused).
		at = e.pausedReload(t, d, r, "v3")
		e.waitResumed(t, d, at, period)
	})

	t.Run("an invalid period reloads without a pause", func(t *testing.T) {
		t.Parallel()
		r := refs.Ref{Kind: refs.ConfigMap, Name: "bogus"}
		e.newConfig(t, r)
		d := e.newWorkload(t, deploy, "bogus", ann(autoKey, "true", pausePeriodKey, "a while"), envFrom(r.Kind, r.Name))
		e.waitFor(t, d, "the baseline record", hasBaseline)
		e.waitApplied(t, deploy, d, r, e.setConfig(t, r, "v2"))
		if !running(d) {
			t.Fatalf("Deployment %s was paused with an invalid period: annotations %v", d.GetName(), d.GetAnnotations())
		}
		notes := e.waitEvent(t, d.GetName(), corev1.EventTypeWarning, "InvalidAnnotation")
		if !strings.Contains(notes[0], pausePeriodKey) || !strings.Contains(notes[0], "a while") {
			t.Fatalf("warning %q should name the annotation and its value", notes[0])
		}
	})

	t.Run("a Deployment its owner paused is never resumed", func(t *testing.T) {
		t.Parallel()
		const period = 2 * time.Second
		r := refs.Ref{Kind: refs.ConfigMap, Name: "owned"}
		e.newConfig(t, r)
		d := deploy.New(metav1.ObjectMeta{Name: "owned", Namespace: e.ns, Annotations: ann(autoKey, "true", pausePeriodKey, period.String())},
			corev1.PodTemplateSpec{Spec: podSpec(envFrom(r.Kind, r.Name))})
		d.(*appsv1.Deployment).Spec.Paused = true
		if err := e.c.Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		e.waitFor(t, d, "the baseline record", hasBaseline)
		e.waitApplied(t, deploy, d, r, e.setConfig(t, r, "v2"))
		time.Sleep(period + time.Second)
		if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		if _, marked := d.GetAnnotations()[pausedAtKey]; !d.(*appsv1.Deployment).Spec.Paused || marked {
			t.Fatalf("Deployment %s paused by its owner: paused=%v, annotations %v; want paused without paused-at",
				d.GetName(), d.(*appsv1.Deployment).Spec.Paused, d.GetAnnotations())
		}
	})
}

// A pause survives a restart: it ends at its time when Ripple restarts
// during the period, and at once when the period ended while Ripple was
// down, from the paused-at annotation alone (Reloader waits for another
// reload to resume it).
func TestPausePeriodAcrossRestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		endsWhile bool // the period ends while no Ripple runs
	}{
		{"period ends while Ripple is down", true},
		{"Ripple restarts within the period", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const period = 4 * time.Second
			e := newEnv(t)
			stop := e.run(t)
			deploy := kit.Deployment
			r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
			e.newConfig(t, r)
			d := e.newWorkload(t, deploy, "app", ann(autoKey, "true", pausePeriodKey, period.String()), envFrom(r.Kind, r.Name))
			e.waitFor(t, d, "the baseline record", hasBaseline)
			at := e.pausedReload(t, d, r, "v2")

			stop()
			if tc.endsWhile {
				time.Sleep(time.Until(at.Add(period + time.Second)))
			}
			if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
				t.Fatal(err)
			}
			if _, ok := pausedAt(d); !ok {
				t.Fatalf("Deployment %s was resumed while no Ripple ran", d.GetName())
			}
			e.run(t)
			e.waitResumed(t, d, at, period)
		})
	}
}

// A Deployment paused by Ripple is resumed when its period ends even if
// its namespace left the --namespace-selector scope during the pause, and
// nothing else happens to it there: a change out of scope is not rolled.
// (Global mode: not parallel with other tests.)
func TestPauseEndsOutOfScope(t *testing.T) {
	e := newEnv(t)
	label := "ripple-test-" + rand.String(6)
	e.labelNamespace(t, label, "yes")
	e.run(t, "--namespace-selector="+label+":yes")
	deploy := kit.Deployment
	const period = 4 * time.Second
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	d := e.newWorkload(t, deploy, "app", ann(autoKey, "true", pausePeriodKey, period.String()), envFrom(r.Kind, r.Name))
	e.waitFor(t, d, "the baseline record", hasBaseline)
	at := e.pausedReload(t, d, r, "v2")

	e.labelNamespace(t, label, "")
	// The cache drops the namespace asynchronously; give it a moment.
	time.Sleep(500 * time.Millisecond)
	before := deploy.Template(d).DeepCopy()
	e.setConfig(t, r, "out-of-scope")
	e.waitResumed(t, d, at, period)
	if !equality.Semantic.DeepEqual(deploy.Template(d), before) {
		t.Fatalf("Deployment %s was reloaded out of scope: template %v, want %v", d.GetName(), deploy.Template(d), before)
	}
}
