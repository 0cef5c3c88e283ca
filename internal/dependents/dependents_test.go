package dependents

import (
	"testing"
)

// The shard of a namespace is part of the contract between replicas of
// different versions: these values (checked against an independent FNV-1a)
// must never change.
func TestShardOf(t *testing.T) {
	tests := []struct {
		ns             string
		hash           uint32
		ofThree, ofTwo int
	}{
		{"default", 0x933b5bde, 0, 0},
		{"kube-system", 0xa275975e, 2, 0},
		{"team-a", 0x26db73d6, 1, 0},
		{"team-b", 0x25db7243, 2, 1},
	}
	for _, tt := range tests {
		if got := ShardOf(tt.ns, 3); got != tt.ofThree {
			t.Errorf("ShardOf(%q, 3) = %d, want %d (hash %#x)", tt.ns, got, tt.ofThree, tt.hash)
		}
		if got := ShardOf(tt.ns, 2); got != tt.ofTwo {
			t.Errorf("ShardOf(%q, 2) = %d, want %d (hash %#x)", tt.ns, got, tt.ofTwo, tt.hash)
		}
		if got := ShardOf(tt.ns, 1); got != 0 {
			t.Errorf("ShardOf(%q, 1) = %d, want 0", tt.ns, got)
		}
	}
}

// A shard's Scope puts only its own namespaces in scope; without shards
// every namespace is.
func TestInScopeByShard(t *testing.T) {
	for i := range 3 {
		f := &Scope{ShardCount: 3, ShardIndex: i}
		for _, ns := range []string{"default", "kube-system", "team-a", "team-b"} {
			in, err := f.InScope(t.Context(), ns)
			if err != nil || in != (ShardOf(ns, 3) == i) || f.Owns(ns) != in {
				t.Errorf("shard %d: InScope(%q) = %v, %v; Owns = %v", i, ns, in, err, f.Owns(ns))
			}
		}
	}
	if in, err := (&Scope{}).InScope(t.Context(), "default"); !in || err != nil {
		t.Errorf("unsharded: InScope = %v, %v; want true", in, err)
	}
}
