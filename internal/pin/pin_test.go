package pin

import (
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

const sha = "2415bbab7ab0c3d1e2f3a4b5c6d7e8f901234567"

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ref     refs.Ref
		digest  string
		want    string // the copy's name
		wantErr string
	}{
		{"a ConfigMap", refs.Ref{Kind: refs.ConfigMap, Name: "app"}, sha, "app-r-2415bbab7ab0", ""},
		{"a Secret, digest upper-case", refs.Ref{Kind: refs.Secret, Name: "db.creds"}, strings.ToUpper(sha), "db.creds-r-2415bbab7ab0", ""},
		{"a SecretProviderClass", refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}, sha, "", "only ConfigMaps and Secrets"},
		{"a short digest", refs.Ref{Kind: refs.ConfigMap, Name: "app"}, "2415", "", "shorter than 12"},
		{"a digest not hex", refs.Ref{Kind: refs.ConfigMap, Name: "app"}, "zz15bbab7ab0cd", "", "not hex"},
		{"a name too long for its copy", refs.Ref{Kind: refs.ConfigMap, Name: strings.Repeat("a", 245)}, sha, "", "is not a valid name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.ref, tc.digest)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New = %v, %v; want an error with %q", p, err, tc.wantErr)
				}
				return
			}
			if err != nil || p.Name() != tc.want {
				t.Fatalf("New = %q, %v; want %q", p.Name(), err, tc.want)
			}
		})
	}
}

// A record reads back as written, sorted whatever the order given, and
// Parse refuses what Format never writes.
func TestFormatParse(t *testing.T) {
	db, _ := New(refs.Ref{Kind: refs.Secret, Name: "db"}, sha)
	app, _ := New(refs.Ref{Kind: refs.ConfigMap, Name: "app"}, "9f1c000000ffffff")
	rec := Format([]Pin{db, app, db})
	if want := "configmap/app=9f1c000000ff,secret/db=2415bbab7ab0"; rec != want {
		t.Fatalf("Format = %q, want %q", rec, want)
	}
	got, err := Parse(rec)
	if err != nil || len(got) != 2 || got[0] != app || got[1] != db {
		t.Fatalf("Parse(%q) = %v, %v", rec, got, err)
	}
	for _, bad := range []string{
		"configmap/app",               // no digest
		"ConfigMap/app=9f1c000000ff",  // the kind as Kubernetes spells it
		"configmap/app=9f1c",          // too short
		"csi/vault=9f1c000000ff",      // not a kind that is copied
		"configmap/App=9f1c000000ff",  // not a name
		"configmap/app=9f1c000000ff,", // an empty item
		strings.Repeat("secret/a=0123456789ab,", MaxPins) + "secret/b=0123456789ab", // too many
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
	if got, err := Parse(""); err != nil || got != nil {
		t.Errorf("Parse(\"\") = %v, %v; want nothing", got, err)
	}
}
