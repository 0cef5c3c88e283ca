package history

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The output formats.
const (
	FormatTable = "table"
	FormatJSON  = "json"
)

// Formats are the output formats, the default first.
var Formats = []string{FormatTable, FormatJSON}

// Print writes h in format: a table, or JSON (docs/history.md documents
// the schema). Neither shows config data, only short digests.
func Print(w io.Writer, format string, h History) error {
	if format == FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(h)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s/%s, reload strategy %s\n\n", h.Workload.Kind, h.Workload.Namespace, h.Workload.Name, h.Strategy)
	if len(h.Revisions) == 0 {
		b.WriteString("No revisions kept.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	var rows strings.Builder
	rows.WriteString("REVISION\tSTARTED\tBY\tCONFIGS\tCHANGES\tWHY\n")
	for _, r := range h.Revisions {
		n := strconv.FormatInt(r.Revision, 10)
		if r.Current {
			n += "*"
		}
		fmt.Fprintf(&rows, "%s\t%s\t%s\t%s\t%s\t%s\n", n, r.Created.UTC().Format(time.RFC3339), r.StartedBy,
			dash(configList(r.Configs)), dash(strings.Join(r.Changes, ", ")), r.Reason)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	if _, err := io.WriteString(tw, rows.String()); err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n" + currentLine(h.Current) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// configList shows configs as "ConfigMap/app=1a2b3c4d5e6f (env)".
func configList(cs []Config) string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		switch c.From {
		case fromDeleted:
			out = append(out, c.String()+" deleted")
		case "":
			out = append(out, c.String()+"=? (not recorded)")
		default:
			out = append(out, fmt.Sprintf("%s=%s (%s)", c.String(), c.Digest, c.From))
		}
	}
	return strings.Join(out, ", ")
}

// currentLine says whether the current revision's pods read data newer
// than it was built for.
func currentLine(c *Current) string {
	var b strings.Builder
	fmt.Fprintf(&b, "* current revision %d: ", c.Revision)
	switch {
	case c.Unread != "":
		b.WriteString("not compared with the configs' data now: " + c.Unread)
	case len(c.Changed) == 0:
		b.WriteString("built for the configs' data as it is now")
	default:
		b.WriteString("its pods may read data newer than it was built for: ")
		parts := make([]string, len(c.Changed))
		for i, ch := range c.Changed {
			switch {
			case ch.Deleted:
				parts[i] = fmt.Sprintf("%s (built for %s, deleted since)", ch.Config, ch.BuiltFor)
			case ch.BuiltFor == "":
				parts[i] = fmt.Sprintf("%s (built for its deletion, now %s)", ch.Config, ch.Now)
			default:
				parts[i] = fmt.Sprintf("%s (built for %s, now %s)", ch.Config, ch.BuiltFor, ch.Now)
			}
		}
		b.WriteString(strings.Join(parts, ", "))
	}
	if len(c.Unknown) > 0 {
		fmt.Fprintf(&b, "; no digest recorded for %s", strings.Join(c.Unknown, ", "))
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
