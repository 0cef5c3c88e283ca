package strategy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
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
	if _, ok := s.(Annotations); !ok {
		t.Fatalf("New(\"annotations\") = %T, want Annotations", s)
	}
	tpl := &corev1.PodTemplateSpec{}
	s.Apply(tpl, []Change{{Ref: ref(refs.ConfigMap, "app"), Namespace: "ns", Hash: "h", Container: "app"}}, time.Unix(0, 0))
	if _, ok := tpl.Annotations[annotation.LastReloadedFrom]; !ok {
		t.Errorf("annotations %v, want %q", tpl.Annotations, annotation.LastReloadedFrom)
	}
}

// ref is shorthand for the tables.
func ref(k refs.Kind, name string) refs.Ref { return refs.Ref{Kind: k, Name: name} }
