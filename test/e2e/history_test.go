package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/history"
)

// update rewrites the golden files of `ripple history` instead of
// comparing with them: go test ./test/e2e -run TestHistory -update.
var update = flag.Bool("update", false, "rewrite testdata/history from the current output")

// `ripple history` on a Deployment with four revisions, made by the
// deployment controller of a real cluster: created (Ripple records the
// baseline), a config change (Ripple reloads), an image change (someone
// else), a config change again (Ripple). Then, with Ripple stopped, the
// config changes once more: history still works and says the current
// revision's pods read newer data. The output must name the right digest
// for each revision and who started it; the table and the JSON are
// compared with golden files.
func TestHistory(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns)

	w := workload{kind: kit.Deployment, ns: ns, name: "web"}
	sums := []string{digest.ConfigMap(createConfigMap(t, cs, ns, configName, "v1"))}
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, w)
	waitBaseline(t, cs, w, sums[0])
	waitReplicaSetRecord(t, cs, w, before[w].uid)

	sums = append(sums, setConfigMapValue(t, cs, ns, configName, "v2"))
	before = expectRollouts(t, cs, oneEach(before, envIs(configEnv, sums[1])))

	patch := `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry.invalid/web:2"}]`
	if _, err := cs.AppsV1().Deployments(ns).Patch(t.Context(), w.name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before = expectRollouts(t, cs, oneEach(before))

	sums = append(sums, setConfigMapValue(t, cs, ns, configName, "v3"))
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sums[2])))

	// Read only, and no controller needed.
	r.Stop()
	sums = append(sums, setConfigMapValue(t, cs, ns, configName, "v4"))

	out := runHistory(t, ns, "deploy/web", "-o", "json")
	var h history.History
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("history -o json: %v\n%s", err, out)
	}
	checkHistory(t, h, sums)
	compareHistoryGolden(t, "deployment.json", normalizeHistory(out, ns))
	compareHistoryGolden(t, "deployment.txt", normalizeHistory(runHistory(t, ns, "deployment", "web"), ns))

	// `kubectl rollout undo --to-revision=3`: revision 3's ReplicaSet
	// becomes revision 5. Only the reload env var differs from revision
	// 4, so the evidence cannot tell an undo from a reload: unknown, naming
	// revision 3.
	undo(t, cs, w, before[w].uid, "3")
	out = runHistory(t, ns, "deploy/web", "-o", "json")
	h = history.History{}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("history -o json: %v\n%s", err, out)
	}
	if n := len(h.Revisions); n != 4 || h.Revisions[n-1].Revision != 5 || h.Revisions[n-1].StartedBy != history.ByUnknown ||
		!slices.Equal(h.Revisions[n-1].Earlier, []int64{3}) || h.Revisions[n-1].Configs[0].Digest != sums[1][:12] {
		t.Errorf("after the undo: %+v", h.Revisions)
	}
	compareHistoryGolden(t, "deployment-undo.txt", normalizeHistory(runHistory(t, ns, "deploy/web"), ns))
}

// undo runs `kubectl rollout undo --to-revision` (the kubectl binary: it
// restores the ReplicaSet's pod template and the Deployment's annotations
// from it), and waits until the Deployment is back on that ReplicaSet.
func undo(t *testing.T, cs kubernetes.Interface, w workload, uid types.UID, revision string) {
	t.Helper()
	rss, err := kit.ReplicaSets(t.Context(), cs, w.ns, uid)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rss, func(rs appsv1.ReplicaSet) bool { return rs.Annotations[deploymentRevision] == revision })
	if i < 0 {
		t.Fatalf("no ReplicaSet of revision %s", revision)
	}
	kubectl(t, "rollout", "undo", "deployment/"+w.name, "--to-revision="+revision, "-n", w.ns)
	waitFor(t, "the undo", func(ctx context.Context) (bool, error) {
		rs, err := cs.AppsV1().ReplicaSets(w.ns).Get(ctx, rss[i].Name, metav1.GetOptions{})
		return err == nil && rs.Annotations[deploymentRevisionHistory] == revision, err
	})
	waitRolledOut(t, cs, w)
}

