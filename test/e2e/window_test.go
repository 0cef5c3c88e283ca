package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// reloadWindowKey is the reload-window annotation with the default prefix.
const reloadWindowKey = "ripple.dev/reload-window"

// windowSoon is a daily reload window, in UTC with minute granularity, that
// opens 30 to 90 s from now and stays open 3 minutes, and when it opens.
func windowSoon() (string, time.Time) {
	now := time.Now().UTC()
	open := now.Truncate(time.Minute).Add(time.Minute)
	if open.Sub(now) < 30*time.Second {
		open = open.Add(time.Minute)
	}
	return fmt.Sprintf("%s-%s UTC", open.Format("15:04"), open.Add(3*time.Minute).Format("15:04")), open
}

// TestReloadWindowDefersToTheOpening: with a reload window that opens 30
// to 90 s after the test starts, two ConfigMap changes before it opens are
// deferred (a ReloadDeferred Event naming the config and the opening) and
// roll nothing until then; once it opens the Deployment rolls exactly once
// (one more revision) with the final data.
func TestReloadWindowDefersToTheOpening(t *testing.T) {
	t.Parallel()
	testReloadWindow(t, false)
}

// TestReloadWindowRippleKilledDuringDeferral: the same, with Ripple killed
// with SIGKILL during the deferral and started again: the deferral is
// derived from the objects, so the new process defers again, rolls nothing
// early and rolls exactly once in the window.
func TestReloadWindowRippleKilledDuringDeferral(t *testing.T) {
	t.Parallel()
	testReloadWindow(t, true)
}

func testReloadWindow(t *testing.T, kill bool) {
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	window, opens := windowSoon()
	r := startRipple(t, ns, "--log-level=debug")
	cm := createConfigMap(t, cs, ns, configName, "v1")
	web := workload{kit.Deployment, ns, "web"}
	annotations := auto()
	annotations[reloadWindowKey] = window
	web.create(t, cs, spec{configMaps: []string{configName}, annotations: annotations})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm))

	setConfigMapValue(t, cs, ns, configName, "v2")
	waitDeferred(t, cs, web, opens, 1)
	sum := setConfigMapValue(t, cs, ns, configName, "v3")
	if kill {
		waitDeferred(t, cs, web, opens, 2) // the second change set, seen before the kill
		r.Kill()
		r.Start()
		waitDeferred(t, cs, web, opens, 3) // the new process defers it again
	}
	if time.Now().After(opens) {
		t.Fatalf("the window %q opened before the test could check the deferral; the machine is too slow", window)
	}
	consistently(t, "no rollout before the window opens", time.Until(opens.Add(-time.Second)), func(ctx context.Context) error {
		s, err := web.observe(ctx, cs)
		if err != nil {
			return err
		}
		if s.templates != before[web].templates || s.revisions != before[web].revisions {
			return fmt.Errorf("%s rolled at %s, before its window opens at %s", web, time.Now().UTC().Format(time.RFC3339), opens.Format(time.RFC3339))
		}
		return nil
	})
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), web.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev, _ := strconv.Atoi(d.Annotations[revisionAnnotation]); rev != 2 {
		t.Errorf("Deployment revision %d, want 2: one rollout", rev)
	}
	if n := len(r.finalLines("\treloaded\t")); n != 1 {
		t.Errorf("Ripple logged %d reloads, want 1", n)
	}
}

// waitDeferred waits for n ReloadDeferred Events on w (a repeated Event
// counts its repeats), each naming the ConfigMap and the opening.
func waitDeferred(t *testing.T, cs kubernetes.Interface, w workload, opens time.Time, n int) {
	t.Helper()
	want := opens.Format(time.RFC3339)
	waitFor(t, fmt.Sprintf("%d ReloadDeferred Events on %s", n, w), func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events(w.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got := 0
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind != "Deployment" || e.InvolvedObject.Name != w.name || e.Reason != "ReloadDeferred" {
				continue
			}
			if !strings.Contains(e.Message, `ConfigMap "`+configName+`"`) || !strings.Contains(e.Message, want) {
				return false, fmt.Errorf("ReloadDeferred %q does not name the config and the opening %s", e.Message, want)
			}
			got += int(max(e.Count, 1))
		}
		return got >= n, nil
	})
}
