package integration

import (
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // the plain digest an attacker would test guesses against
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// ownDigestKey gives e's Ripples a namespace of their own, e's (where the
// key Secret and the meta-info live), apart from the other tests'.
func ownDigestKey(e *env) {
	e.environ = map[string]string{"POD_NAMESPACE": e.ns, "RELOADER_NAMESPACE": e.ns}
}

// secretDigests are the strings no output may hold in keyed mode for
// Secret db holding k=value under the ring: the plain SHA1 and SHA-256 of
// the value, Reloader's digest of the data, the unkeyed and keyed key
// tables' entries and per-key digests, the HMACs; each as its 8-character
// prefix, which any longer prefix holds.
func secretDigests(d digest.Digester, db *corev1.Secret, value string) []string {
	s := &corev1.Secret{ObjectMeta: db.ObjectMeta, Data: map[string][]byte{"k": []byte(value)}}
	plain1, plain256 := sha1.Sum([]byte(value)), sha256.Sum256([]byte(value)) //nolint:gosec // see the import
	all := []string{hex.EncodeToString(plain1[:]), hex.EncodeToString(plain256[:]), base64.RawURLEncoding.EncodeToString(plain256[:])}
	sums := d.Secret(s)
	for _, f := range append(sums.Others, sums.Form) {
		all = append(all, f.Digest, f.Keys.Of(func(string) bool { return true }))
		for _, v := range f.Keys.All() {
			all = append(all, v)
		}
	}
	out := make([]string, 0, len(all))
	for _, a := range all {
		out = append(out, a[:8])
	}
	return out
}

// dbSecret is the Secret db of e's namespace, without data: the config
// the tests' digests are bound to.
func dbSecret(e *env) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "db"}}
}

