package hostile

import (
	"context"
	"crypto/sha1" //nolint:gosec // the attacker's guesses of an unkeyed digest
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// The secret oracle: a Secret holding a 6-digit PIN, and two Deployments
// of the other namespace reading it, one whole (Reloader's STAKATER_*
// value) and one by key (ripple.dev/reload-on-keys). A user who may view
// that namespace (not its Secrets) reads every value Ripple wrote there
// and tries every PIN against them.
const (
	pinSecret = "pin"
	pinKey    = "pin"
	// firstPIN and secondPIN are the Secret's values before and after its
	// change.
	firstPIN, secondPIN = "271828", "314159"
)

var pinRef = refs.Ref{Kind: refs.Secret, Name: pinSecret}

// plantPIN: the Secret and its two readers, created by the namespace's
// owner before Ripple starts.
func plantPIN(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	create(t, "the PIN Secret", admin.CoreV1().Secrets(ns).Create,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pinSecret}, Data: map[string][]byte{pinKey: []byte(firstPIN)}})
	whole := podTemplate("vault")
	whole.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: pinSecret}}}}
	create(t, "a Deployment of the PIN", admin.AppsV1().Deployments(ns).Create, deployment("vault", 0, map[string]string{auto: "true"}, whole))
	byKey := podTemplate("vault-keys")
	byKey.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PIN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: pinSecret}, Key: pinKey}}}}
	create(t, "a per-key Deployment of the PIN", admin.AppsV1().Deployments(ns).Create,
		deployment("vault-keys", 0, map[string]string{auto: "true", reloadOnKeys: "true"}, byKey))
}

// checkOracle changes the PIN, waits for both readers to roll, and then,
// as the viewer, reads the namespace's Deployments, ReplicaSets, Events and
// ConfigRollouts (and is refused the tenant's)
// and tries every 6-digit PIN against each hex string of 12 digits or more
// in them, as Reloader's SHA1 of the Secret's data, as the per-key digest
// of the form before keys existed, and as the plain SHA1 and SHA-256 of
// the value: none may match. The values read are checked to be the keyed
// digests of the new PIN, and the search to find an unkeyed one.
func checkOracle(t *testing.T, admin, view kubernetes.Interface, ns, home, tenant string) {
	t.Helper()
	ctx := t.Context()
	if _, err := view.CoreV1().Secrets(ns).Get(ctx, pinSecret, metav1.GetOptions{}); err == nil {
		t.Fatal("the viewer reads the Secret itself: the oracle test proves nothing")
	}
	s, err := admin.CoreV1().Secrets(ns).Get(ctx, pinSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data[pinKey] = []byte(secondPIN)
	if _, err := admin.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	key, err := admin.CoreV1().Secrets(home).Get(ctx, digestkey.Secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Ripple's digest key: %v", err)
	}
	ring, err := digestkey.Ring(key)
	if err != nil {
		t.Fatal(err)
	}
	bound := pinData(secondPIN)
	bound.Namespace, bound.Name = ns, pinSecret // the digests are bound to the Secret
	keyed := digest.Digester{Mode: digest.HMACSHA256, Ring: ring}.Secret(bound)
	want := map[string]string{"vault": keyed.Digest, "vault-keys": keyed.Keys.Of(isPIN)}
	for name, sum := range want {
		waitShows(t, admin, ns, name, sum)
	}

	var shown []byte
	for _, list := range []func(context.Context) (any, error){
		func(ctx context.Context) (any, error) {
			return view.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		},
		func(ctx context.Context) (any, error) {
			return view.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		},
		func(ctx context.Context) (any, error) {
			return view.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		},
	} {
		got, err := list(ctx)
		if err != nil {
			t.Fatalf("the viewer's list: %v", err)
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		shown = append(shown, b...)
	}
	shown = append(shown, checkChangesSeen(t, view, ns, tenant)...)
	tokens := hexRun.FindAllString(string(shown), -1)
	// The control: Reloader's unkeyed digest of the new PIN, as the viewer
	// would read it from a Ripple that did not key its values.
	control := digest.Secret(pinData(secondPIN))
	began := time.Now()
	found := guessPINs(append(tokens, control))
	t.Logf("the viewer tried 10^6 PINs against %d hex strings of the namespace in %s", len(tokens), time.Since(began).Round(time.Millisecond))
	if found[control] != secondPIN {
		t.Fatalf("the search did not find the control, Reloader's digest of PIN %s: it proves nothing", secondPIN)
	}
	delete(found, control)
	for token, pin := range found {
		t.Errorf("the viewer recovered PIN %s from %q, which Ripple wrote in the other namespace", pin, token)
	}
}

// hexRun is a run of hex digits long enough to test a guess against.
var hexRun = regexp.MustCompile(`[0-9a-f]{12,}`)

func pinData(pin string) *corev1.Secret {
	return &corev1.Secret{Data: map[string][]byte{pinKey: []byte(pin)}}
}

func isPIN(k string) bool { return k == pinKey }

// guessPINs tries each 6-digit PIN: it returns the tokens that are a
// prefix of one of its unkeyed digests, with the PIN.
func guessPINs(tokens []string) map[string]string {
	byPrefix := map[string][]string{}
	for _, tok := range tokens {
		byPrefix[tok[:12]] = append(byPrefix[tok[:12]], tok)
	}
	found := map[string]string{}
	for i := range 1_000_000 {
		pin := fmt.Sprintf("%06d", i)
		plain1, plain256 := sha1.Sum([]byte(pin)), sha256.Sum256([]byte(pin)) //nolint:gosec // see the import
		s := pinData(pin)
		for _, sum := range []string{digest.Secret(s), digest.SecretKeys(s).Of(isPIN), hex.EncodeToString(plain1[:]), hex.EncodeToString(plain256[:])} {
			for _, tok := range byPrefix[sum[:12]] {
				if len(tok) <= len(sum) && sum[:len(tok)] == tok {
					found[tok] = pin
				}
			}
		}
	}
	return found
}

// waitShows waits until the Deployment name of ns shows sum for the PIN
// Secret on its pod template.
func waitShows(t *testing.T, admin kubernetes.Interface, ns, name, sum string) {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _ = strategy.EnvVars{}.Applied(&d.Spec.Template, pinRef)
		return got == sum, nil
	})
	if err != nil {
		t.Fatalf("%s does not show the keyed digest %s of the new PIN within 10s (it shows %q): %v", name, sum, got, err)
	}
}
