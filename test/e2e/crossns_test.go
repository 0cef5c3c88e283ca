package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

const sharedWithAnnot = "ripple.dev/shared-with"

// A Deployment in namespace b that names a/shared rolls when a/shared
// changes only while a/shared carries ripple.dev/shared-with: b. Without
// the grant (and for a config that does not exist, in the same words) it
// gets a Warning and nothing of the config is read: no digest in its
// record or template, none in `ripple explain`. The grant added rolls
// nothing by itself (a baseline); removed, the reference stops being
// followed: no rollout, the record forgets it.
func TestCrossNamespaceGrant(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	a, b := newNamespace(t, cs), newNamespace(t, cs)
	shared := createConfigMap(t, cs, a, "shared", "s1")
	local := createConfigMap(t, cs, b, "local", "v1")
	ref := a + "/shared"
	web := workload{kit.Deployment, b, "web"}
	web.create(t, cs, spec{annotations: map[string]string{configMapReloadAnnot: "local, " + ref + ", " + a + "/missing"}})
	env := strategy.EnvVarName(refs.Ref{Kind: refs.ConfigMap, Name: ref})
	before := waitRolledOut(t, cs, web)
	startRipple(t, b, "--namespaces="+a, "--settle-window=0s")

	// Not granted: a Warning in the words of a missing config, nothing read.
	waitBaseline(t, cs, web, digest.ConfigMap(local))
	notShared := func(name string) string { return `ConfigMap "` + name + `" is not shared with this namespace` }
	waitEventNaming(t, cs, web, string(reason.InvalidAnnotation), notShared(ref))
	waitEventNaming(t, cs, web, string(reason.InvalidAnnotation), notShared(a+"/missing"))
	sum := setConfigMapValue(t, cs, a, "shared", "s2")
	before = expectNoRollout(t, cs, before)
	expectUnread(t, cs, web, ref, digest.ConfigMap(shared), sum)

	// Granted: first sight is a baseline, and the next change rolls.
	grant(t, cs, a, "shared", "other, "+b)
	waitBaseline(t, cs, web, digest.ConfigMap(local), sum)
	before = expectNoRollout(t, cs, before)
	ex := explainOf(t, web)
	if !slices.ContainsFunc(ex.Sources, func(s explainSource) bool { return s.Name == ref && s.Found && s.Reload }) ||
		len(ex.Warnings) != 1 || !strings.Contains(ex.Warnings[0], notShared(a+"/missing")) {
		t.Errorf("explain of a granted reference: sources %+v, warnings %q", ex.Sources, ex.Warnings)
	}
	sum = setConfigMapValue(t, cs, a, "shared", "s3")
	before = expectRollouts(t, cs, map[workload]rollouts{web: {before: before[web], n: 1, checks: []templateCheck{envIs(env, sum)}}})
	if env == "STAKATER_SHARED_CONFIGMAP" || strings.HasPrefix(env, "STAKATER_") {
		t.Errorf("the shared config's env var %q may collide with a same-namespace config's", env)
	}

	// Grant removed: no rollout, the reference is not followed any more.
	grant(t, cs, a, "shared", "other")
	waitFor(t, "the record to forget "+ref, func(ctx context.Context) (bool, error) {
		s, err := web.observe(ctx, cs)
		return err == nil && !strings.Contains(s.annotations[appliedAnnotation], ref), err
	})
	setConfigMapValue(t, cs, a, "shared", "s4")
	expectNoRollout(t, cs, before)
}

// explainSource and explained are what the test reads of `ripple explain
// -o json`.
type explainSource struct {
	Name          string
	Found, Reload bool
}

type explained struct {
	Sources  []explainSource
	Warnings []string
}

// explainOf runs `ripple explain -o json` on w.
func explainOf(t *testing.T, w workload) explained {
	t.Helper()
	out, err := runCommand(t, w.ns, "explain", "deployment/"+w.name, "-o", "json")
	var ex explained
	if err == nil {
		err = json.Unmarshal([]byte(out), &ex)
	}
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, out)
	}
	return ex
}

// grant sets the shared-with annotation of ConfigMap ns/name to v.
func grant(t *testing.T, cs kubernetes.Interface, ns, name, v string) {
	t.Helper()
	updateConfigMap(t, cs, ns, name, func(cm *corev1.ConfigMap) {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[sharedWithAnnot] = v
	})
}

// expectUnread fails unless nothing of the config ref, whose data had
// the digests sums, is on w (its applied record, its pod template) or in
// `ripple explain -o json` of it, but the reason it is not followed.
func expectUnread(t *testing.T, cs kubernetes.Interface, w workload, ref string, sums ...string) {
	t.Helper()
	s, err := w.observe(t.Context(), cs)
	if err != nil {
		t.Fatal(err)
	}
	record := s.annotations[appliedAnnotation]
	for _, e := range s.template.Spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, "RIPPLE_SHARED_") {
			t.Errorf("template has %s=%s for a config not shared", e.Name, e.Value)
		}
	}
	out, err := runCommand(t, w.ns, "explain", "deployment/"+w.name, "-o", "json")
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, out)
	}
	if strings.Contains(record, ref) {
		t.Errorf("record %s names %s", record, ref)
	}
	for _, sum := range sums {
		// explain shortens digests; the first 12 hex digits are as telling.
		if strings.Contains(record, sum) || strings.Contains(out, sum[:12]) {
			t.Errorf("the digest %s of %s was read: record %s, explain:\n%s", sum, ref, record, out)
		}
	}
	if !strings.Contains(out, "is not shared with this namespace") {
		t.Errorf("explain does not say %s is not shared:\n%s", ref, out)
	}
}
