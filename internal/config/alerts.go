package config

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/notify"
)

// AlertOptions are Reloader's alerting settings: Reloader 1's environment
// variables, and the flags Reloader 2 gives the same settings.
type AlertOptions struct {
	AlertOnReload, AlertSink, AlertWebhookURL, AlertWebhookProxy, AlertAdditionalInfo string
	// AlertProxy and AlertStructured are $ALERT_PROXY and
	// $ALERT_STRUCTURED, which Reloader 2 reads too.
	AlertProxy, AlertStructured string
	// The --alert-* flags of Reloader 2.
	alertOn, alertStructured                   given[bool]
	alertURL, alertSink, alertProxy, alertInfo given[string]
	// AlertTemplate is --alert-template, a file; AlertClusterName is
	// --alert-cluster-name, a field of its alerts.
	AlertTemplate, AlertClusterName string
}

// Alert configures Reloader-style alerts.
type Alert struct {
	Sink           notify.Sink
	URL            string
	Proxy          *url.URL
	AdditionalInfo string
	// Structured sends the raw sink's alerts as JSON (Reloader 2's
	// --alert-structured).
	Structured bool
	// Template, when set, renders every alert's body (--alert-template):
	// Sink and Structured are then not used.
	Template *notify.Template
}

func (o *AlertOptions) readEnv(lookup func(string) string) {
	o.AlertOnReload = lookup("ALERT_ON_RELOAD")
	o.AlertSink = lookup("ALERT_SINK")
	o.AlertWebhookURL = lookup("ALERT_WEBHOOK_URL")
	o.AlertWebhookProxy = lookup("ALERT_WEBHOOK_PROXY")
	o.AlertAdditionalInfo = lookup("ALERT_ADDITIONAL_INFO")
	o.AlertProxy = lookup("ALERT_PROXY")
	o.AlertStructured = lookup("ALERT_STRUCTURED")
}

// BindFlags registers Reloader 2's alert flags.
func (o *AlertOptions) BindFlags(fs *pflag.FlagSet) {
	bindTrackedBool(fs, &o.alertOn, "alert-on-reload", "Send an alert after each rollout (and when a workload is held, a rollout stalls or a canary halts a change), as $ALERT_ON_RELOAD=true. Needs --alert-webhook-url or $ALERT_WEBHOOK_URL; without one Ripple starts, logs that alerts are off, and sends none.")
	bindTrackedString(fs, &o.alertURL, "alert-webhook-url", "Where alerts go, as $ALERT_WEBHOOK_URL; as in Reloader 2, giving it turns alerts on. Prefer the variable, set from a Secret: the URL often holds a token. Never logged.")
	bindTrackedString(fs, &o.alertSink, "alert-sink", "Alert format, as $ALERT_SINK: slack, teams or gchat; anything else (raw, webhook) sends raw text.")
	bindTrackedString(fs, &o.alertProxy, "alert-proxy", "HTTP proxy for alerts, as $ALERT_WEBHOOK_PROXY (or $ALERT_PROXY).")
	bindTrackedString(fs, &o.alertInfo, "alert-additional-info", `Text put before each alert as "<info> : ", as $ALERT_ADDITIONAL_INFO.`)
	fs.StringVar(&o.AlertTemplate, "alert-template", "", "A file holding a Go text/template that renders each alert's body (fields in docs/alerts.md; the json function quotes a value for JSON) instead of the sink's format. Read and tried on a sample alert at start: a template that does not parse or render fails the start. At most 64 KiB; a body past 256 KiB is not sent. Sent as application/json when the body is JSON, else text/plain.")
	fs.StringVar(&o.AlertClusterName, "alert-cluster-name", "", "The cluster's name, the Cluster field of --alert-template's alerts.")
	bindTrackedBool(fs, &o.alertStructured, "alert-structured", `With the raw sink, send each alert as JSON (Reloader 2's fields: event, workloadKind, workloadName, workloadNamespace, resourceKind, resourceName, resourceNamespace, timestamp, additional; Ripple adds message and resources) instead of text, as $ALERT_STRUCTURED=true.`)
}

// validate resolves the alert settings. Settings given both as a flag
// and as a variable must agree. A bad or missing URL or proxy is not an
// error: Reloader then runs and sends no alert, so an upgrade from it must
// not stop Ripple from starting (a crash-looping pod); Ripple turns alerts
// off and says why in one warning.
func (o *AlertOptions) validate(errs *problems) (Alert, []string) {
	on := o.on(errs)
	v := o.values(errs)
	tpl := o.template(errs, v.info)
	if !on {
		if tpl != nil {
			return Alert{}, []string{"--alert-template is set but alerts are off: set --alert-webhook-url (or $ALERT_ON_RELOAD=true and $ALERT_WEBHOOK_URL) to send them"}
		}
		return Alert{}, nil
	}
	why := o.onWhy()
	if _, err := parseURL(v.url, "http", "https"); err != nil {
		what := "no webhook URL is set (--alert-webhook-url or $ALERT_WEBHOOK_URL)"
		if v.url != "" {
			what = "the webhook URL (--alert-webhook-url or $ALERT_WEBHOOK_URL) is not an http or https URL" // not quoted: it may hold a token
		}
		return Alert{}, []string{fmt.Sprintf("alerts are off: %s asks for alerts, but %s; Ripple sends none, as Reloader does", why, what)}
	}
	a := Alert{Sink: v.sink, URL: v.url, AdditionalInfo: v.info, Structured: v.structured, Template: tpl}
	warnings := o.formatWarnings(a)
	if v.proxy != "" {
		u, err := parseURL(v.proxy)
		if err != nil {
			return Alert{}, []string{fmt.Sprintf("alerts are off: %s asks for alerts, but the alert proxy (--alert-proxy, $ALERT_WEBHOOK_PROXY or $ALERT_PROXY) is not a proxy URL such as http://proxy:3128", why)}
		}
		a.Proxy = u
	}
	return a, warnings
}

