package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// The output formats.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// Formats are the output formats, the default first.
var Formats = []string{FormatTable, FormatJSON, FormatYAML}

// Print writes the report r in format.
func Print(w io.Writer, format string, r Report) error {
	if format == FormatTable {
		return printReport(w, r)
	}
	return encode(w, format, r)
}

// PrintList writes the report of --all in format; the table shows the
// namespaces when withNamespace is set, and the findings, if any, in a
// column and a section of their own.
func PrintList(w io.Writer, format string, l List, withNamespace bool) error {
	if format != FormatTable {
		return encode(w, format, l)
	}
	var b strings.Builder
	head := "KIND\tNAME\tSTATE\tSOURCES\tREASON"
	if withNamespace {
		head = "NAMESPACE\t" + head
	}
	if len(l.Findings) > 0 {
		head += "\tFINDINGS"
	}
	fmt.Fprintln(&b, head)
	for _, r := range l.Items {
		var names []string
		for _, s := range r.Sources {
			names = append(names, s.Kind+"/"+s.Name)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", r.Workload.Kind, r.Workload.Name, r.State, dash(strings.Join(names, ",")), r.Reason)
		if withNamespace {
			row = r.Workload.Namespace + "\t" + row
		}
		if len(l.Findings) > 0 {
			row += "\t" + dash(countFindings(r.Findings))
		}
		fmt.Fprintln(&b, row)
	}
	printFindings(&b, l.Findings)
	printUnplanned(&b, l.Unplanned, l.Unlisted)
	return aligned(w, b.String())
}

// countFindings counts findings by severity, e.g. "1 error, 2 warnings".
func countFindings(findings []Finding) string {
	n := map[string]int{}
	for _, f := range findings {
		n[f.Severity]++
	}
	var parts []string
	for _, sev := range []string{"error", "warning"} {
		switch {
		case n[sev] == 1:
			parts = append(parts, "1 "+sev)
		case n[sev] > 1:
			parts = append(parts, fmt.Sprintf("%d %ss", n[sev], sev))
		}
	}
	return strings.Join(parts, ", ")
}

// printFindings writes the findings section, if any.
func printFindings(tw *strings.Builder, findings []Finding) {
	section(tw, "FINDINGS", "SEVERITY\tOBJECT\tKEY\tMESSAGE", len(findings), func(i int) string {
		f := findings[i]
		return fmt.Sprintf("%s\t%s\t%s\t%s", f.Severity, f.Object, dash(f.Key), f.Message)
	})
}

// aligned writes text with its tab-separated cells aligned in columns;
// a line without tabs ends a table.
func aligned(w io.Writer, text string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if _, err := io.WriteString(tw, text); err != nil {
		return err
	}
	return tw.Flush()
}

func encode(w io.Writer, format string, v any) error {
	var b []byte
	var err error
	if format == FormatYAML {
		b, err = yaml.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// printReport writes the report for people: a header, then one aligned
// table per section that has rows.
func printReport(w io.Writer, r Report) error {
	var b strings.Builder
	tw := &b
	fmt.Fprintf(tw, "Workload:\t%s %s/%s\n", r.Workload.Kind, r.Workload.Namespace, r.Workload.Name)
	fmt.Fprintf(tw, "State:\t%s\n", r.State)
	fmt.Fprintf(tw, "Reason:\t%s\n", r.Reason)
	fmt.Fprintf(tw, "Verdict:\t%s\n", r.Verdict)
	printReloadPolicy(tw, r.ReloadPolicy)
	if r.Shard != nil {
		fmt.Fprintf(tw, "Shard:\t%d of %d (the one run with --shard-index=%d)\n", r.Shard.Index, r.Shard.Count, r.Shard.Index)
	}
	if r.ReloadWindow != nil {
		fmt.Fprintf(tw, "Reload window:\t%s\n", windowText(r.ReloadWindow))
	}
	if rs := r.Restart; rs != nil {
		fmt.Fprintf(tw, "Restart:\t%s, up to %d pods at a time, the pod template is left alone", rs.Method, rs.MaxUnavailable)
		if rs.Action != "" {
			fmt.Fprintf(tw, "; calls %s %s after a change, fallback %s", rs.Action, rs.Delay, rs.Fallback)
		} else if rs.Fallback != "" {
			fmt.Fprintf(tw, "; containers %s, fallback %s", containersText(rs.Containers), rs.Fallback)
		}
		if rs.Since != nil {
			fmt.Fprintf(tw, "; restarting the pods created up to %s", rs.Since.UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(tw)
	}
	if p := r.Pinning; p != nil {
		fmt.Fprintf(tw, "Pinning:\t%s\n", pinningText(p))
	}
	printSources(tw, r.Sources)
	section(tw, "POLICY", "KEY\tVALUE\tFROM\tNOTE", len(r.Policy), func(i int) string {
		p := r.Policy[i]
		return fmt.Sprintf("%s\t%s\t%s\t%s", p.Key, p.Value, p.From, p.Note)
	})
	section(tw, "WAITING", "FOR\tUNTIL\tSETTING\tWHY", len(r.Waiting), func(i int) string {
		wt := r.Waiting[i]
		until := "-"
		if wt.Until != nil {
			until = stamp(*wt.Until)
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s", wt.For, until, wt.Setting, wt.Message)
	})
	section(tw, "NOTICES", "REASON\tTOLD\tMESSAGE", len(r.Notices), func(i int) string {
		n := r.Notices[i]
		return fmt.Sprintf("%s\t%s\t%s", n.Reason, yesNo(n.Told), n.Message)
	})
	section(tw, "WARNINGS", "MESSAGE", len(r.Warnings), func(i int) string { return r.Warnings[i] })
	section(tw, "OWNERSHIP", "NOTE", len(r.Ownership), func(i int) string { return r.Ownership[i] })
	section(tw, "SETTINGS (from "+r.SettingsFrom+")", "FLAG\tVALUE\tFROM", len(r.Settings), func(i int) string {
		s := r.Settings[i]
		return fmt.Sprintf("%s\t%s\t%s", s.Flag, dash(s.Value), s.From)
	})
	section(tw, "EVENTS", "AGE\tTYPE\tREASON\tMESSAGE", len(r.Events), func(i int) string {
		e := r.Events[i]
		return fmt.Sprintf("%s\t%s\t%s\t%s", e.Age, e.Type, e.Reason, e.Message)
	})
	printFindings(tw, r.Findings)
	return aligned(w, b.String())
}

// pinningText says in a line whether reloads pin, and what the pods read.
func pinningText(p *Pinning) string {
	s := "on: each reload copies the configs the pod template reads, and its new pods read the copies"
	if !p.On {
		s = "refused: " + p.Refused + "; its pods read the configs live"
	}
	if p.Copies != "" {
		s += "; the template names " + p.Copies
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// printSources writes the sources table, then each decision in full.
func printSources(tw *strings.Builder, sources []Source) {
	section(tw, "SOURCES", "SOURCE\tUSED BY\tSTATE\tDIGEST\tAPPLIED\tRELOAD\tREASON", len(sources), func(i int) string {
		s := sources[i]
		reload := yesNo(s.Reload)
		if !s.Found && s.State != notWatchedState {
			s.State += " (not found)"
		}
		return fmt.Sprintf("%s/%s\t%s\t%s\t%s\t%s\t%s\t%s", s.Kind, s.Name, dash(usedBy(s.Uses)), s.State, dash(s.Digest), dash(s.Applied), reload, s.Reason)
	})
	section(tw, "DECISIONS", "SOURCE\tWHY", len(sources), func(i int) string {
		s := sources[i]
		why := s.Message
		if len(s.Keys) > 0 {
			why += "; only changes of " + strings.Join(s.Keys, ", ") + " count"
		}
		if s.Hint != "" {
			why += "; hint: " + s.Hint
		}
		if s.Trace != "" {
			why += "; its change's trace: " + s.Trace
		}
		return fmt.Sprintf("%s/%s\t%s", s.Kind, s.Name, why)
	})
}

// section writes a titled table of n rows, if any.
func section(tw *strings.Builder, title, head string, n int, row func(int) string) {
	if n == 0 {
		return
	}
	fmt.Fprintf(tw, "\n%s\n%s\n", title, head)
	for i := range n {
		fmt.Fprintln(tw, row(i))
	}
}

// usedBy says where the pod template (or a field of the workload's own)
// uses a source, e.g. "app envFrom; init (init) volume cfg [a,b]" or
// "field spec.configMap.name".
func usedBy(uses []Use) string {
	parts := make([]string, 0, len(uses))
	for _, u := range uses {
		if u.Field != "" {
			parts = append(parts, "field "+u.Field)
			continue
		}
		var b strings.Builder
		b.WriteString(cmpOr(u.Container, "(no container)"))
		if u.Init {
			b.WriteString(" (init)")
		}
		b.WriteString(" " + u.Via)
		if u.Volume != "" {
			b.WriteString(" " + u.Volume)
		}
		if len(u.Keys) > 0 {
			b.WriteString(" [" + strings.Join(u.Keys, ",") + "]")
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// containersText names the containers the in-place method restarts.
func containersText(names []string) string {
	if len(names) == 0 {
		return "with a RestartContainer resize policy"
	}
	return strings.Join(names, ", ")
}
