package notify

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Sink is an alert format, chosen by ALERT_SINK as in Reloader: "slack",
// "teams" or "gchat"; anything else (Reloader documents "webhook") is raw
// text.
type Sink string

// The alert formats.
const (
	Slack Sink = "slack"
	Teams Sink = "teams"
	GChat Sink = "gchat"
	Raw   Sink = "raw"
)

// ParseSink maps an ALERT_SINK value to a Sink, trimmed and case-insensitive.
func ParseSink(s string) Sink {
	switch v := Sink(strings.ToLower(strings.TrimSpace(s))); v {
	case Slack, Teams, GChat:
		return v
	}
	return Raw
}

// Source is a config that a rollout carried.
type Source struct {
	Type string // Reloader's CONFIGMAP, SECRET
	Name string
}

// Reload describes one rollout for an alert.
type Reload struct {
	Namespace string
	Kind      string // e.g. Deployment
	Workload  string
	Sources   []Source
	// Held, when set, makes the alert tell of a hold by the flap breaker
	// instead of a rollout: why, and when the hold ends.
	Held string
	// Deferred, when set, makes the alert tell that the reload waits for
	// the workload's reload window, and until when.
	Deferred string
	// Stalled, when set, makes the alert tell that the rollout Ripple
	// started stalled, and why.
	Stalled string
	// Pending, when set, makes the alert tell that the reload waits for an
	// approval (the manual reload policy): since when, and how to approve.
	// Notify makes it tell of a reload the notify policy did not make.
	Pending string
	Notify  bool
}

// AlertText is Reloader's alert sentence, extended to name every config of
// the rollout: "Reloader detected changes in *app* of type *CONFIGMAP* in
// namespace *team*. Hence reloaded *web* of type *Deployment* in namespace
// *team*". It names objects only; it never holds config data.
func AlertText(r Reload, additionalInfo string) string {
	parts := make([]string, len(r.Sources))
	for i, s := range r.Sources {
		parts[i] = fmt.Sprintf("*%s* of type *%s*", s.Name, s.Type)
	}
	msg := fmt.Sprintf("Reloader detected changes in %s in namespace *%s*. Hence reloaded *%s* of type *%s* in namespace *%s*",
		strings.Join(parts, ", "), r.Namespace, r.Workload, r.Kind, r.Namespace)
	switch {
	case r.Held != "":
		msg = fmt.Sprintf("Ripple holds the reload of *%s* of type *%s* in namespace *%s*: %s %s",
			r.Workload, r.Kind, r.Namespace, strings.Join(parts, ", "), r.Held)
	case r.Deferred != "":
		msg = fmt.Sprintf("Ripple defers the reload of *%s* of type *%s* in namespace *%s* for changes in %s: %s",
			r.Workload, r.Kind, r.Namespace, strings.Join(parts, ", "), r.Deferred)
	case r.Pending != "":
		msg = fmt.Sprintf("Ripple waits for an approval to reload *%s* of type *%s* in namespace *%s* for changes in %s: %s",
			r.Workload, r.Kind, r.Namespace, strings.Join(parts, ", "), r.Pending)
	case r.Notify:
		msg = fmt.Sprintf("Ripple detected changes in %s in namespace *%s* and would reload *%s* of type *%s* (reload policy notify: not reloaded)",
			strings.Join(parts, ", "), r.Namespace, r.Workload, r.Kind)
	case r.Stalled != "":
		msg = fmt.Sprintf("The rollout Ripple started of *%s* of type *%s* in namespace *%s* stalled %s",
			r.Workload, r.Kind, r.Namespace, r.Stalled)
	}
	if additionalInfo != "" {
		msg = additionalInfo + " : " + msg
	}
	return msg
}

// AlertMessage formats the alert for a sink with Reloader's payload shapes.
func AlertMessage(sink Sink, r Reload, additionalInfo string) Message {
	text := AlertText(r, additionalInfo)
	what := fmt.Sprintf("alert for %s %s/%s", r.Kind, r.Namespace, r.Workload)
	var body any
	switch sink {
	case Slack:
		color := "good"
		switch {
		case r.Held != "", r.Deferred != "", r.Pending != "":
			color = "warning"
		case r.Stalled != "":
			color = "danger"
		}
		body = map[string]any{"attachments": []map[string]string{{"color": color, "author_name": "Reloader", "text": text}}}
	case Teams, GChat:
		body = map[string]string{"text": text}
	default:
		return Message{Body: []byte(strings.ReplaceAll(text, "*", "")), ContentType: "text/plain", What: what}
	}
	b, _ := json.Marshal(body) // maps of strings always marshal
	return Message{Body: b, ContentType: "application/json", What: what}
}
