package impact

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/standing"
)

// The output formats of a verdict.
const (
	FormatText     = "text"
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
)

// Formats are the output formats, as -o takes them.
var Formats = []string{FormatText, FormatJSON, FormatMarkdown}

// shownNames and shownKeys bound the names a summary lists.
const (
	shownNames = 2
	shownKeys  = 5
)

// MaxLine bounds a warning line: the API server may truncate an
// admission warning longer than 256 characters.
const MaxLine = 256

// Line is the verdict as one warning line, e.g. `ripple: this change rolls
// 47 workloads in shop (web, api, +45): canary web first, bake 30s; 3 wait
// for the window Mon-Fri 02:00; keys changed: db.url (read by 3)`, cut
// to MaxLine characters (the counts come first).
func Line(v Verdict) string {
	line := []rune("ripple: this change " + v.Summary)
	if len(line) <= MaxLine {
		return string(line)
	}
	return string(line[:MaxLine-1]) + "…"
}

// summary is the verdict in one sentence, without its subject: every
// rendering says it with these words.
func summary(v Verdict) string {
	var rolled []string
	for _, w := range v.Workloads {
		if w.rolls() {
			rolled = append(rolled, w.Name)
		}
	}
	var b strings.Builder
	switch len(rolled) {
	case 0:
		fmt.Fprintf(&b, "rolls no workload in %s", v.Namespace)
	case 1:
		fmt.Fprintf(&b, "rolls 1 workload in %s (%s)", v.Namespace, rolled[0])
	default:
		fmt.Fprintf(&b, "rolls %d workloads in %s (%s)", len(rolled), v.Namespace, shortList(rolled, shownNames))
	}
	var parts []string
	if c := v.Canary; c != nil {
		names := make([]string, len(c.Workloads))
		for i, r := range c.Workloads {
			names[i] = r.Name
		}
		parts = append(parts, fmt.Sprintf("canary %s first, bake %s", shortList(names, shownNames), c.Bake))
	}
	parts = append(parts, waits(v.Workloads)...)
	if n := count(v.Workloads, standing.NotifyOnly); n > 0 {
		parts = append(parts, fmt.Sprintf("%d notify only (would reload)", n))
	}
	if n := count(v.Workloads, standing.Stale, standing.Excluded); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s it without reloading", n, plural(n, "reads", "read")))
	}
	if len(v.Keys) > 0 {
		keys := make([]string, len(v.Keys))
		for i, k := range v.Keys {
			keys[i] = fmt.Sprintf("%s (read by %d)", k.Name, k.ReadBy)
		}
		parts = append(parts, "keys changed: "+shortList(keys, shownKeys))
	}
	if len(parts) > 0 {
		b.WriteString(": " + strings.Join(parts, "; "))
	}
	return b.String()
}

// waits says, by reason and detail, how many of the workloads the change
// rolls wait, e.g. "3 wait for the window Mon-Fri 02:00-04:00"; a wait
// for the canaries is the summary's canary part.
func waits(ws []Workload) []string {
	type group struct {
		reason reason.Reason
		detail string
	}
	var groups []group
	n := map[group]int{}
	for _, w := range ws {
		if !w.rolls() || w.Reason == reason.ReloadDue || w.Reason == reason.WaitingForCanary {
			continue
		}
		g := group{w.Reason, ""}
		if w.Reason == reason.ReloadDeferred {
			g.detail = w.Detail // one count per window; the workloads list says more of the rest
		}
		if n[g] == 0 {
			groups = append(groups, g)
		}
		n[g]++
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		c := n[g]
		verb := plural(c, "waits", "wait")
		switch g.reason {
		case reason.ReloadDeferred:
			out = append(out, fmt.Sprintf("%d %s for %s", c, verb, g.detail))
		case reason.ReloadPending:
			out = append(out, fmt.Sprintf("%d %s for an approval", c, verb))
		case reason.ReloadHeld:
			out = append(out, fmt.Sprintf("%d %s for the storm breaker", c, verb))
		case reason.CanaryUnkept:
			out = append(out, fmt.Sprintf("%d %s until a canary can be kept (ConfigRollouts, docs/canary.md)", c, verb))
		default:
			out = append(out, fmt.Sprintf("%d %s for a Helm release or the settle window", c, verb))
		}
	}
	return out
}

