package metricgate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	krand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/workload"
)

// podMatcher is the pod matcher Ripple sends for `{pod=~"$pods"}` and the
// canaries, as Prometheus reads it (anchored at both ends).
func podMatcher(t *testing.T, canaries ...workload.Ref) *labels.Matcher {
	t.Helper()
	q, err := Parse(`count(up{pod=~"$pods"}) > 0`)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := q.Bound("shop", canaries)
	if err != nil {
		t.Fatal(err)
	}
	expr, err := promql.ParseExpr(bound)
	if err != nil {
		t.Fatalf("bound query %q does not parse: %v", bound, err)
	}
	var m *labels.Matcher
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for _, l := range vs.LabelMatchers {
				if l.Name == "pod" {
					m = l
				}
			}
		}
		return nil
	})
	if m == nil {
		t.Fatalf("bound query %s has no pod matcher", bound)
	}
	return m
}

// $pods matches the pods a canary's kind's controller names, and not the
// pods of a workload whose name starts with the canary's and a dash.
func TestPodsAreTheCanariesOwn(t *testing.T) {
	ref := func(kind, name string) workload.Ref { return workload.Ref{Kind: kind, Namespace: "shop", Name: name} }
	for _, c := range []struct {
		canary       workload.Ref
		match, other []string
	}{
		{ref("Deployment", "web"),
			[]string{"web-7d9f8c6b5-x2x9q", "web-5d8f-bcdfg", "web-6b474476c4-zb7kq"},
			[]string{"web-x-7d9f8c6b5-x2x9q", "web-x-7d9f8c6b5-abcde", "web-7d9f8c6b5-abcde", "web-7d9f8c6b5", "web-0", "web-x2x9q", "web-7d9f8c6b5-x2x9q-x", "web-76b9f8c6b56-x2x9q", "xweb-7d9f8c6b5-x2x9q", "web.7d9f8c6b5-x2x9q"}},
		{ref("Rollout", "web"),
			[]string{"web-6b474476c4-zb7kq"},
			[]string{"web-x-6b474476c4-zb7kq", "web-canary-zb7kq"}},
		{ref("StatefulSet", "db"),
			[]string{"db-0", "db-1", "db-12"},
			[]string{"db-x-0", "db-replica-0", "db-0-x", "db-", "db-x2x9q"}},
		{ref("DaemonSet", "agent"),
			[]string{"agent-x2x9q", "agent-bbbbb"},
			[]string{"agent-x-x2x9q", "agent-x2x9", "agent-abcde", "agent-7d9f8c6b5-x2x9q", "agent-x2x9q2"}},
		{ref("Job", "migrate"),
			[]string{"migrate-x2x9q", "migrate-0-x2x9q", "migrate-17-x2x9q"},
			[]string{"migrate-x-x2x9q", "migrate-abcde", "migrate-29460121-x2x9q-x2x9q"}},
		{ref("CronJob", "report"),
			[]string{"report-29460121-x2x9q", "report-x2x9q-bcdfg", "report-29460121-3-x2x9q"},
			[]string{"report-x-29460121-x2x9q", "report-x2x9q", "report-29460121", "report-daily-29460121-x2x9q"}},
		{ref("DeploymentConfig", "web"),
			[]string{"web-3-x2x9q"},
			[]string{"web-x-3-x2x9q", "web-3-deploy", "web-x2x9q"}},
		{ref("CloneSet.apps.kruise.io", "web"), // a declared kind: its pods' names are its controller's
			[]string{"web-anything", "web-x-1"},
			[]string{"web", "api-web-1"}},
	} {
		m := podMatcher(t, c.canary)
		for _, pod := range c.match {
			if !m.Matches(pod) {
				t.Errorf("$pods for %s %s (%s) does not match its pod %s", c.canary.Kind, c.canary.Name, m, pod)
			}
		}
		for _, pod := range c.other {
			if m.Matches(pod) {
				t.Errorf("$pods for %s %s (%s) matches %s, not its pod", c.canary.Kind, c.canary.Name, m, pod)
			}
		}
	}
}

// Every built-in kind's pods are named by a rule Ripple knows.
func TestPodsOfEveryBuiltInKind(t *testing.T) {
	for _, kind := range declared.BuiltIn {
		if got := podNames(workload.Ref{Kind: kind, Name: "web"}); strings.HasSuffix(got, ".*") {
			t.Errorf("$pods for a %s is %s: no rule for the kind", kind, got)
		}
	}
}

