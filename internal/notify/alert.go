package notify

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ripple-dev/ripple/internal/reason"
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

// Alert is one alert: a headline, a level and the configs it is about.
type Alert struct {
	Level    reason.Level
	Headline string
	// Namespace, Kind (e.g. Deployment) and Workload name the workload.
	Namespace, Kind, Workload string
	Sources                   []Source
}

// ReloadedHeadline is Reloader's alert sentence of a rollout, extended to
// name every config of the rollout: "Reloader detected changes in *app*
// of type *CONFIGMAP* in namespace *team*. Hence reloaded *web* of type
// *Deployment* in namespace *team*". It names objects only; it never holds
// config data.
func ReloadedHeadline(namespace, kind, workload string, sources []Source) string {
	parts := make([]string, len(sources))
	for i, s := range sources {
		parts[i] = fmt.Sprintf("*%s* of type *%s*", s.Name, s.Type)
	}
	return fmt.Sprintf("Reloader detected changes in %s in namespace *%s*. Hence reloaded *%s* of type *%s* in namespace *%s*",
		strings.Join(parts, ", "), namespace, workload, kind, namespace)
}

// Headline is the alert sentence of any other notice: the workload, then
// the notice's message, as its Event says it.
func Headline(namespace, kind, workload, message string) string {
	return fmt.Sprintf("Ripple, *%s* of type *%s* in namespace *%s*: %s", workload, kind, namespace, message)
}

// AlertText is the alert's text, after the additional info when set.
func AlertText(a Alert, additionalInfo string) string {
	if additionalInfo != "" {
		return additionalInfo + " : " + a.Headline
	}
	return a.Headline
}

// AlertMessage formats the alert for a sink with Reloader's payload shapes.
func AlertMessage(sink Sink, a Alert, additionalInfo string) Message {
	text := AlertText(a, additionalInfo)
	what := fmt.Sprintf("alert for %s %s/%s", a.Kind, a.Namespace, a.Workload)
	var body any
	switch sink {
	case Slack:
		color := "good"
		switch a.Level {
		case reason.Warning:
			color = "warning"
		case reason.Danger:
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