// A StatefulSet's revisions are its ControllerRevisions: the one Ripple
// started carries the reload env var; the first records no digest, as
// ControllerRevisions get no copy of the applied record.
func TestHistoryStatefulSet(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	w := workload{kind: kit.StatefulSet, ns: ns, name: "db"}
	sum := digest.ConfigMap(createConfigMap(t, cs, ns, configName, "v1"))
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, w)
	waitBaseline(t, cs, w, sum)
	sum = setConfigMapValue(t, cs, ns, configName, "v2")
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))

	out := runHistory(t, ns, "sts/db", "-o", "json")
	var h history.History
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("history -o json: %v\n%s", err, out)
	}
	if len(h.Revisions) != 2 || h.Revisions[0].StartedBy != history.ByOther || h.Revisions[0].Configs[0].From != "" ||
		h.Revisions[1].StartedBy != history.ByRipple || h.Revisions[1].Configs[0].Digest != sum[:12] ||
		!strings.HasPrefix(h.Revisions[1].Object, "ControllerRevision/db-") || len(h.Current.Changed) != 0 {
		t.Errorf("history of the StatefulSet:\n%s", out)
	}
}

// checkHistory checks h beyond the golden files: the digest each
// revision was built for, who started it, and the current revision's
// verdict, from the digests of the config's four versions.
func checkHistory(t *testing.T, h history.History, sums []string) {
	t.Helper()
	want := []struct {
		sum string
		by  history.StartedBy
		of  string
	}{
		{sums[0], history.ByOther, "record"},
		{sums[1], history.ByRipple, "env"},
		{sums[1], history.ByOther, "env"},
		{sums[2], history.ByRipple, "env"},
	}
	if len(h.Revisions) != len(want) {
		t.Fatalf("%d revisions, want %d: %+v", len(h.Revisions), len(want), h.Revisions)
	}
	for i, w := range want {
		r := h.Revisions[i]
		if r.Revision != int64(i+1) || r.StartedBy != w.by || len(r.Configs) != 1 ||
			r.Configs[0].Name != configName || r.Configs[0].Digest != w.sum[:12] || r.Configs[0].From != w.of {
			t.Errorf("revision %d: %+v, want started by %s, built for %s/%s from %s", i+1, r, w.by, configName, w.sum[:12], w.of)
		}
	}
	c := h.Current
	if c == nil || c.Revision != 4 || len(c.Changed) != 1 || c.Changed[0].BuiltFor != sums[2][:12] || c.Changed[0].Now != sums[3][:12] {
		t.Errorf("current: %+v, want revision 4 built for %s, now %s", c, sums[2][:12], sums[3][:12])
	}
}

// waitReplicaSetRecord waits until the deployment controller copied
// Ripple's baseline record onto the Deployment's first ReplicaSet.
func waitReplicaSetRecord(t *testing.T, cs kubernetes.Interface, w workload, uid types.UID) {
	t.Helper()
	waitFor(t, "the applied record on the ReplicaSet", func(ctx context.Context) (bool, error) {
		rss, err := kit.ReplicaSets(ctx, cs, w.ns, uid)
		return err == nil && len(rss) == 1 && rss[0].Annotations[appliedAnnotation] != "", err
	})
}

// runHistory runs `ripple history` with args against the cluster, on
// namespace ns, and returns its output.
func runHistory(t *testing.T, ns string, args ...string) string {
	t.Helper()
	base := []string{"history", "--kubeconfig=" + kc.Kubeconfig, "-n", ns, "--ripple-namespace=" + ns}
	cmd := exec.CommandContext(t.Context(), os.Getenv("RIPPLE_BINARY"), append(base, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir()} // no kubeconfig but the test's
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("ripple %s: exit code %d; stderr:\n%s", strings.Join(args, " "), exit.ExitCode(), stderr.String())
		}
		t.Fatal(err)
	}
	return stdout.String()
}

// The annotations the deployment controller numbers ReplicaSets with.
const (
	deploymentRevision        = "deployment.kubernetes.io/revision"
	deploymentRevisionHistory = "deployment.kubernetes.io/revision-history"
)

var (
	rfc3339      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	replicaSetID = regexp.MustCompile(`ReplicaSet/web-[a-z0-9]+`)
)

// normalizeHistory replaces what differs between runs: times, the
// namespace and the ReplicaSets' hash suffixes. Digests stay: the data is
// the same every run.
func normalizeHistory(s, ns string) string {
	s = rfc3339.ReplaceAllString(s, "YYYY-MM-DDTHH:MM:SSZ") // as wide: the table stays aligned
	s = replicaSetID.ReplaceAllString(s, "ReplicaSet/web-<hash>")
	return strings.ReplaceAll(s, ns, "<namespace>")
}

// compareHistoryGolden compares got with testdata/history/<name>, or
// writes it with -update.
func compareHistoryGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "history", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (rerun with -update and review the diff); got:\n%s", path, got)
	}
}
