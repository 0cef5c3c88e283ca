package rollout

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripple-dev/ripple/internal/declared"
)

func TestDeclared(t *testing.T) {
	cond := declared.Ready{ObservedGeneration: declared.DefaultObservedGeneration, Condition: "Ready"}
	reps := declared.Ready{ObservedGeneration: declared.DefaultObservedGeneration, Replicas: &declared.Replicas{
		Desired: "spec.replicas", Updated: "status.updatedReplicas", Available: "status.updatedReadyReplicas",
	}}
	ready := func(status string) map[string]any {
		return map[string]any{"type": "Ready", "status": status, "message": "2 pods pending"}
	}
	cases := []struct {
		name   string
		rule   declared.Ready
		spec   map[string]any
		status map[string]any
		want   State
		reason string
	}{
		{"condition true", cond, nil, map[string]any{"observedGeneration": int64(2), "conditions": []any{ready("True")}}, Complete, "complete"},
		{"condition false", cond, nil, map[string]any{"observedGeneration": int64(2), "conditions": []any{ready("False")}}, Progressing, "condition Ready is not True: 2 pods pending"},
		{"no condition", cond, nil, map[string]any{"observedGeneration": int64(2)}, Progressing, "no Ready condition yet"},
		{"not observed", cond, nil, map[string]any{"observedGeneration": int64(1), "conditions": []any{ready("True")}}, Progressing, "waiting for the Widget controller to observe generation 2"},
		{"observed as a string", cond, nil, map[string]any{"observedGeneration": "2", "conditions": []any{ready("True")}}, Complete, "complete"},
		{"no observedGeneration", cond, nil, map[string]any{}, Progressing, "no status.observedGeneration yet"},
		{"replicas done", reps, map[string]any{"replicas": int64(3)}, map[string]any{"observedGeneration": int64(2), "updatedReplicas": int64(3), "updatedReadyReplicas": int64(3)}, Complete, "complete"},
		{"replicas rolling", reps, map[string]any{"replicas": int64(3)}, map[string]any{"observedGeneration": int64(2), "updatedReplicas": int64(3), "updatedReadyReplicas": int64(1)}, Progressing, "3 of 3 replicas updated, 1 available"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": tc.spec, "status": tc.status}}
			u.SetKind("Widget")
			u.SetGeneration(2)
			if got := Declared(u, tc.rule); got.State != tc.want || got.Reason != tc.reason {
				t.Fatalf("Declared = %v %q, want %v %q", got.State, got.Reason, tc.want, tc.reason)
			}
		})
	}
}