// count is how many of ws stand in one of states.
func count(ws []Workload, states ...standing.State) int {
	n := 0
	for _, w := range ws {
		if slices.Contains(states, w.State) {
			n++
		}
	}
	return n
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}

// shortList lists the first n of items and how many more there are.
func shortList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", +%d", len(items)-n)
}

// Print writes the verdicts in format (Formats).
func Print(w io.Writer, format string, vs []Verdict) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(Report{Configs: vs, Rolls: Total(vs)})
	case FormatMarkdown:
		return markdown(w, vs)
	case FormatText:
		return text(w, vs)
	}
	return fmt.Errorf("%q is not a format; use %s", format, strings.Join(Formats, ", "))
}

// Report is the JSON of a set of verdicts.
type Report struct {
	Configs []Verdict `json:"configs"`
	// Rolls is how many workloads the changes roll in all.
	Rolls int `json:"rolls"`
}

// Total is how many workloads the verdicts roll in all.
func Total(vs []Verdict) int {
	n := 0
	for _, v := range vs {
		n += v.Rolls
	}
	return n
}

// subject names the verdict's config and write, e.g. "ConfigMap
// shop/app-config (updated)".
func subject(v Verdict, quote string) string {
	return fmt.Sprintf("%s %s%s/%s%s (%s)", v.Kind, quote, v.Namespace, v.Name, quote, v.Op)
}

func text(w io.Writer, vs []Verdict) error {
	if len(vs) == 0 {
		_, err := fmt.Fprintln(w, "No ConfigMap or Secret data changes.")
		return err
	}
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %s\n", subject(v, ""), v.Summary)
		if len(v.Workloads) == 0 {
			b.WriteString("  no workload in the manifests reads it\n")
			continue
		}
		b.WriteString("  KIND\tNAME\tSTATE\tWHY\n")
		for _, wl := range v.Workloads {
			fmt.Fprintf(&b, "  %s\t%s\t%s\t%s\n", wl.Kind, wl.Name, wl.State, why(wl))
		}
	}
	fmt.Fprintf(&b, "\n%d %s in all.\n", Total(vs), plural(Total(vs), "workload rolls", "workloads roll"))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if _, err := io.WriteString(tw, b.String()); err != nil {
		return err
	}
	return tw.Flush()
}

// why says why a workload stands where it does: its reason, what more
// there is to say, and until when, e.g. "ReloadDeferred: the window
// Mon-Fri 02:00-04:00 until 2026-01-05T02:00:00Z".
func why(w Workload) string {
	out := string(w.Reason)
	if w.Detail != "" {
		out += ": " + w.Detail
	}
	if !w.Until.IsZero() {
		out += " until " + w.Until.UTC().Format(time.RFC3339)
	}
	return out
}

// markdown writes the verdicts as GitHub-flavoured Markdown, for a
// pull-request comment.
func markdown(w io.Writer, vs []Verdict) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### Ripple plan: %d %s in all\n\n", Total(vs), plural(Total(vs), "workload rolls", "workloads roll"))
	if len(vs) == 0 {
		b.WriteString("No ConfigMap or Secret data changes.\n")
	}
	for _, v := range vs {
		fmt.Fprintf(&b, "#### %s\n\n%s\n\n", subject(v, "`"), v.Summary)
		if len(v.Workloads) == 0 {
			b.WriteString("No workload in the manifests reads it.\n\n")
			continue
		}
		b.WriteString("| Kind | Name | State | Why |\n|---|---|---|---|\n")
		for _, wl := range v.Workloads {
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", wl.Kind, wl.Name, wl.State, cell(why(wl)))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell escapes s for a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
