package strategy

import (
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

func TestNew(t *testing.T) {
	tests := map[string]struct {
		name    string
		want    string
		wantErr bool
	}{
		"env-vars":    {name: "env-vars", want: "env-vars"},
		"annotations": {name: "annotations", want: "annotations"},
		"empty":       {name: "", wantErr: true},
		"wrong case":  {name: "Env-Vars", wantErr: true},
		"unknown":     {name: "restart", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := New(tc.name)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("New(%q) = %v, want an error", tc.name, s)
				}
				msg := err.Error()
				for _, accepted := range []string{`"env-vars"`, `"annotations"`, `"` + tc.name + `"`} {
					if !strings.Contains(msg, accepted) {
						t.Errorf("error %q does not mention %s", msg, accepted)
					}
				}
				if msg != strings.ToLower(msg[:1])+msg[1:] {
					t.Errorf("error %q is not lower-case", msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q) error: %v", tc.name, err)
			}
			if got := s.Name(); got != tc.want {
				t.Errorf("New(%q).Name() = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestNewAnnotationsUsesDefaultKey(t *testing.T) {
	s, err := New("annotations")
	if err != nil {
		t.Fatal(err)
	}
	a, ok := s.(Annotations)
	if !ok {
		t.Fatalf("New(\"annotations\") = %T, want Annotations", s)
	}
	if a.Key != LastReloadedFrom {
		t.Errorf("Key = %q, want %q", a.Key, LastReloadedFrom)
	}
}

// ref is shorthand for the tables.
func ref(k refs.Kind, name string) refs.Ref { return refs.Ref{Kind: k, Name: name} }
