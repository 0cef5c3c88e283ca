package chart

import (
	"strings"
	"testing"
)

// TestImage: the image values keep Reloader's meaning (repository and tag,
// or global.imageRegistry with name, a digest winning over the tag), except
// that Reloader's own image is replaced by Ripple's.
func TestImage(t *testing.T) {
	const ripple = "ghcr.io/ripple-dev/ripple:v0.1.0"
	digest := "sha256:" + strings.Repeat("0f", 32)
	for _, tc := range []struct {
		name     string
		reloader bool
		values   map[string]any
		want     string
	}{
		{"chart defaults", false, nil, ripple},
		{"Reloader's values", true, nil, ripple},
		{"Reloader's values with a registry", true, map[string]any{"global": map[string]any{"imageRegistry": "registry.example.com/"}}, "registry.example.com/ripple-dev/ripple:v0.1.0"},
		{"Reloader's digest is dropped with its image", true, map[string]any{"image": map[string]any{"digest": digest}}, ripple},
		{"a mirror and a tag", true, map[string]any{"image": map[string]any{"repository": "mirror.example.com/ripple", "tag": "v0.2.0"}}, "mirror.example.com/ripple:v0.2.0"},
		{"a numeric tag", false, map[string]any{"image": map[string]any{"tag": 1.2}}, "ghcr.io/ripple-dev/ripple:1.2"},
		{"a digest", false, map[string]any{"image": map[string]any{"digest": digest}}, "ghcr.io/ripple-dev/ripple@" + digest},
		{"a registry and a name", false, map[string]any{"global": map[string]any{"imageRegistry": "registry.example.com"}, "image": map[string]any{"name": "team/ripple", "tag": "v1"}}, "registry.example.com/team/ripple:v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rel := Release{Name: relName, Namespace: relNS, Args: []string{"--show-only", "templates/deployment.yaml"}}
			if tc.reloader {
				rel.ValuesFiles = []string{reloaderValues()}
			}
			if tc.values != nil {
				rel.Values = []map[string]any{tc.values}
			}
			_, objs := render(t, rel)
			if _, c := rippleDeployment(t, objs); c.Image != tc.want {
				t.Errorf("image %q, want %q", c.Image, tc.want)
			}
		})
	}
}
