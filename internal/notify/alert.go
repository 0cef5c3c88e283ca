package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

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
	Kind string // ConfigMap, Secret, SecretProviderClass
	Type string // Reloader's CONFIGMAP, SECRET
	Name string
}

// Alert is one alert: a headline, a level and the configs it is about.
type Alert struct {
	Level reason.Level
	// Reason is the reason of the notice the alert tells (an --alert-template
	// field).
	Reason   reason.Reason
	Headline Text
	// Namespace, Kind (e.g. Deployment) and Workload name the workload.
	Namespace, Kind, Workload string
	Sources                   []Source
}

// Text is an alert's words: Ripple's own, and values read from the
// cluster (names, and Event messages that quote annotations), which a
// tenant may write. Each sink escapes the values, so that a value cannot
// mention a channel, make a link or start a line of its own.
type Text []Span

// Span is a run of Text.
type Span struct {
	Text string
	// Value is read from the cluster; Bold (a value) is shown as *name*,
	// as Reloader does.
	Value, Bold bool
}

// own, val and bold make Ripple's words, a value and a name.
func own(s string) Span  { return Span{Text: s} }
func val(s string) Span  { return Span{Text: s, Value: true} }
func bold(s string) Span { return Span{Text: s, Value: true, Bold: true} }

// String is the text as Reloader writes it, values as they are.
func (t Text) String() string {
	var b strings.Builder
	for _, s := range t {
		if s.Bold {
			b.WriteString("*" + s.Text + "*")
		} else {
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

// in renders t for sink, its values escaped.
func (t Text) in(sink Sink) string {
	var b strings.Builder
	for _, s := range t {
		text := s.Text
		if s.Value {
			text = escape(sink, text)
		}
		if s.Bold && sink != Raw {
			text = "*" + text + "*"
		}
		b.WriteString(text)
	}
	return b.String()
}

// Each sink's escapes of values. Slack's are its documented ones (&, <,
// >: no <!channel>, <@user> or <url|link>); Teams renders Markdown and
// HTML, so Markdown's link and emphasis characters are escaped too; Google
// Chat has no documented escape, so < and > become look-alike angle
// quotation marks (no <users/all> or <url|link>). An @ is followed by a
// word joiner: no @here or @channel. Markdown emphasis in Slack and Google
// Chat has no escape and is left: it changes how a value looks, not whom
// it reaches.
var (
	slackEscapes = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "@", "@\u2060")
	teamsEscapes = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "@", "@\u2060",
		`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "[", `\[`, "]", `\]`)
	gchatEscapes = strings.NewReplacer("<", "\u2039", ">", "\u203a", "@", "@\u2060")
)

// escape makes a value plain text in sink. Control characters (a line
// break) become spaces in every sink, raw text too, so that a value cannot
// pass for a line of Ripple's.
func escape(sink Sink, v string) string {
	v = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, v)
	switch sink {
	case Slack:
		return slackEscapes.Replace(v)
	case Teams:
		return teamsEscapes.Replace(v)
	case GChat:
		return gchatEscapes.Replace(v)
	}
	return v
}

// ReloadedHeadline is Reloader's alert sentence of a rollout, extended to
// name every config of the rollout: "Reloader detected changes in *app*
// of type *CONFIGMAP* in namespace *team*. Hence reloaded *web* of type
// *Deployment* in namespace *team*". It names objects only; it never holds
// config data.
func ReloadedHeadline(namespace, kind, workload string, sources []Source) Text {
	t := Text{own(reloadedLead)}
	for i, s := range sources {
		if i > 0 {
			t = append(t, own(", "))
		}
		t = append(t, bold(s.Name), own(" of type "), bold(s.Type))
	}
	return append(t, own(" in namespace "), bold(namespace), own(". Hence reloaded "), bold(workload),
		own(" of type "), bold(kind), own(" in namespace "), bold(namespace))
}

// Headline is the alert sentence of any other notice: the workload, then
// the notice's message, as its Event says it.
func Headline(namespace, kind, workload, message string) Text {
	return Text{own("Ripple, "), bold(workload), own(" of type "), bold(kind), own(" in namespace "), bold(namespace),
		own(": "), val(message)}
}

// AlertText is the alert's text as Reloader writes it, after the
// additional info when set.
func AlertText(a Alert, additionalInfo string) string {
	if additionalInfo != "" {
		return additionalInfo + " : " + a.Headline.String()
	}
	return a.Headline.String()
}

// AlertMessage formats the alert for a sink with Reloader's payload
// shapes. The additional info is the operator's (ALERT_ADDITIONAL_INFO)
// and is sent as it is, so it may mention or link on purpose.
func AlertMessage(sink Sink, a Alert, additionalInfo string) Message {
	text := a.Headline.in(sink)
	if sink == Raw {
		additionalInfo = strings.ReplaceAll(additionalInfo, "*", "")
	}
	if additionalInfo != "" {
		text = additionalInfo + " : " + text
	}
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
		return Message{Body: []byte(text), ContentType: "text/plain", What: what, Namespace: a.Namespace}
	}
	b, _ := json.Marshal(body) // maps of strings always marshal
	return Message{Body: b, ContentType: "application/json", What: what, Namespace: a.Namespace}
}

// reloadedLead opens ReloadedHeadline, and only it: how a structured
// alert tells a rollout from the other notices.
const reloadedLead = "Reloader detected changes in "

// structured is the JSON of a raw alert with --alert-structured: Reloader
// 2's fields, with the first config of the rollout as its resource, plus
// Ripple's message (the text alert, values as they are) and every config.
type structured struct {
	Event             string     `json:"event"`
	WorkloadKind      string     `json:"workloadKind"`
	WorkloadName      string     `json:"workloadName"`
	WorkloadNamespace string     `json:"workloadNamespace"`
	ResourceKind      string     `json:"resourceKind,omitempty"`
	ResourceName      string     `json:"resourceName,omitempty"`
	ResourceNamespace string     `json:"resourceNamespace,omitempty"`
	Timestamp         string     `json:"timestamp"`
	Additional        string     `json:"additional,omitempty"`
	Message           string     `json:"message"`
	Resources         []resource `json:"resources,omitempty"`
}

type resource struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// StructuredMessage formats the alert as JSON for the raw sink, as
// Reloader 2 does with --alert-structured. Event is "reload" for a
// rollout and "notice" for the others (a hold, a stall, a halt). JSON
// needs no escape of values beyond its own.
func StructuredMessage(a Alert, additionalInfo string, now time.Time) Message {
	s := structured{
		Event: "notice", WorkloadKind: a.Kind, WorkloadName: a.Workload, WorkloadNamespace: a.Namespace,
		Timestamp: now.UTC().Format(time.RFC3339), Additional: additionalInfo, Message: a.Headline.String(),
	}
	if len(a.Headline) > 0 && a.Headline[0] == own(reloadedLead) {
		s.Event = "reload"
	}
	for i, src := range a.Sources {
		if i == 0 {
			s.ResourceKind, s.ResourceName, s.ResourceNamespace = src.Type, src.Name, a.Namespace
		}
		s.Resources = append(s.Resources, resource{Kind: src.Type, Name: src.Name})
	}
	b, _ := json.Marshal(s) // strings only: always marshals
	return Message{Body: b, ContentType: "application/json", What: fmt.Sprintf("alert for %s %s/%s", a.Kind, a.Namespace, a.Workload), Namespace: a.Namespace}
}