// on reports whether alerts are asked for.
func (o *AlertOptions) on(errs *problems) bool {
	on := o.AlertOnReload == "true" // Reloader 1 compares the exact string
	if o.alertOn.set {
		if o.AlertOnReload != "" && o.alertOn.v != on {
			*errs = append(*errs, fmt.Errorf("--alert-on-reload=%t and $ALERT_ON_RELOAD=%q disagree; give one of them", o.alertOn.v, o.AlertOnReload))
		}
		on = o.alertOn.v
	}
	// As in Reloader 2, a URL given as a flag turns alerts on.
	if o.alertURL.set && o.alertURL.v != "" {
		if o.alertOn.set && !o.alertOn.v {
			*errs = append(*errs, fmt.Errorf("--alert-on-reload=false and --alert-webhook-url: a webhook URL turns alerts on (as in Reloader 2); give one of them"))
		}
		on = true
	}
	return on
}

// formatWarnings are the warnings of format settings that a's format
// does not use.
func (o *AlertOptions) formatWarnings(a Alert) []string {
	if a.Template != nil {
		if o.AlertSink != "" || o.alertSink.set || a.Structured {
			return []string{"--alert-template renders every alert's body: the alert sink's format ($ALERT_SINK, --alert-sink, --alert-structured) is not used"}
		}
		return nil
	}
	var warnings []string
	if o.AlertClusterName != "" {
		warnings = append(warnings, "--alert-cluster-name is a field of --alert-template's alerts, and no template is set: the sink's format does not show it")
	}
	if a.Structured && a.Sink != notify.Raw {
		return append(warnings, fmt.Sprintf("--alert-structured ($ALERT_STRUCTURED) applies to the raw sink only; the %s sink sends its own payload", a.Sink))
	}
	return warnings
}

// template reads and parses --alert-template, nil when it is not set.
// info is the additional info, a field of the template.
func (o *AlertOptions) template(errs *problems, info string) *notify.Template {
	if o.AlertTemplate == "" {
		return nil
	}
	f, err := os.Open(o.AlertTemplate)
	if err != nil {
		errs.bad("alert-template", "%v", err)
		return nil
	}
	defer func() { _ = f.Close() }()
	text, err := io.ReadAll(io.LimitReader(f, notify.MaxTemplateSize+1))
	if err != nil {
		errs.bad("alert-template", "reading %s: %v", o.AlertTemplate, err)
		return nil
	}
	if len(text) > notify.MaxTemplateSize {
		errs.bad("alert-template", "%s is larger than %d bytes, the bound of a template", o.AlertTemplate, notify.MaxTemplateSize)
		return nil
	}
	tpl, err := notify.ParseTemplate(string(text), o.AlertClusterName, info)
	if err != nil {
		errs.bad("alert-template", "%s: %v", o.AlertTemplate, err)
		return nil
	}
	return tpl
}

// alertValues are the alert settings, each from its flag or variable.
type alertValues struct {
	url, proxy, info string
	sink             notify.Sink
	structured       bool
}

// values resolves each setting given as a flag, a variable or both.
func (o *AlertOptions) values(errs *problems) alertValues {
	structuredEnv := given[bool]{}
	if o.AlertStructured != "" {
		b, err := strconv.ParseBool(o.AlertStructured)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("$ALERT_STRUCTURED: %q is not a boolean; use true or false", o.AlertStructured))
		}
		structuredEnv = given[bool]{v: b, set: true}
	}
	webhook := strings.TrimSpace(pick(errs, envString(o.AlertWebhookURL), o.alertURL, "$ALERT_WEBHOOK_URL", "--alert-webhook-url", nil))
	// A proxy URL may hold a password: not shown either.
	proxyEnv := pick(errs, envString(o.AlertWebhookProxy), envString(o.AlertProxy), "$ALERT_WEBHOOK_PROXY", "$ALERT_PROXY", nil)
	proxy := strings.TrimSpace(pick(errs, envString(proxyEnv), o.alertProxy, "$ALERT_WEBHOOK_PROXY", "--alert-proxy", nil))
	sink := pick(errs, given[notify.Sink]{v: notify.ParseSink(o.AlertSink), set: o.AlertSink != ""},
		given[notify.Sink]{v: notify.ParseSink(o.alertSink.v), set: o.alertSink.set}, "$ALERT_SINK", "--alert-sink", func(s notify.Sink) string { return string(s) })
	info := pick(errs, envString(o.AlertAdditionalInfo), o.alertInfo, "$ALERT_ADDITIONAL_INFO", "--alert-additional-info", strconv.Quote)
	structured := pick(errs, structuredEnv, o.alertStructured, "$ALERT_STRUCTURED", "--alert-structured", strconv.FormatBool)
	return alertValues{url: webhook, proxy: proxy, info: info, sink: sink, structured: structured}
}

// onWhy names the setting that turned alerts on.
func (o *AlertOptions) onWhy() string {
	switch {
	case o.alertOn.set:
		return "--alert-on-reload"
	case o.alertURL.set:
		return "--alert-webhook-url"
	}
	return "ALERT_ON_RELOAD=true"
}

// parseURL parses an absolute URL with a host and, when schemes are
// given, one of them.
func parseURL(s string, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Host == "" || (len(schemes) > 0 && !slices.Contains(schemes, u.Scheme)) {
		return u, fmt.Errorf("%q is not a URL with a host and a scheme of %v", s, schemes)
	}
	return u, nil
}
