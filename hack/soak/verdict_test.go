package main

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The revisions come back in order from ReplicaSets, an undo's reused
// ReplicaSet holding its earlier number; a gap is an error.
func TestRevisions(t *testing.T) {
	revs, err := revisions([]replicaSet{
		{Revision: 4, History: []int{1}, Digest: ""},
		{Revision: 2, Digest: "a", Record: "a"},
		{Revision: 3, Digest: "b", Record: "b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range revs {
		got = append(got, r.Digest)
	}
	if !slices.Equal(got, []string{"", "a", "b", ""}) || !slices.Equal(revs[3].Earlier, []int{1}) || revs[3].Fresh || !revs[1].Fresh {
		t.Errorf("revisions = %+v", revs)
	}
	if _, err := revisions([]replicaSet{{Revision: 1}, {Revision: 3}}); err == nil {
		t.Error("a missing revision went unnoticed")
	}
}

// Each new digest is one rollout of Ripple's; an undo the soak made is
// not; a digest that comes back otherwise is applied twice, or, right
// after an undo took it away, the undo rolled forward; a writer's template
// change (same digest) is nothing.
func TestJudge(t *testing.T) {
	rev := func(n int, d string, earlier ...int) revision {
		return revision{N: n, Digest: d, Record: d, Earlier: earlier, Fresh: len(earlier) == 0}
	}
	revs := []revision{rev(1, ""), rev(2, "a"), rev(3, "a"), rev(4, "b"), rev(5, "a", 2, 3), rev(6, "c"), rev(7, "b", 4)}
	j := judge(revs, []undo{{To: 3, Digest: "a"}})
	if j.Undos != 1 || len(j.Undone) != 0 || !slices.Equal(j.Twice, []int{7}) || j.Applied["a"] != 1 || j.Applied["b"] != 1 || j.Applied["c"] != 1 {
		t.Errorf("judge = %+v", j)
	}

	// Ripple rolling forward what an undo took back.
	j = judge([]revision{rev(1, ""), rev(2, "a"), rev(3, "b"), rev(4, "a", 2), rev(5, "b", 3)}, []undo{{To: 2, Digest: "a"}})
	if j.Undos != 1 || !slices.Equal(j.Undone, []int{5}) || len(j.Twice) != 0 {
		t.Errorf("undo rolled forward: %+v", j)
	}

	// Without the undo in the log, the same revisions are a change applied twice.
	j = judge([]revision{rev(1, ""), rev(2, "a"), rev(3, "b"), rev(4, "a", 2)}, nil)
	if j.Undos != 0 || !slices.Equal(j.Twice, []int{4}) {
		t.Errorf("no undo: %+v", j)
	}

	// An undo to the first revision, which showed no digest, and the first
	// appearance of a digest an undo later brings back: a rollout.
	j = judge([]revision{rev(1, ""), rev(2, "a"), rev(3, ""), rev(4, "b"), rev(5, "a")}, []undo{{Digest: ""}, {Digest: "a"}})
	if j.Undos != 2 || len(j.Undone)+len(j.Twice) != 0 || j.Applied["a"] != 1 || j.Applied["b"] != 1 {
		t.Errorf("undo to no digest: %+v", j)
	}

	// A rollout whose applied record is not the digest it wrote.
	bad := rev(2, "a")
	bad.Record = "z"
	if j := judge([]revision{rev(1, ""), bad}, nil); !slices.Equal(j.RecordMismatch, []int{2}) || j.Applied["a"] != 1 {
		t.Errorf("record mismatch: %+v", j)
	}
}

// What the pods read, as Ripple records it: the template's value, or the
// record's on a workload never rolled; an alias naming that value stands
// for the data it means (a rollback, another writer's template change).
func TestEffective(t *testing.T) {
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		rolled      bool
		want        string
	}{
		{"rolled", map[string]string{recordKey: `{"ConfigMap/ns/cfg-0":"b"}`}, true, "b"},
		{"never rolled", map[string]string{recordKey: `{"ConfigMap/ns/cfg-0":"a"}`}, false, "a"},
		{"never rolled, the writer's template change applied c", map[string]string{recordKey: `{"ConfigMap/ns/cfg-0":"a"}`, aliasKey: `{"ConfigMap/ns/cfg-0":{"shown":"a","means":"c","template":true}}`}, false, "c"},
		{"rolled back to b, the data is c", map[string]string{recordKey: `{"ConfigMap/ns/cfg-0":"c"}`, aliasKey: `{"ConfigMap/ns/cfg-0":{"shown":"b","means":"c"}}`}, true, "c"},
		{"an alias left behind", map[string]string{recordKey: `{"ConfigMap/ns/cfg-0":"b"}`, aliasKey: `{"ConfigMap/ns/cfg-0":{"shown":"x","means":"y"}}`}, true, "b"},
	} {
		d := deployment(workloadRef{Namespace: "ns", Name: "w-0", Config: configRef{"ns", "cfg-0"}})
		d.Annotations = tt.annotations
		if tt.rolled {
			d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_CFG_0_CONFIGMAP", Value: "b"}}
		}
		if got := effective(d); got != tt.want {
			t.Errorf("%s: effective = %q, want %q", tt.name, got, tt.want)
		}
	}
}
