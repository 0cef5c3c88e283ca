package digest

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestKeyTable(t *testing.T) {
	table := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"b": "2", "a": "1"}, BinaryData: map[string][]byte{"c.bin": {0, 1}}})
	got := maps.Collect(table.All())
	if len(got) != 3 || got["a"] == "" || got["b"] == "" || got["c.bin"] == "" {
		t.Fatalf("table %q parses to %v", table, got)
	}
	for k, d := range got {
		if len(d) != 12 {
			t.Errorf("%s: digest %q, want 12 characters", k, d)
		}
	}
	if secret := SecretKeys(&corev1.Secret{Data: map[string][]byte{"password": []byte("hunter2")}}); strings.Contains(string(secret), "hunter2") {
		t.Errorf("table %q holds the value", secret)
	}
	// One set of keys and values, one table, whatever the map order.
	for range 20 {
		if again := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c.bin": {0, 1}}}); again != table {
			t.Fatalf("table %q, then %q", table, again)
		}
	}
}

// The same bytes give the same key digest in data, binaryData and a
// Secret: the pod sees the same file or env var.
func TestKeyDigestFollowsTheBytes(t *testing.T) {
	a := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"k": "v"}})
	b := ConfigMapKeys(&corev1.ConfigMap{BinaryData: map[string][]byte{"k": []byte("v")}})
	s := SecretKeys(&corev1.Secret{Data: map[string][]byte{"k": []byte("v")}})
	if a != b || a != s {
		t.Fatalf("%q, %q, %q", a, b, s)
	}
	if c := SecretKeys(&corev1.Secret{Data: map[string][]byte{"k": []byte("w")}}); c == s {
		t.Fatal("another value, the same table")
	}
}

// The table's size follows the keys, not the values.
func TestKeyTableSizeIgnoresValueSize(t *testing.T) {
	of := func(size int) KeyTable {
		data := map[string][]byte{}
		for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
			data[k] = bytes.Repeat([]byte{'x'}, size)
		}
		return SecretKeys(&corev1.Secret{Data: data})
	}
	small, large := of(1), of(1<<20)
	if len(small) != len(large) || small == large {
		t.Fatalf("%d bytes for 1-byte values, %d for 1 MiB ones (%q)", len(small), len(large), large)
	}
}

func TestKeyTableOf(t *testing.T) {
	v1 := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "1"}})
	v2 := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}})
	v3 := ConfigMapKeys(&corev1.ConfigMap{Data: map[string]string{"a": "2", "b": "2"}})
	onlyA := func(k string) bool { return k == "a" }
	if v1.Of(onlyA) != v2.Of(onlyA) {
		t.Error("a change of b changes the digest of a")
	}
	if v2.Of(onlyA) == v3.Of(onlyA) {
		t.Error("a change of a leaves the digest of a")
	}
	all := func(string) bool { return true }
	if sum := v1.Of(all); len(sum) != 40 || sum == ConfigMap(&corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "1"}}) {
		t.Errorf("digest %q: want 40 hex characters, not Reloader's digest", sum)
	}
	none := KeyTable("")
	if none.Of(onlyA) == v1.Of(onlyA) || slices.Collect(maps.Keys(maps.Collect(none.All()))) != nil {
		t.Error("a key removed is no change, or the empty table has entries")
	}
}