// ripple runs the ripple binary's command against the test API server, on
// e's namespace, with Ripple's settings and key read from e's namespace.
func (e *env) ripple(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("RIPPLE_BINARY")
	if bin == "" {
		t.Fatal("RIPPLE_BINARY is not set: `make build`, then RIPPLE_BINARY=$PWD/bin/ripple")
	}
	args = append(args, "--kubeconfig="+api.Kubeconfig, "-n", e.ns, "--ripple-namespace="+e.ns)
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ripple %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// With --digest=hmac-sha256, no Event, log line, metric, explain or
// history output holds a digest of a Secret's data, keyed or not, nor any
// 8-character prefix of one: after a reload of a whole Secret, a per-key
// reload, and a change held for approval.
func TestKeyedModeShowsNoSecretDigest(t *testing.T) {
	e := newEnv(t)
	ownDigestKey(e)
	e.registry = prometheus.NewRegistry()
	e.run(t, "--digest=hmac-sha256")
	d := e.digester(t, digest.HMACSHA256)
	db := refs.Ref{Kind: refs.Secret, Name: "db"}
	e.newConfig(t, db)
	whole := e.newWorkload(t, kit.Deployment, "whole", ann(autoKey, "true"), envFrom(db.Kind, db.Name))
	perKey := e.newWorkload(t, kit.Deployment, "perkey", ann(autoKey, "true", reloadOnKeysKey, "true"), valueFrom(db.Kind, db.Name))
	manual := e.newWorkload(t, kit.Deployment, "manual", ann(autoKey, "true", "ripple.dev/reload-policy", "manual"), envFrom(db.Kind, db.Name))
	for _, w := range []client.Object{whole, perKey, manual} {
		e.waitFor(t, w, "the baseline record", tracks(db))
	}

	e.setConfig(t, db, "123456")
	sums := d.Secret(&corev1.Secret{ObjectMeta: dbSecret(e).ObjectMeta, Data: map[string][]byte{"k": []byte("123456")}})
	e.waitApplied(t, kit.Deployment, whole, db, sums.Digest)
	e.waitApplied(t, kit.Deployment, perKey, db, sums.Keys.Of(func(k string) bool { return k == "k" }))
	pending := e.waitEvent(t, "manual", corev1.EventTypeNormal, "ReloadPending")

	outputs := map[string]string{"log": e.logs.String()}
	events, err := e.cs.CoreV1().Events(e.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		outputs["Event "+ev.Reason+" on "+ev.InvolvedObject.Name] = ev.Message
	}
	families, err := e.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	outputs["metrics"] = fmt.Sprint(families)
	for _, w := range []string{"whole", "perkey", "manual"} {
		outputs["explain "+w] = e.ripple(t, "explain", "deployment/"+w)
		outputs["explain -o json "+w] = e.ripple(t, "explain", "deployment/"+w, "-o", "json")
		outputs["history "+w] = e.ripple(t, "history", "deployment/"+w, "-o", "json")
	}
	outputs["explain secret/db"] = e.ripple(t, "explain", "secret/db", "-o", "json")
	for _, v := range []string{"v1", "123456"} {
		for _, sum := range secretDigests(d, dbSecret(e), v) {
			for what, out := range outputs {
				if strings.Contains(out, sum) {
					t.Errorf("%s holds %q, a digest of the Secret's value %q:\n%s", what, sum, v, out)
				}
			}
		}
	}
	// The outputs were read: the Event and explain name the change that waits.
	if !strings.Contains(pending[0], `Secret "db"`) || !strings.Contains(outputs["explain manual"], "ReloadPending") {
		t.Errorf("the ReloadPending Event %q, explain of the manual workload:\n%s", pending[0], outputs["explain manual"])
	}
}

// Switching --digest either way and rotating the key roll nothing: the
// values the workloads show in the other form are recognised (and an
// alias records it once the Ripple reconciled them); a change of the
// Secret after each still rolls each workload once.
func TestDigestModeSwitchAndKeyRotationRollNothing(t *testing.T) {
	e := newEnv(t)
	ownDigestKey(e)
	db := refs.Ref{Kind: refs.Secret, Name: "db"}
	e.newConfig(t, db)
	whole := e.newWorkload(t, kit.Deployment, "whole", ann(autoKey, "true"), envFrom(db.Kind, db.Name))
	perKey := e.newWorkload(t, kit.Deployment, "perkey", ann(autoKey, "true", reloadOnKeysKey, "true"), valueFrom(db.Kind, db.Name))
	workloads := []client.Object{whole, perKey}
	value := 0
	// change changes the Secret under mode and waits for each workload to
	// show its new digest: one rollout each.
	change := func(mode digest.Mode) {
		t.Helper()
		value++
		e.setConfig(t, db, fmt.Sprint("v", value+1))
		sums := e.digester(t, mode).Secret(&corev1.Secret{ObjectMeta: dbSecret(e).ObjectMeta, Data: map[string][]byte{"k": []byte(fmt.Sprint("v", value+1))}})
		e.waitApplied(t, kit.Deployment, whole, db, sums.Digest)
		e.waitApplied(t, kit.Deployment, perKey, db, sums.Keys.Of(func(k string) bool { return k == "k" }))
	}
	// restart runs a new Ripple under mode and waits until it has
	// reconciled each workload whose value is in another form: its alias
	// stands for mode's digest of the current data. Nothing may roll
	// meanwhile; the count over the whole test judges the rest.
	stop := func() {}
	restart := func(mode digest.Mode) {
		t.Helper()
		stop()
		rolls := []func() int{e.templateChanges(t, whole), e.templateChanges(t, perKey)}
		stop = e.run(t, "--digest="+string(mode))
		sums := e.digester(t, mode).Secret(&corev1.Secret{ObjectMeta: dbSecret(e).ObjectMeta, Data: map[string][]byte{"k": []byte(fmt.Sprint("v", value+1))}})
		means := []string{sums.Digest, sums.Keys.Of(func(k string) bool { return k == "k" })}
		for i, w := range workloads {
			// A per-key digest is keyed in either mode: it may show
			// mode's value already, with nothing to record.
			e.waitFor(t, w, "mode's digest, or an alias for it", func(o client.Object) bool {
				shown, _ := strategy.EnvVars{}.Applied(kit.Deployment.Template(o), db)
				return shown == means[i] || strings.Contains(o.GetAnnotations()["ripple.dev/applied-alias"], `"means":"`+means[i]+`"`)
			})
			if n := rolls[i](); n != 0 {
				t.Fatalf("%s rolled %d times when Ripple restarted with --digest=%s", w.GetName(), n, mode)
			}
		}
	}

	stop = e.run(t)
	for _, w := range workloads {
		e.waitFor(t, w, "the baseline record", tracks(db))
	}
	change(digest.SHA1)
	restart(digest.HMACSHA256)
	counted := []func() int{e.templateChanges(t, whole), e.templateChanges(t, perKey)}
	change(digest.HMACSHA256)
	e.rotateDigestKey(t)
	restart(digest.HMACSHA256)
	restart(digest.SHA1)
	change(digest.SHA1)
	for i, w := range workloads {
		if n := counted[i](); n != 2 {
			t.Errorf("%s: %d rollouts for two changes of the Secret across the switches and the rotation, want 2", w.GetName(), n)
		}
	}
}

// rotateDigestKey rotates the key in e's namespace as docs/security.md
// says: the current key becomes the previous one, a new one the current.
func (e *env) rotateDigestKey(t *testing.T) {
	t.Helper()
	s := &corev1.Secret{}
	if err := e.c.Get(t.Context(), types.NamespacedName{Namespace: e.ns, Name: digestkey.Secret}, s); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s.Data[digestkey.PreviousKey], s.Data[digestkey.CurrentKey] = s.Data[digestkey.CurrentKey], key
	if err := e.c.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}
