package digest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDigester(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{"pin": []byte("123456"), "user": []byte("bob")}}
	k1, k2 := []byte("key one"), []byte("key two")
	unkeyed := Digester{}.Secret(s)
	if unkeyed.Digest != Secret(s) || unkeyed.Keys != SecretKeys(s) || unkeyed.Others != nil {
		t.Fatalf("the zero Digester: %+v, want Reloader's digest and the unkeyed table alone", unkeyed)
	}
	sha := Digester{Mode: SHA1, Ring: Ring{Current: k1}}.Secret(s)
	mac := hmac.New(sha256.New, k1)
	mac.Write([]byte("pin=123456;user=bob"))
	want := hex.EncodeToString(mac.Sum(nil))
	switch {
	case sha.Digest != Secret(s):
		t.Errorf("sha1 mode writes %q, want Reloader's %q", sha.Digest, Secret(s))
	case sha.Keys == SecretKeys(s) || sha.Keys == "":
		t.Errorf("sha1 mode keeps the unkeyed table %q", sha.Keys)
	case len(sha.Others) != 2 || sha.Others[0] != (Form{Secret(s), SecretKeys(s)}) || sha.Others[1] != (Form{want, sha.Keys}):
		t.Errorf("others %+v, want unkeyed and the current key's", sha.Others)
	}
	h := Digester{Mode: HMACSHA256, Ring: Ring{Current: k2, Previous: k1}}.Secret(s)
	switch {
	case h.Digest == Secret(s) || len(h.Digest) != 64:
		t.Errorf("hmac-sha256 mode writes %q", h.Digest)
	case len(h.Others) != 3 || h.Others[2] != sha.Others[1] || h.Others[1] != h.Form:
		t.Errorf("others %+v, want unkeyed, the current key's (%+v), the previous key's (%+v)", h.Others, h.Form, sha.Others[1])
	}
	cm := Digester{Mode: HMACSHA256, Ring: Ring{Current: k1}}.ConfigMap(&corev1.ConfigMap{Data: map[string]string{"pin": "123456", "user": "bob"}})
	if cm.Digest != want || cm.Keys != sha.Keys {
		t.Errorf("a ConfigMap with the same bytes: %+v, want the Secret's digests", cm.Form)
	}
}
