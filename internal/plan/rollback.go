package plan

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
// them: the template and the record then agree on the older digest. Only
// Ripple's memory of the record its last rollout wrote (Memory.Applied)
// tells that it applied newer data since; a restored pair (the template
// showing what the record says) is then read against that memory.
//
// Once the rollback is recorded (the write below), the state is read from
// the objects alone, so a restart after it rolls nothing. A restart
// between a Deployment's undo and that write (milliseconds while Ripple
// runs) loses the memory, and the Deployment rolls forward as before.
//
// The first plan that sees a rollback records an alias (the value the
// template shows, and the current digest it stands for: the same record
// per-key reload keeps), so that it is reported once; the next change of the source no longer matches the
// record and rolls as usual. A template showing a value with no record of
// the source (Reloader's, on migration) is read as before, and so is a
// record whose digest is not the current data (the source changed since:
// it rolls once).

// rolledBack marks sp RolledBack when the template shows an older value
// than the record (or than the record Ripple remembers writing, when the
// record came back with the template), and that digest is the current
// data. sp's Applied is what the workload shows.
func rolledBack(wv view, sp *SourcePlan) {
	current := sp.Digest
	switch {
	case sp.State == Unchanged && sp.means != "":
		current = sp.means
	case sp.State != Changed:
		return
	}
	key := sp.Ref.String()
	rec, ok := wv.record[key]
	if w, known := wv.written[key]; known && (!ok || rec == sp.Applied) {
		rec, ok = w, true // the record came back with the template
	}
	if !ok || rec != current || rec == sp.Applied {
		return
	}
	sp.State, sp.Digest, sp.means = RolledBack, current, ""
	a, ok := wv.aliases[key]
	sp.noticed = !ok || a.Shown != sp.Applied || a.Means != current
}
