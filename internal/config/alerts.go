package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/ripple-dev/ripple/internal/notify"
)

// AlertOptions are Reloader's alerting environment variables.
type AlertOptions struct {
	AlertOnReload, AlertSink, AlertWebhookURL, AlertWebhookProxy, AlertAdditionalInfo string
}

// Alert configures Reloader-style alerts.
type Alert struct {
	Sink           notify.Sink
	URL            string
	Proxy          *url.URL
	AdditionalInfo string
}

func (o *AlertOptions) readEnv(lookup func(string) string) {
	o.AlertOnReload = lookup("ALERT_ON_RELOAD")
	o.AlertSink = lookup("ALERT_SINK")
	o.AlertWebhookURL = lookup("ALERT_WEBHOOK_URL")
	o.AlertWebhookProxy = lookup("ALERT_WEBHOOK_PROXY")
	o.AlertAdditionalInfo = lookup("ALERT_ADDITIONAL_INFO")
}

func (o *AlertOptions) validate(errs *problems) Alert {
	if o.AlertOnReload != "true" {
		return Alert{}
	}
	a := Alert{Sink: notify.ParseSink(o.AlertSink), URL: strings.TrimSpace(o.AlertWebhookURL), AdditionalInfo: o.AlertAdditionalInfo}
	if _, err := parseURL(a.URL, "http", "https"); err != nil {
		*errs = append(*errs, errors.New("ALERT_WEBHOOK_URL: ALERT_ON_RELOAD=true needs an http or https URL here"))
	}
	if p := strings.TrimSpace(o.AlertWebhookProxy); p != "" {
		u, err := parseURL(p)
		if err != nil {
			*errs = append(*errs, errors.New("ALERT_WEBHOOK_PROXY: not a proxy URL such as http://proxy:3128"))
		}
		a.Proxy = u
	}
	return a
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
