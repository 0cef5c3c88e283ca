package digest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var k1, k2 = []byte("key one"), []byte("key two")

func pinSecret(ns, name, pin string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{"pin": []byte(pin), "user": []byte("bob")}}
}

// unboundMAC is the digest --digest=hmac-sha256 wrote before digests were
// bound to their config for pinSecret's data with PIN 123456: the HMAC of
// Reloader's input alone.
func unboundMAC(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("pin=123456;user=bob"))
	return hex.EncodeToString(m.Sum(nil))
}

// unboundEntry is a key table's entry as written before tables were bound.
func unboundEntry(key []byte, value string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:keyDigestBytes])
}

func TestDigester(t *testing.T) {
	s := pinSecret("shop", "db", "123456")
	unkeyed := Digester{}.Secret(s)
	if unkeyed.Digest != Secret(s) || unkeyed.Keys != SecretKeys(s) || unkeyed.Others != nil {
		t.Fatalf("the zero Digester: %+v, want Reloader's digest and the unkeyed table alone", unkeyed)
	}
	legacy := Form{unboundMAC(k1), KeyTable("pin=" + unboundEntry(k1, "123456") + ",user=" + unboundEntry(k1, "bob"))}
	sha := Digester{Mode: SHA1, Ring: Ring{Current: k1}}.Secret(s)
	switch {
	case sha.Digest != Secret(s):
		t.Errorf("sha1 mode writes %q, want Reloader's %q", sha.Digest, Secret(s))
	case sha.Keys == SecretKeys(s) || sha.Keys == legacy.Keys || sha.Keys == "":
		t.Errorf("sha1 mode writes the table %q, unkeyed or unbound", sha.Keys)
	case len(sha.Others) != 3 || sha.Others[0] != (Form{Secret(s), SecretKeys(s)}) || sha.Others[1] != legacy || sha.Others[2].Keys != sha.Keys:
		t.Errorf("others %+v, want unkeyed, the current key's unbound %+v and bound", sha.Others, legacy)
	}
	h := Digester{Mode: HMACSHA256, Ring: Ring{Current: k1}}.Secret(s)
	switch {
	case h.Digest == Secret(s) || h.Digest == legacy.Digest || len(h.Digest) != 64:
		t.Errorf("hmac-sha256 mode writes %q, want the bound MAC (not Reloader's, not the unbound %q)", h.Digest, legacy.Digest)
	case h.Keys != sha.Keys || h.Others[2] != h.Form || !slices.Equal(h.Others, sha.Others):
		t.Errorf("hmac-sha256 mode: %+v, others %+v; want the bound form written, the same forms as sha1 mode's", h.Form, h.Others)
	}
	rotated := Digester{Mode: HMACSHA256, Ring: Ring{Current: k2, Previous: k1}}.Secret(s)
	if len(rotated.Others) != 5 || rotated.Others[3] != legacy || rotated.Others[4] != h.Form || rotated.Form == h.Form {
		t.Errorf("rotated to k2: others %+v, want unkeyed, k2's unbound and bound, k1's unbound %+v and bound %+v", rotated.Others, legacy, h.Form)
	}
}

// Equal data in two namespaces, two names or two kinds gives different
// digests and different key table entries in the forms Ripple writes: a
// user who may write one config cannot test guesses of another's against
// what Ripple writes on its workloads.
func TestBoundFormsDifferByConfig(t *testing.T) {
	d := Digester{Mode: HMACSHA256, Ring: Ring{Current: k1}}
	prod := d.Secret(pinSecret("prod", "db", "123456"))
	others := map[string]Digests{
		"another namespace": d.Secret(pinSecret("dev", "db", "123456")),
		"another name":      d.Secret(pinSecret("prod", "guess", "123456")),
		"a ConfigMap":       d.ConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "db"}, Data: map[string]string{"pin": "123456", "user": "bob"}}),
	}
	prodKeys := prod.Keys.Of(func(string) bool { return true })
	for what, o := range others {
		if o.Digest == prod.Digest {
			t.Errorf("%s with the same data has the same digest %s", what, o.Digest)
		}
		for k, v := range o.Keys.All() {
			for pk, pv := range prod.Keys.All() {
				if pk == k && pv == v {
					t.Errorf("%s: key %q has the same table digest %s", what, k, v)
				}
			}
		}
		if o.Keys.Of(func(string) bool { return true }) == prodKeys {
			t.Errorf("%s: the per-key digest is the same", what)
		}
		// What it shows no longer tests a guess of prod's data: the
		// unbound MAC, which it equals, is not written.
		if o.Others[1].Digest != prod.Others[1].Digest {
			t.Errorf("%s: the unbound forms differ: the test does not test binding", what)
		}
	}
	if again := d.Secret(pinSecret("prod", "db", "123456")); again.Form != prod.Form {
		t.Errorf("the same config and data: %+v, then %+v", prod.Form, again.Form)
	}
	if changed := d.Secret(pinSecret("prod", "db", "654321")); changed.Digest == prod.Digest {
		t.Errorf("changed data keeps the digest %s", prod.Digest)
	}
}

