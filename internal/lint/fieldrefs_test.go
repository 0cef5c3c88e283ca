package lint

import (
	"slices"
	"testing"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/declared"
)

// Lint counts the configs a declared kind's refs name as references: auto
// on an ExternalSecret that renders from a ConfigMap is no finding; on one
// that names none, auto references nothing.
func TestCheckDeclaredRefs(t *testing.T) {
	srcs, err := declared.Presets([]string{"external-secrets"})
	if err != nil {
		t.Fatal(err)
	}
	objs := load(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: tpl, namespace: shop}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: rendered
  namespace: shop
  annotations: {reloader.stakater.com/auto: "true", reloader.stakater.com/search: "true"}
spec:
  target:
    template:
      templateFrom:
      - configMap: {name: tpl, items: [{key: a}]}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: plain
  namespace: shop
  annotations: {reloader.stakater.com/auto: "true"}
spec:
  target: {name: plain}
`)
	want := []Finding{
		{Warning, "ExternalSecret shop/plain", "reloader.stakater.com/auto", `annotation "reloader.stakater.com/auto" is true but the pod template references no ConfigMap, Secret or SecretProviderClass`},
		{Warning, "ExternalSecret shop/rendered", "reloader.stakater.com/search", `annotation "reloader.stakater.com/search" is true but no config the pod template references in the files has "reloader.stakater.com/match" set to "true"`},
	}
	if got := Check(t.Context(), annotation.DefaultKeys(""), objs, srcs[0].Kinds...); !slices.Equal(got, want) {
		t.Errorf("Check =\n%s\nwant\n%s", show(got), show(want))
	}
}
