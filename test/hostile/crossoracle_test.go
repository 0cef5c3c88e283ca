package hostile

import (
	"context"
	"crypto/rand"
	"fmt"

	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// The oracle across namespaces: a tenant with edit in dev and view in
// prod makes Secrets of its guesses in dev and compares the values Ripple
// writes on dev's workloads with those on prod's. With digests bound to
// their config, equal data in two namespaces or two names gives two
// values. The same test proves that the bound form rolls nothing that
// carries an earlier form: prod's workloads show the unbound MAC an
// earlier Ripple wrote when this one starts, then --digest=sha1, then a
// rotated key; each of prod's workloads rolls once per change of its
// Secret and never otherwise (counted by its generation).
func TestDigestsBoundToTheirConfig(t *testing.T) {
	admin := clientset(t, kc.Config)
	home := kit.NewNamespace(t, admin, "ripple-", nil)
	dev := kit.NewNamespace(t, admin, "dev-", nil)
	prod := kit.NewNamespace(t, admin, "prod-", nil)
	mallory := editor(t, admin, dev)
	spy := viewer(t, admin, prod)

	// The key an earlier Ripple made, and prod's workloads as it left them.
	k1 := make([]byte, 32)
	_, _ = rand.Read(k1)
	keySecret := create(t, "the digest key", admin.CoreV1().Secrets(home).Create,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: digestkey.Secret}, Data: map[string][]byte{digestkey.CurrentKey: k1}})
	db := pinSecretIn(prod, pinSecret, firstPIN)
	create(t, "prod's Secret", admin.CoreV1().Secrets(prod).Create, db)
	earlier := digest.Digester{Mode: digest.HMACSHA256, Ring: digest.Ring{Current: k1}}.Secret(db).Others[1] // unbound
	plantReaders(t, admin, prod, pinSecret, earlier)
	for _, name := range []string{"db", "guess"} {
		create(t, "a tenant's Secret", mallory.CoreV1().Secrets(dev).Create, pinSecretIn(dev, name, "000000"))
		plantReaders(t, mallory, dev, name, digest.Form{})
	}
	readers := []string{"vault", "vault-keys"}

	r := startRipple(t, home)
	// Ripple recognised the earlier form as the current data: it records
	// what it means rather than rolling.
	ring := digest.Ring{Current: k1}
	waitMeans(t, admin, prod, pinSecret, digest.Digester{Mode: digest.HMACSHA256, Ring: ring}.Secret(db))
	gens := generations(t, admin, prod, readers)
	for _, name := range []string{"db", "db-keys", "guess", "guess-keys"} {
		waitBaseline(t, admin, dev, name) // a change before it would be its baseline
	}

	// prod's PIN changes; the tenant guesses it in both of its Secrets.
	for _, c := range []struct {
		cs     kubernetes.Interface
		ns, nm string
	}{{admin, prod, pinSecret}, {mallory, dev, "db"}, {mallory, dev, "guess"}} {
		setPIN(t, c.cs, c.ns, c.nm, secondPIN)
	}
	shown := map[string]string{}
	for _, c := range []struct {
		cs     kubernetes.Interface
		ns, nm string
	}{{spy, prod, pinSecret}, {mallory, dev, "db"}, {mallory, dev, "guess"}} {
		sums := digest.Digester{Mode: digest.HMACSHA256, Ring: ring}.Secret(pinSecretIn(c.ns, c.nm, secondPIN))
		for i, name := range readerNames(c.nm) {
			want := []string{sums.Digest, sums.Keys.Of(isPIN)}[i]
			got := waitValue(t, c.cs, c.ns, name, c.nm, want)
			for where, other := range shown {
				if other == got {
					t.Errorf("%s/%s shows %s, as %s does: equal data gives equal digests across configs", c.ns, name, got, where)
				}
			}
			shown[c.ns+"/"+name] = got
		}
	}
	// The control: the unbound MAC, which an earlier Ripple wrote, was an
	// oracle: equal in both namespaces.
	unbound := func(ns, name string) string {
		return digest.Digester{Mode: digest.HMACSHA256, Ring: ring}.Secret(pinSecretIn(ns, name, secondPIN)).Others[1].Digest
	}
	if unbound(prod, pinSecret) != unbound(dev, "guess") {
		t.Fatal("the unbound forms differ across namespaces: the test proves nothing")
	}
	rolled(t, admin, prod, readers, gens, 1, "one change of the PIN")
	gens = generations(t, admin, prod, readers)

	r.proc.Stop(10 * time.Second)
	r = startRipple(t, home, "--digest=sha1")
	waitMeans(t, admin, prod, pinSecret, digest.Digester{Mode: digest.SHA1, Ring: ring}.Secret(pinSecretIn(prod, pinSecret, secondPIN)))
	rolled(t, admin, prod, readers, gens, 0, "switching to --digest=sha1")

	r.proc.Stop(10 * time.Second)
	k2 := make([]byte, 32)
	_, _ = rand.Read(k2)
	keySecret.Data = map[string][]byte{digestkey.CurrentKey: k2, digestkey.PreviousKey: k1}
	if _, err := admin.CoreV1().Secrets(home).Update(t.Context(), keySecret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ring = digest.Ring{Current: k2, Previous: k1}
	startRipple(t, home)
	waitMeans(t, admin, prod, pinSecret, digest.Digester{Mode: digest.HMACSHA256, Ring: ring}.Secret(pinSecretIn(prod, pinSecret, secondPIN)))
	rolled(t, admin, prod, readers, gens, 0, "rotating the key and switching back to --digest=hmac-sha256")

	setPIN(t, admin, prod, pinSecret, "161803")
	sums := digest.Digester{Mode: digest.HMACSHA256, Ring: ring}.Secret(pinSecretIn(prod, pinSecret, "161803"))
	waitValue(t, admin, prod, "vault", pinSecret, sums.Digest)
	waitValue(t, admin, prod, "vault-keys", pinSecret, sums.Keys.Of(isPIN))
	rolled(t, admin, prod, readers, gens, 1, "a change after the switches and the rotation")
}