// Several canaries: each one's pods by its own kind's rule.
func TestPodsOfSeveralCanaries(t *testing.T) {
	m := podMatcher(t, workload.Ref{Kind: "Deployment", Name: "web"}, workload.Ref{Kind: "StatefulSet", Name: "web.db"})
	for pod, want := range map[string]bool{
		"web-7d9f8c6b5-x2x9q": true, "web.db-0": true,
		"web-0": false, "webxdb-0": false, "web.db-7d9f8c6b5-x2x9q": false, "web-x-7d9f8c6b5-x2x9q": false,
	} {
		if m.Matches(pod) != want {
			t.Errorf("$pods (%s) matches %s: %t, want %t", m, pod, !want, want)
		}
	}
}

// generateName is the API server's name generator
// (k8s.io/apiserver/pkg/storage/names.SimpleNameGenerator).
func generateName(base string) string {
	if len(base) > 58 {
		base = base[:58]
	}
	return base + krand.String(5)
}

// podTemplateHash is a pod-template-hash as Kubernetes computes it
// (k8s.io/kubernetes/pkg/controller.ComputeHash) of an FNV-32a sum.
func podTemplateHash(sum uint32) string { return krand.SafeEncodeString(fmt.Sprint(sum)) }

// indexedGenerateName is the Job controller's generateName for an
// Indexed Job's pod (podGenerateNameWithIndex).
func indexedGenerateName(job string, index int) string {
	appendIndex := fmt.Sprintf("-%d-", index)
	prefix := job + appendIndex
	if len(prefix) > 58 {
		prefix = prefix[:58-len(appendIndex)] + appendIndex
	}
	return prefix
}

// Names of every length, up to the longest each kind allows, as
// Kubernetes generates them: a long name is cut, and the cut name still
// matches; a workload named the canary's name, a dash and more does not.
func TestPodsOfLongNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // names for a test, the same every run
	nameOf := func(n int) string {
		const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, n)
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		b[0] = 'w'
		return string(b)
	}
	hashes := []uint32{0, 7, 1234, 1 << 31, 1<<32 - 1}
	for n := 1; n <= 70; n++ {
		for _, kind := range []string{"Deployment", "Rollout", "DaemonSet", "Job", "CronJob", "DeploymentConfig", "StatefulSet"} {
			canary := nameOf(n)
			if kind == "CronJob" && n > 52 {
				continue // a CronJob's name is at most 52 bytes
			}
			m := podMatcher(t, workload.Ref{Kind: kind, Name: canary})
			var pods, decoys []string
			for _, h := range hashes {
				switch kind {
				case "Deployment", "Rollout":
					rs := canary + "-" + podTemplateHash(h)
					pods = append(pods, generateName(rs+"-"))
					decoys = append(decoys, generateName(canary+"-x-"+podTemplateHash(h)+"-"))
				case "DaemonSet":
					pods = append(pods, generateName(canary+"-"))
					decoys = append(decoys, canary+"-x-"+krand.String(5))
				case "Job":
					pods = append(pods, generateName(canary+"-"), generateName(indexedGenerateName(canary, int(h%1000))))
					decoys = append(decoys, canary+"-x-"+krand.String(5))
				case "CronJob":
					scheduled := fmt.Sprintf("%s-%d", canary, 29460121+int(h%100))
					started := generateName(canary + "-")
					pods = append(pods, generateName(scheduled+"-"), generateName(started+"-"),
						generateName(indexedGenerateName(scheduled, int(h%7))), generateName(indexedGenerateName(started, int(h))))
					decoys = append(decoys, canary+"-x-29460121-"+krand.String(5))
				case "DeploymentConfig":
					pods = append(pods, generateName(fmt.Sprintf("%s-%d-", canary, h)))
					decoys = append(decoys, generateName(fmt.Sprintf("%s-x-%d-", canary, h)))
				case "StatefulSet":
					pods = append(pods, fmt.Sprintf("%s-%d", canary, h))
					decoys = append(decoys, fmt.Sprintf("%s-x-%d", canary, h))
				}
			}
			for _, pod := range pods {
				if !m.Matches(pod) {
					t.Errorf("$pods for %s %s (%s) does not match its pod %s", kind, canary, m.Value, pod)
				}
			}
			// Near the 58 bytes the API server keeps, a decoy's name is
			// cut to the shape of the canary's own pods' (web-x's pods
			// cut to "web-x" and 5 characters are web's cut to a hash
			// starting with x): told apart up to 44 bytes.
			for _, pod := range decoys {
				if m.Matches(pod) && n <= 44 {
					t.Errorf("$pods for %s %s (%s) matches %s, not its pod", kind, canary, m.Value, pod)
				}
			}
		}
	}
}
