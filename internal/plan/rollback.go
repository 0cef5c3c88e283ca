package plan

import "time"

// Rollbacks. When Ripple rolls a workload for a source, it writes the
// source's new digest on the pod template and in the applied record on the
// workload's metadata, in one patch. A rollback of the template (`kubectl
// rollout undo` of a StatefulSet or DaemonSet, a GitOps tool or `kubectl
// apply` restoring an older template) changes the template only: the
// template then shows an older digest than the record, while the record's
// digest is still the source's current data. The pods the rollback starts
// read that current data, so there is nothing to roll: rolling the
// template forward again would undo the operator's rollback, which
// Reloader, acting on source events only, never does.
//
// `kubectl rollout undo` of a Deployment also restores the workload's
// annotations from the ReplicaSet it returns to, the applied record with
// them: the template and the record then agree on the older digest. The
// objects still tell, without Ripple's memory: the undo's patch changed
// the record's value, so its manager (kubectl-rollout) owns that value in
// managedFields, where the values Ripple writes are owned by Ripple
// (Workload.RecordRestored). A record restored with the template means a
// revision put back: its pods started at the undo and read the data
// current then, so a source whose restored template and record show an
// older digest than its current one is rolled back, not changed, unless
// its data was written at or after the last write by another manager
// than Ripple (the undo's, or a later one): then the change came after the
// undo, and it rolls (Source.Written, Workload.RestoredBy; the times are
// to the second, and a tie rolls, so that no change is lost). While
// Ripple runs it also remembers the record its last rollout wrote
// (Memory.Applied) and reads a restored pair against that: its memory is
// more precise (a source changed after its rollout still rolls), so it
// decides when it has one.
//
// The first plan that sees a rollback records it (the write below): the
// current digest in the record, which Ripple then owns again, and an alias
// (the value the template shows, and the current digest it stands for:
// the same record per-key reload keeps), so that it is reported once; the
// next change of the source no longer matches the record and rolls as
// usual. A template showing a value with no record of the source
// (Reloader's, on migration) is read as before unless the record came back
// with it, and so is a record Ripple owns whose digest is not the current
// data (the source changed since, while Ripple was down: it rolls once).

// writtenSince reports whether src's data was written at or after t: a
// change made after the restore of a record (both while Ripple was down),
// which the restored revision's pods did not read. Unknown times are no.
func writtenSince(src Source, t time.Time) bool {
	return !src.Written.IsZero() && !t.IsZero() && !src.Written.Before(t)
}

// rolledBack marks sp RolledBack when the template shows an older value
// than the record (or than the record Ripple remembers writing, or than
// the current data, when the record came back with the template), and
// that digest is the current data. sp's Applied is what the workload
// shows.
func rolledBack(wv view, src Source, sp *SourcePlan) {
	current := sp.Digest
	switch {
	case sp.State == Unchanged && sp.means != "":
		current = sp.means
	case sp.State != Changed:
		return
	}
	key := sp.Ref.String()
	rec, ok := wv.record[key]
	cameBack := !ok || rec == sp.Applied // the record shows what the template does
	if w, known := wv.written[key]; known && cameBack {
		rec, ok = w, true
	} else if wv.restored && cameBack && !writtenSince(src, wv.restoredBy) {
		rec, ok = current, true // the undo's pods read the current data
	}
	if !ok || rec != current || rec == sp.Applied {
		return
	}
	sp.State, sp.Digest, sp.means = RolledBack, current, ""
	a, ok := wv.aliases[key]
	sp.noticed = !ok || a.Shown != sp.Applied || a.Means != current
}
