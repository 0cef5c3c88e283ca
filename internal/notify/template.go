package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"text/template"
	"time"

	"github.com/go-logr/logr"

	"github.com/ripple-dev/ripple/internal/reason"
)

// The bounds of an alert template (--alert-template): the file, and the
// body one alert renders to. A body past its bound is not sent.
const (
	MaxTemplateSize = 64 << 10
	MaxBodySize     = 256 << 10
)

// TemplateData are the fields an alert template renders, documented in
// docs/alerts.md. Every string but Level, Reason, Time, Cluster and
// AdditionalInfo may hold a value read from the cluster, which a tenant
// may write: a template that builds JSON quotes them with the json
// function. No field ever holds config data.
type TemplateData struct {
	// Namespace, Kind (e.g. Deployment) and Workload name the workload.
	Namespace, Kind, Workload string
	// Configs are the configs the alert is about: for a rollout, every
	// config it carries.
	Configs []TemplateConfig
	// Level is good, warning or danger.
	Level string
	// Reason is the Event reason of the alert, e.g. Reloaded or
	// RolloutStalled (docs/reference.md lists them).
	Reason string
	// Message is the alert's sentence, values as they are (no sink's
	// escapes).
	Message string
	// Time is when the alert was made, RFC 3339 in UTC.
	Time string
	// Cluster is --alert-cluster-name; AdditionalInfo is
	// ALERT_ADDITIONAL_INFO (--alert-additional-info). Both are the
	// operator's.
	Cluster, AdditionalInfo string
}

// TemplateConfig is a config of an alert.
type TemplateConfig struct {
	// Kind is ConfigMap, Secret or SecretProviderClass. The json
	// function writes a config as {"kind": ..., "name": ...}.
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Template renders alerts with an operator's Go text/template.
type Template struct {
	t *template.Template
	// Cluster and AdditionalInfo are the operator's fields of every alert.
	Cluster, AdditionalInfo string
}

// ParseTemplate parses text as an alert template and renders a sample
// alert with it, so that a template that cannot render fails at start
// rather than on the first alert.
func ParseTemplate(text string, cluster, additionalInfo string) (*Template, error) {
	if len(text) > MaxTemplateSize {
		return nil, fmt.Errorf("%d bytes, more than the %d a template may have", len(text), MaxTemplateSize)
	}
	t, err := template.New("alert").Option("missingkey=error").Funcs(template.FuncMap{"json": jsonString}).Parse(text)
	if err != nil {
		return nil, err
	}
	tpl := &Template{t: t, Cluster: cluster, AdditionalInfo: additionalInfo}
	sample := Alert{Level: reason.Good, Reason: reason.Reloaded, Namespace: "team-a", Kind: "Deployment", Workload: "web",
		Sources: []Source{{Kind: "ConfigMap", Type: "CONFIGMAP", Name: "app"}}}
	sample.Headline = ReloadedHeadline(sample.Namespace, sample.Kind, sample.Workload, sample.Sources)
	if _, err := tpl.Render(sample, time.Unix(0, 0)); err != nil {
		return nil, fmt.Errorf("rendering a sample alert: %w", err)
	}
	return tpl, nil
}

// jsonString is the template's json function: v as a JSON value (a
// string as a quoted literal), so that no value can end the string it is
// put in or add a field.
func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// Data are the fields of alert a made at now.
func (t *Template) Data(a Alert, now time.Time) TemplateData {
	d := TemplateData{
		Namespace: a.Namespace, Kind: a.Kind, Workload: a.Workload, Level: levelName(a.Level), Reason: string(a.Reason),
		Message: a.Headline.String(), Time: now.UTC().Format(time.RFC3339), Cluster: t.Cluster, AdditionalInfo: t.AdditionalInfo,
		Configs: []TemplateConfig{},
	}
	for _, s := range a.Sources {
		d.Configs = append(d.Configs, TemplateConfig{Kind: s.Kind, Name: s.Name})
	}
	return d
}

// errTooLarge is a rendered body past MaxBodySize.
var errTooLarge = fmt.Errorf("the rendered body is larger than %d bytes", MaxBodySize)

// Render renders alert a made at now. The body is sent as
// application/json when it is valid JSON, else as text/plain. A body
// past MaxBodySize is an error: it is not sent.
func (t *Template) Render(a Alert, now time.Time) (Message, error) {
	w := &bounded{max: MaxBodySize}
	if err := t.t.Execute(w, t.Data(a, now)); err != nil {
		if errors.Is(err, errTooLarge) || w.over {
			return Message{}, errTooLarge
		}
		return Message{}, err
	}
	body := w.buf.Bytes()
	contentType := "text/plain"
	if json.Valid(body) {
		contentType = "application/json"
	}
	return Message{Body: body, ContentType: contentType, What: fmt.Sprintf("alert for %s %s/%s", a.Kind, a.Namespace, a.Workload), Namespace: a.Namespace}, nil
}

// Sender returns the function that renders each alert with t, made at
// now(), and sends it with send. An alert that does not render (a
// template error, a body past MaxBodySize) is not sent: it is logged once
// and onFail is called (a metric).
func (t *Template) Sender(send func(Message), onFail func(), log logr.Logger, now func() time.Time) func(Alert) {
	return func(a Alert) {
		m, err := t.Render(a, now())
		if err != nil {
			log.Error(err, "alert not sent: --alert-template did not render it", "what", fmt.Sprintf("alert for %s %s/%s", a.Kind, a.Namespace, a.Workload))
			if onFail != nil {
				onFail()
			}
			return
		}
		send(m)
	}
}

// bounded is a buffer that refuses to grow past max.
type bounded struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *bounded) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		return 0, errTooLarge
	}
	return b.buf.Write(p)
}

// levelName is an alert level's word, as Slack's colours name them.
func levelName(l reason.Level) string {
	switch l {
	case reason.Good:
		return "good"
	case reason.Warning:
		return "warning"
	case reason.Danger:
		return "danger"
	}
	return "none"
}