// Whatever form a workload shows for the data (Reloader's, Ripple's
// unbound MAC of before, a bound one under the previous key, either mode's
// key table), a Digester of the other settings recognises it among the
// forms of the same data: switching modes, upgrading and rotating the key
// roll nothing.
func TestEveryEarlierFormIsRecognised(t *testing.T) {
	s := pinSecret("prod", "db", "123456")
	settings := map[string]Digester{
		"no key":              {Mode: SHA1},
		"sha1, k1":            {Mode: SHA1, Ring: Ring{Current: k1}},
		"hmac-sha256, k1":     {Mode: HMACSHA256, Ring: Ring{Current: k1}},
		"sha1, k2 after k1":   {Mode: SHA1, Ring: Ring{Current: k2, Previous: k1}},
		"hmac, k2 after k1":   {Mode: HMACSHA256, Ring: Ring{Current: k2, Previous: k1}},
		"hmac-sha256, no key": {Mode: HMACSHA256},
	}
	shown := []Form{
		{Secret(s), SecretKeys(s)}, // Reloader's, or Ripple's before keys
		{unboundMAC(k1), KeyTable("pin=" + unboundEntry(k1, "123456") + ",user=" + unboundEntry(k1, "bob"))},
		settings["hmac-sha256, k1"].Secret(s).Form,
		settings["sha1, k1"].Secret(s).Form,
	}
	knows := func(d Digests, f Form) (digest, keys bool) {
		for _, o := range append([]Form{d.Form}, d.Others...) {
			digest = digest || o.Digest == f.Digest
			keys = keys || o.Keys == f.Keys
		}
		return digest, keys
	}
	for name, d := range settings {
		if d.Ring.Current == nil {
			continue // without a key only the unkeyed form is known, as before
		}
		got := d.Secret(s)
		for i, f := range shown {
			if digest, keys := knows(got, f); !digest || !keys {
				t.Errorf("%s: shown form %d %+v recognised: digest %t, key table %t", name, i, f, digest, keys)
			}
		}
	}
	// A key ring that moved on twice no longer knows k1's forms: the
	// rotation procedure waits for every workload to show k2's first.
	if digest, _ := knows(Digester{Mode: HMACSHA256, Ring: Ring{Current: []byte("key three"), Previous: k2}}.Secret(s), shown[2]); digest {
		t.Error("a ring without k1 recognises k1's digest")
	}
}

// ConfigRollout revisions are made of the digest each mode wrote before
// digests were bound, so binding them changes no revision.
func TestRevisionSum(t *testing.T) {
	s := pinSecret("prod", "db", "123456")
	legacy := unboundMAC(k1)
	for _, c := range []struct {
		d    Digester
		want string
	}{
		{Digester{}, Secret(s)},
		{Digester{Mode: SHA1, Ring: Ring{Current: k1}}, Secret(s)},
		{Digester{Mode: HMACSHA256, Ring: Ring{Current: k1}}, legacy},
		{Digester{Mode: HMACSHA256, Ring: Ring{Current: k2, Previous: k1}}, unboundMAC(k2)},
		{Digester{Mode: HMACSHA256}, Secret(s)},
	} {
		got := c.d.Secret(s)
		if sum := RevisionSum(got.Digest, got.Others); sum != c.want {
			t.Errorf("%s %s: revision sum %s, want %s", c.d.Mode, c.d.Ring.Current, sum, c.want)
		}
	}
	if sum := RevisionSum("abc", nil); sum != "abc" {
		t.Errorf("a CSI digest, without forms: %s", sum)
	}
}
