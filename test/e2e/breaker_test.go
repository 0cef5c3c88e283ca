package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// The storm breaker's defaults, as documented: the flap quiet period and
// the settle window, after which a held workload resumes.
const (
	flapQuietPeriod     = 10 * time.Second
	defaultSettleWindow = time.Second
)

// A ConfigMap changed every 300 ms for 30 s, with Ripple's default flags:
// the flap breaker holds the Deployment (one ReloadHeld Warning event, the
// ripple_reloads_held gauge at 1 during the storm), it resumes one quiet
// period after the storm and rolls the final data; three rollouts at most
// in all, and none after.
func TestStormBreakerHoldsFlappingConfig(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	addr := freeAddr(t)
	startRipple(t, ns, "--metrics-bind-address="+addr)
	cm := createConfigMap(t, cs, ns, configName, "v0")
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm))

	updates, maxHeld, final, stormEnd := storm(t, cs, cm, addr, 300*time.Millisecond, 30*time.Second)
	t.Logf("storm: %d updates until %s; ripple_reloads_held peaked at %v", updates, stormEnd.Format(time.StampMilli), maxHeld)
	if maxHeld != 1 {
		t.Errorf("ripple_reloads_held peaked at %v during the storm, want 1", maxHeld)
	}

	// Resumes once the configs were quiet for the quiet period, measured
	// from the last change Ripple saw (up to a settle window after it was
	// made); the rest is slack for a loaded machine.
	resumed := waitTemplateEnv(t, cs, web, configEnv, final, flapQuietPeriod+defaultSettleWindow+20*time.Second)
	after := resumed.Sub(stormEnd)
	t.Logf("the final data reached the template %s after the storm", after.Round(10*time.Millisecond))
	if after < flapQuietPeriod-time.Second {
		t.Errorf("the final data rolled %s after the storm, before the %s quiet period: the hold did not last", after, flapQuietPeriod)
	}
	end := waitRolledOut(t, cs, web)
	end = expectNoRollout(t, cs, end)
	for name, n := range rolloutCounters(web, end[web]) {
		d := n - rolloutCounters(web, before[web])[name]
		t.Logf("%d rollouts by the %s", d, name)
		if d < 1 || d > 3 {
			t.Errorf("%d rollouts by the %s during and after the storm, want 1 to 3", d, name)
		}
	}
	podsPass(t, cs, ns, "app=web", envIs(configEnv, final))

	// Events reach the API server through Ripple's queue, behind its
	// writes: wait for the hold's before counting them.
	var held []string
	waitFor(t, "the ReloadHeld event", func(ctx context.Context) (bool, error) {
		var err error
		held, err = kit.EventNotes(ctx, cs, ns, kit.EventMatch{Kind: "Deployment", Name: "web", Reason: "ReloadHeld", Type: corev1.EventTypeWarning})
		return len(held) > 0, err
	})
	if len(held) != 1 {
		t.Errorf("%d ReloadHeld events, want 1: %q", len(held), held)
	} else if want := `ConfigMap "` + configName + `"`; !strings.Contains(held[0], want) {
		t.Errorf("ReloadHeld event %q does not name %s", held[0], want)
	}
	m := kit.Scrape(t, addr)
	if got := m[`ripple_reload_holds_total{kind="Deployment"}`]; got != 1 {
		t.Errorf("ripple_reload_holds_total = %v, want 1", got)
	}
	if got := m[`ripple_reloads_held{}`]; got != 0 {
		t.Errorf("ripple_reloads_held = %v after the hold ended, want 0", got)
	}
}

// storm writes a new value into cm every interval for d, sampling the
// held gauge after each write; it returns how many writes it made, the
// highest gauge seen, the final data's digest and when the last write
// was accepted.
func storm(t *testing.T, cs kubernetes.Interface, cm *corev1.ConfigMap, addr string, interval, d time.Duration) (int, float64, string, time.Time) {
	t.Helper()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var (
		updates int
		maxHeld float64
		last    time.Time
		sum     string
	)
	for stop := time.Now().Add(d); time.Now().Before(stop); <-tick.C {
		updates++
		cm.Data = map[string]string{"VALUE": fmt.Sprintf("v%d", updates)}
		var err error
		if cm, err = cs.CoreV1().ConfigMaps(cm.Namespace).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		last, sum = time.Now(), digest.ConfigMap(cm)
		maxHeld = max(maxHeld, kit.Scrape(t, addr)[`ripple_reloads_held{}`])
	}
	return updates, maxHeld, sum, last
}

// waitTemplateEnv waits until w's pod template sets env name to value and
// returns when it first did.
func waitTemplateEnv(t *testing.T, cs kubernetes.Interface, w workload, name, value string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := w.get(t, cs)
		if v, _ := envValue(&s.template, name); v == value {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not carry %s=%s within %s\n%s", w, name, value, timeout, describe(t.Context(), cs, w))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeAddr returns a free loopback address for Ripple's metrics.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
