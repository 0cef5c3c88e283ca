package explain

// FindingsFor returns, for Explainer.Findings, the findings of all that
// are on a report's objects: the workload itself and each source it
// lists. Objects are named as lint names them, "Kind namespace/name".
func FindingsFor(all []Finding) func(Report) []Finding {
	return func(r Report) []Finding {
		ns := r.Workload.Namespace
		names := map[string]bool{r.Workload.Kind + " " + ns + "/" + r.Workload.Name: true}
		for _, s := range r.Sources {
			names[s.Kind+" "+ns+"/"+s.Name] = true
		}
		var out []Finding
		for _, f := range all {
			if names[f.Object] {
				out = append(out, f)
			}
		}
		return out
	}
}
