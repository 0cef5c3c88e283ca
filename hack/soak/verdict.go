package main

import (
	"fmt"
	"slices"
	"time"
)

// The verdict is read from the ReplicaSets, not from a watch: the
// Deployment controller makes one ReplicaSet per pod template and numbers
// each revision (deployment.kubernetes.io/revision); a rollout undo, or
// any write that brings back an earlier template, reuses that template's
// ReplicaSet, which then keeps its earlier numbers in
// deployment.kubernetes.io/revision-history. With every ReplicaSet kept
// (historyLimit), the revisions of a Deployment are exactly the sequence
// of its pod templates, whatever restarted meanwhile.

// replicaSet is what the verdict reads of one ReplicaSet.
type replicaSet struct {
	Revision int
	History  []int  // earlier revisions it held
	Digest   string // Ripple's env var on its template ("" when none)
	Record   string // the config's digest in the applied record it carries
}

// revision is one revision of a Deployment: its template's digest, and
// whether its ReplicaSet held an earlier revision too (the same template
// came back).
type revision struct {
	N       int
	Digest  string
	Record  string
	Earlier []int // the earlier revisions of the same ReplicaSet
	Fresh   bool  // its ReplicaSet never held another revision: its record is the one written with it
}

// revisions orders the revisions that rss hold, 1 to the latest; an error
// when one is missing or held twice (a ReplicaSet was deleted, or the
// history is not what the Deployment controller writes).
func revisions(rss []replicaSet) ([]revision, error) {
	byN := map[int]revision{}
	for _, rs := range rss {
		all := append(slices.Clone(rs.History), rs.Revision)
		slices.Sort(all)
		for i, n := range all {
			if _, dup := byN[n]; dup {
				return nil, fmt.Errorf("revision %d is held by two ReplicaSets", n)
			}
			byN[n] = revision{N: n, Digest: rs.Digest, Record: rs.Record, Earlier: all[:i], Fresh: len(all) == 1}
		}
	}
	out := make([]revision, len(byN))
	for n, r := range byN {
		if n < 1 || n > len(byN) {
			return nil, fmt.Errorf("revision %d of %d: a ReplicaSet is missing", n, len(byN))
		}
		out[n-1] = r
	}
	return out, nil
}

// undo is a rollout undo the soak made: to revision To, which showed
// Digest.
type undo struct {
	To     int
	Digest string
	At     time.Time
}

// judgement is what the revisions of one Deployment say.
type judgement struct {
	// Applied counts Ripple's rollouts to each digest: revisions that
	// bring a digest the Deployment never showed before.
	Applied map[string]int
	// Undos are the revisions made by the soak's undos that changed the
	// digest; Undone the revisions that brought back a digest an undo had
	// just taken away (Ripple rolling the undo forward); Twice the other
	// revisions that brought back an earlier digest (a change applied
	// again).
	Undos          int
	Undone, Twice  []int
	RecordMismatch []int // Ripple's rollouts whose record is not their digest
}

// judge reads the revisions of a Deployment, knowing the undos the soak
// made on it.
func judge(revs []revision, undos []undo) judgement {
	j := judgement{Applied: map[string]int{}}
	pending := slices.Clone(undos)
	seen := map[string]bool{}
	var undone string // the digest the last undo took away
	undid := false    // since the last new digest
	if len(revs) > 0 {
		seen[revs[0].Digest] = true
	}
	for i := 1; i < len(revs); i++ {
		r, prev := revs[i], revs[i-1].Digest
		if r.Digest == prev {
			continue // the template changed, not the config's digest (another writer)
		}
		switch {
		case seen[r.Digest] && takeUndo(&pending, r.Digest):
			j.Undos++
			undone, undid = prev, true
		case seen[r.Digest] && undid && r.Digest == undone:
			j.Undone = append(j.Undone, r.N)
		case seen[r.Digest]:
			j.Twice = append(j.Twice, r.N)
		default:
			undid = false // a new change: what comes back after it is applied twice
			j.Applied[r.Digest]++
			if r.Fresh && r.Record != r.Digest {
				j.RecordMismatch = append(j.RecordMismatch, r.N)
			}
		}
		seen[r.Digest] = true
	}
	return j
}

// takeUndo removes from pending an undo that brought back digest. (Not
// matched by revision number: the undo's template may meet another
// writer's edit before the Deployment controller makes its ReplicaSet.)
func takeUndo(pending *[]undo, digest string) bool {
	i := slices.IndexFunc(*pending, func(u undo) bool { return u.Digest == digest })
	if i < 0 {
		return false
	}
	*pending = slices.Delete(*pending, i, i+1)
	return true
}