func pinSecretIn(ns, name, pin string) *corev1.Secret {
	s := pinData(pin)
	s.Namespace, s.Name = ns, name
	return s
}

// readerNames are the Deployments plantReaders makes for Secret name.
func readerNames(name string) []string {
	if name == pinSecret {
		return []string{"vault", "vault-keys"}
	}
	return []string{name, name + "-keys"}
}

// plantReaders creates two Deployments of Secret name in ns, one reading
// it whole and one by key, showing shown's values when they are set.
func plantReaders(t *testing.T, cs kubernetes.Interface, ns, name string, shown digest.Form) {
	t.Helper()
	ref := refs.Ref{Kind: refs.Secret, Name: name}
	names := readerNames(name)
	whole := podTemplate(names[0])
	whole.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
	byKey := podTemplate(names[1])
	byKey.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PIN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: pinKey}}}}
	if shown.Digest != "" {
		env := corev1.EnvVar{Name: strategy.EnvVarName(ref)}
		env.Value = shown.Digest
		whole.Spec.Containers[0].Env = append(whole.Spec.Containers[0].Env, env)
		env.Value = shown.Keys.Of(isPIN)
		byKey.Spec.Containers[0].Env = append(byKey.Spec.Containers[0].Env, env)
	}
	create(t, "a Deployment of a Secret", cs.AppsV1().Deployments(ns).Create, deployment(names[0], 0, map[string]string{auto: "true"}, whole))
	create(t, "a per-key Deployment of a Secret", cs.AppsV1().Deployments(ns).Create,
		deployment(names[1], 0, map[string]string{auto: "true", reloadOnKeys: "true"}, byKey))
}

func setPIN(t *testing.T, cs kubernetes.Interface, ns, name, pin string) {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = pinData(pin).Data
	if _, err := cs.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitValue waits until Deployment ns/name shows want for Secret secret,
// read through cs, and returns it.
func waitValue(t *testing.T, cs kubernetes.Interface, ns, name, secret, want string) string {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _ = strategy.EnvVars{}.Applied(&d.Spec.Template, refs.Ref{Kind: refs.Secret, Name: secret})
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("%s/%s shows %q, not the bound digest %s, within 15s: %v", ns, name, got, want, err)
	}
	return got
}

// waitMeans waits until prod's readers of Secret name show sums, or
// record (ripple.dev/applied-alias) that what they show means it: Ripple
// reconciled them and took their value in an earlier form as the data.
func waitMeans(t *testing.T, admin kubernetes.Interface, ns, name string, sums digest.Digests) {
	t.Helper()
	ref := refs.Ref{Kind: refs.Secret, Name: name}
	names := readerNames(name)
	for i, want := range []string{sums.Digest, sums.Keys.Of(isPIN)} {
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, names[i], metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got, _ := strategy.EnvVars{}.Applied(&d.Spec.Template, ref)
			return got == want || strings.Contains(d.Annotations["ripple.dev/applied-alias"], `"means":"`+want+`"`), nil
		})
		if err != nil {
			t.Fatalf("%s/%s neither shows %s nor records that its value means it within 15s: %v", ns, names[i], want, err)
		}
	}
}

// generations are the pod templates each Deployment has had: the
// ReplicaSets the Deployment controller made for them, once it has seen
// its latest generation (a Deployment's generation itself moves with its
// annotations, which Ripple writes without rolling).
func generations(t *testing.T, admin kubernetes.Interface, ns string, names []string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || d.Status.ObservedGeneration < d.Generation {
				return false, err
			}
			rs, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			out[name] = int64(len(rs.Items))
			return err == nil, err
		})
		if err != nil {
			t.Fatalf("the Deployment controller has not seen %s/%s within 15s: %v", ns, name, err)
		}
	}
	return out
}

func rolled(t *testing.T, admin kubernetes.Interface, ns string, names []string, gens map[string]int64, n int64, what string) {
	t.Helper()
	for name, g := range generations(t, admin, ns, names) {
		if g-gens[name] != n {
			d, _ := admin.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
			var managers []string
			for _, m := range d.ManagedFields {
				managers = append(managers, fmt.Sprintf("%s %s %s %s", m.Manager, m.Operation, m.Time, m.FieldsV1.GetRawBytes()))
			}
			t.Errorf("%s/%s: %d rollouts for %s, want %d; env %v, annotations %v, managers:\n%s", ns, name, g-gens[name], what, n,
				d.Spec.Template.Spec.Containers[0].Env, d.Annotations, strings.Join(managers, "\n"))
		}
	}
}
