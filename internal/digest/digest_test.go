package digest

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // Reloader compatibility.
	"encoding/base64"
	"encoding/hex"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// sha1Hex hashes a literal, so expectations below do not depend on the code
// under test.
func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s)) //nolint:gosec // Reloader compatibility.
	return hex.EncodeToString(h[:])
}

// reference is Reloader's algorithm written the obvious way: build every
// "key=value" string, sort them (slices.Sort orders strings as Reloader's
// sort.Strings does), join with ";". The streaming code must agree with it
// on every input.
func reference(data map[string]string, binary map[string][]byte) string {
	var entries []string
	for k, v := range data {
		entries = append(entries, k+"="+v)
	}
	for k, v := range binary {
		entries = append(entries, k+"="+base64.StdEncoding.EncodeToString(v))
	}
	slices.Sort(entries)
	return sha1Hex(strings.Join(entries, ";"))
}

func TestConfigMap(t *testing.T) {
	tests := map[string]struct {
		cm   *corev1.ConfigMap
		want string
	}{
		"nil": {
			cm:   nil,
			want: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		},
		"empty": {
			cm:   &corev1.ConfigMap{},
			want: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		},
		"one key": {
			cm:   &corev1.ConfigMap{Data: map[string]string{"a": "2"}},
			want: "d6dbf8a400e3e00c352f9ceeca960bdf64ab6377",
		},
		"data and binaryData": {
			cm: &corev1.ConfigMap{
				Data:       map[string]string{"k": "v"},
				BinaryData: map[string][]byte{"bin": {0x00, 0x01, 0xff}},
			},
			want: "5c2b5b1f567ef23b6749b89ea0892ea9cac60f36",
		},
		"entries sort as strings, not by key": {
			// "a-b=2" sorts before "a=1" because '-' < '='.
			cm:   &corev1.ConfigMap{Data: map[string]string{"a": "1", "a-b": "2", "B": "3"}},
			want: sha1Hex("B=3;a-b=2;a=1"),
		},
		"empty value": {
			cm:   &corev1.ConfigMap{Data: map[string]string{"a": "", "b": "x"}},
			want: sha1Hex("a=;b=x"),
		},
		"labels and annotations do not count": {
			cm: func() *corev1.ConfigMap {
				cm := &corev1.ConfigMap{Data: map[string]string{"a": "2"}}
				cm.Labels = map[string]string{"l": "1"}
				cm.Annotations = map[string]string{"reloader.stakater.com/match": "true"}
				return cm
			}(),
			want: "d6dbf8a400e3e00c352f9ceeca960bdf64ab6377",
		},
		"same key in data and binaryData sorts by value": {
			// The API server rejects this, but the order must still match.
			cm: &corev1.ConfigMap{
				Data:       map[string]string{"k": "AAH0"},
				BinaryData: map[string][]byte{"k": {0x00, 0x01, 0xff}},
			},
			want: sha1Hex("k=AAH/;k=AAH0"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ConfigMap(tc.cm); got != tc.want {
				t.Errorf("ConfigMap() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestConfigMapBinaryDataLengths(t *testing.T) {
	// Lengths around the 384-byte chunk and 3-byte group boundaries, where a
	// chunked base64 writer would go wrong by padding mid-stream.
	for _, n := range []int{0, 1, 2, 3, 4, 383, 384, 385, 386, 768, 1000, 1<<20 + 1} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(i*7 + 3)
			}
			binary := map[string][]byte{"bin": b, "bin.2": b[:n/2]}
			data := map[string]string{"bin-1": "x"}
			got := ConfigMap(&corev1.ConfigMap{Data: data, BinaryData: binary})
			if want := reference(data, binary); got != want {
				t.Errorf("ConfigMap() = %s, want %s", got, want)
			}
		})
	}
}

func TestSecret(t *testing.T) {
	tests := map[string]struct {
		s    *corev1.Secret
		want string
	}{
		"nil": {
			s:    nil,
			want: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		},
		"empty": {
			s:    &corev1.Secret{},
			want: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		},
		"raw bytes, not base64": {
			s:    &corev1.Secret{Data: map[string][]byte{"a": []byte("2")}},
			want: "d6dbf8a400e3e00c352f9ceeca960bdf64ab6377",
		},
		"binary value is hashed as raw bytes": {
			s:    &corev1.Secret{Data: map[string][]byte{"bin": {0x00, 0x01, 0xff}, "k": []byte("v")}},
			want: sha1Hex("bin=\x00\x01\xff;k=v"),
		},
		"type, stringData and metadata do not count": {
			s: func() *corev1.Secret {
				s := &corev1.Secret{
					Type:       corev1.SecretTypeOpaque,
					Data:       map[string][]byte{"a": []byte("2")},
					StringData: map[string]string{"b": "3"},
				}
				s.Labels = map[string]string{"l": "1"}
				return s
			}(),
			want: "d6dbf8a400e3e00c352f9ceeca960bdf64ab6377",
		},
		"sorted entries": {
			s:    &corev1.Secret{Data: map[string][]byte{"tls.key": []byte("k"), "tls.crt": []byte("c"), "ca.crt": nil}},
			want: sha1Hex("ca.crt=;tls.crt=c;tls.key=k"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Secret(tc.s); got != tc.want {
				t.Errorf("Secret() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSecretProviderClassPodStatus(t *testing.T) {
	tests := map[string]struct {
		spc     string
		objects []SecretProviderClassObject
		want    string
	}{
		"no objects": {
			spc:  "vault",
			want: sha1Hex("SecretProviderClassName=vault"),
		},
		"objects sorted with the name entry": {
			// Upper-case 'S' sorts before lower-case ids.
			spc: "vault",
			objects: []SecretProviderClassObject{
				{ID: "secret/db", Version: "3"},
				{ID: "Alpha", Version: "1"},
				{ID: "secret/api", Version: "7"},
			},
			want: sha1Hex("Alpha=1;SecretProviderClassName=vault;secret/api=7;secret/db=3"),
		},
		"object order does not matter": {
			spc: "vault",
			objects: []SecretProviderClassObject{
				{ID: "secret/api", Version: "7"},
				{ID: "secret/db", Version: "3"},
				{ID: "Alpha", Version: "1"},
			},
			want: sha1Hex("Alpha=1;SecretProviderClassName=vault;secret/api=7;secret/db=3"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := slices.Clone(tc.objects)
			if got := SecretProviderClassPodStatus(tc.spc, tc.objects); got != tc.want {
				t.Errorf("SecretProviderClassPodStatus() = %s, want %s", got, tc.want)
			}
			if !slices.Equal(in, tc.objects) {
				t.Errorf("SecretProviderClassPodStatus() modified its input: %v, was %v", tc.objects, in)
			}
		})
	}
}

func TestDeleteMarker(t *testing.T) {
	if got := sha1Hex("__RELOADER_EMPTY_DELETE_MARKER__"); got != DeleteMarker {
		t.Errorf("SHA1 of the delete marker = %s, DeleteMarker = %s", got, DeleteMarker)
	}
}

// TestSecretAllocations guards the streaming design: hashing must not copy
// Secret values, which can be 1 MiB each.
func TestSecretAllocations(t *testing.T) {
	const valueSize = 1 << 20
	s := &corev1.Secret{Data: map[string][]byte{}}
	for _, k := range []string{"a", "b", "c", "d"} {
		s.Data[k] = bytes.Repeat([]byte(k), valueSize)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{}}
	for k, v := range s.Data {
		cm.Data[k] = string(v)
	}
	tests := map[string]func(){
		"Secret":    func() { Secret(s) },
		"ConfigMap": func() { ConfigMap(cm) },
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			const runs = 10
			fn() // warm up
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				fn()
			}
			runtime.ReadMemStats(&after)
			perRun := (after.TotalAlloc - before.TotalAlloc) / runs
			if perRun > 16<<10 {
				t.Errorf("%s() allocates %d bytes per call for 4 MiB of values, want under 16 KiB", name, perRun)
			}
		})
	}
}

// split turns "k1\x00v1\x00k2\x00v2..." into a map; a trailing key gets an
// empty value.
func split(s string) map[string]string {
	m := map[string]string{}
	parts := strings.Split(s, "\x00")
	for i := 0; i < len(parts); i += 2 {
		v := ""
		if i+1 < len(parts) {
			v = parts[i+1]
		}
		m[parts[i]] = v
	}
	return m
}

// rebuilt copies m inserting keys in reverse sorted order, so its internal
// layout, and thus iteration order, differs from m's.
func rebuilt[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	keys := slices.Sorted(maps.Keys(m))
	slices.Reverse(keys)
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

func FuzzConfigMap(f *testing.F) {
	f.Add("a\x002", "")
	f.Add("k\x00v", "bin\x00\x00\x01\xff")
	f.Add("a\x001\x00a-b\x002\x00a=\x00x", "a\x00y")
	f.Add("", "")
	f.Add("x\x00;=;\x00x=\x00", "x\x00")
	f.Fuzz(func(t *testing.T, dataEnc, binaryEnc string) {
		data := split(dataEnc)
		binary := map[string][]byte{}
		for k, v := range split(binaryEnc) {
			binary[k] = []byte(v)
		}
		cm := &corev1.ConfigMap{Data: data, BinaryData: binary}

		got := ConfigMap(cm)
		if want := reference(data, binary); got != want {
			t.Fatalf("ConfigMap() = %s, reference = %s", got, want)
		}
		if again := ConfigMap(cm); again != got {
			t.Fatalf("ConfigMap() not deterministic: %s then %s", got, again)
		}
		reordered := &corev1.ConfigMap{Data: rebuilt(data), BinaryData: rebuilt(binary)}
		if other := ConfigMap(reordered); other != got {
			t.Fatalf("ConfigMap() depends on map order: %s vs %s", got, other)
		}

		secretData := map[string][]byte{}
		for k, v := range data {
			secretData[k] = []byte(v)
		}
		if s, c := Secret(&corev1.Secret{Data: secretData}), ConfigMap(&corev1.ConfigMap{Data: data}); s != c {
			t.Fatalf("Secret() = %s, ConfigMap() of the same data = %s", s, c)
		}
	})
}

func BenchmarkSecret(b *testing.B) {
	s := &corev1.Secret{Data: map[string][]byte{}}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt", "config.yaml"} {
		s.Data[k] = bytes.Repeat([]byte(k), 64<<10)
	}
	b.ReportAllocs()
	for b.Loop() {
		Secret(s)
	}
}
