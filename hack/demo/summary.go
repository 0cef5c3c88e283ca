package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// printSummary prints what the demo showed, in a box.
func printSummary(out io.Writer, r *rollout, rp *rippleProc) {
	var rows [][2]string
	add := func(label string, lines ...string) {
		rows = append(rows, [2]string{label, strings.Join(lines, "\n")})
	}

	add("changes made", fmt.Sprintf("ConfigMap %s, Secret %s (%s apart)", configMapName, secretName, changeGap))
	add("rollouts triggered", fmt.Sprintf("%d (new ReplicaSet %s)", len(r.replicaSets), joinComma(r.replicaSets)))

	var env []string
	for _, e := range r.envVars {
		env = append(env, e.Name+"="+e.Value)
	}
	if len(env) == 0 {
		env = []string{"(none)"}
	}
	add("env vars on template", env...)

	events := r.events
	if len(events) == 0 {
		events = []string{"(none)"}
	}
	add("Reloaded event", events...)
	if r.rippleLog != "" {
		add("ripple's log", shortLogLine(r.rippleLog))
	}

	var pods []string
	for i, old := range r.oldPods {
		// Pods have no identity across a rollout; pairing them in name
		// order just shows that each one was replaced.
		if i < len(r.newPods) {
			pods = append(pods, old+" -> "+r.newPods[i])
		}
	}
	add("pods replaced", pods...)

	settle := "its settle window"
	if fields := logFields(rp, "starting Ripple"); fields["settleWindow"] != nil {
		settle = fmt.Sprintf("its %v settle window", fields["settleWindow"])
	}
	add("change -> Ripple wrote", fmt.Sprintf("%s (Ripple waits out %s, so both changes roll once)", seconds(r.patchedAt.Sub(r.changedAt)), settle))
	add("change -> all pods Ready", fmt.Sprintf("%s (the rollout itself took %s)", seconds(r.readyAt.Sub(r.changedAt)), seconds(r.readyAt.Sub(r.patchedAt))))

	box(out, "Ripple demo summary", rows)
}

// startupSummary describes the running ripple from its start-up log line.
func startupSummary(rp *rippleProc) string {
	f := logFields(rp, "starting Ripple")
	if f == nil {
		return "start-up line not found in its log"
	}
	return fmt.Sprintf("strategy %v, settle window %v", f["strategy"], f["settleWindow"])
}

// logFields returns the structured fields of ripple's first log line whose
// message is msg, or nil.
func logFields(rp *rippleProc, msg string) map[string]any {
	line, ok := rp.logLine(msg)
	if !ok {
		return nil
	}
	parts := strings.SplitN(line, "\t", 4)
	var f map[string]any
	if len(parts) < 4 || json.Unmarshal([]byte(parts[3]), &f) != nil {
		return nil
	}
	return f
}

// shortLogLine keeps the level, message and Ripple's own fields of a log
// line, dropping the timestamp and controller-runtime's request fields.
func shortLogLine(line string) string {
	parts := strings.SplitN(line, "\t", 4)
	var f struct {
		Workload struct{ Name, Namespace string }
		Configs  []string
		Strategy string
	}
	if len(parts) < 4 || json.Unmarshal([]byte(parts[3]), &f) != nil {
		return line
	}
	return fmt.Sprintf("%s %s workload=%s/%s configs=[%s] strategy=%s",
		parts[1], parts[2], f.Workload.Namespace, f.Workload.Name, joinComma(f.Configs), f.Strategy)
}

// box prints rows of label and value, values possibly multi-line, framed.
func box(out io.Writer, title string, rows [][2]string) {
	labelWidth, width := 0, utf8.RuneCountInString(title)+2
	for _, r := range rows {
		labelWidth = max(labelWidth, utf8.RuneCountInString(r[0]))
	}
	var lines []string
	for _, r := range rows {
		for i, v := range strings.Split(r[1], "\n") {
			label := ""
			if i == 0 {
				label = r[0]
			}
			line := label + strings.Repeat(" ", labelWidth-utf8.RuneCountInString(label)) + "  " + v
			lines = append(lines, line)
			width = max(width, utf8.RuneCountInString(line))
		}
	}
	fmt.Fprintf(out, "┌─ %s %s┐\n", title, strings.Repeat("─", width-utf8.RuneCountInString(title)))
	for _, l := range lines {
		fmt.Fprintf(out, "│ %s%s │\n", l, strings.Repeat(" ", width-utf8.RuneCountInString(l)))
	}
	fmt.Fprintf(out, "└%s┘\n", strings.Repeat("─", width+2))
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func joinComma(items []string) string {
	return strings.Join(items, ", ")
}
