package config

import (
	"net"
	"strconv"

	"github.com/spf13/pflag"
)

// AdmissionOptions are the admission webhook's flags: where it listens,
// its serving certificate, and the guard's limit.
type AdmissionOptions struct {
	BindAddress string
	CertDir     string
	ClientCA    string
	MaxRollouts int
}

// Admission is the validated admission webhook: it warns at a ConfigMap
// or Secret write what the write rolls, and with a limit denies the writes
// that roll more unless they acknowledge the count.
type Admission struct {
	// Addr is where the webhook listens; empty, there is no webhook.
	Addr string
	// CertDir holds the serving certificate, tls.crt and tls.key.
	CertDir string
	// ClientCA is the file of the CAs a caller's client certificate must
	// be signed by; empty, no client certificate is asked for.
	ClientCA string
	// MaxRollouts is the guard's cluster-wide limit; 0 is none.
	MaxRollouts int
}

// DefaultAdmissionCertDir is where the chart mounts the webhook's
// serving certificate.
const DefaultAdmissionCertDir = "/etc/ripple/admission-tls"

func defaultAdmissionOptions() AdmissionOptions {
	return AdmissionOptions{CertDir: DefaultAdmissionCertDir}
}

// BindFlags registers the admission webhook's flags.
func (o *AdmissionOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "admission-bind-address", o.BindAddress, `Serve the validating admission webhook on this address, e.g. ":9443": a ConfigMap or Secret write gets warnings that kubectl prints, saying what it rolls (docs/blast-radius.md). Every replica serves it from its own caches. Empty (the default) serves none. Helm: ripple.admission.enabled.`)
	fs.StringVar(&o.CertDir, "admission-cert-dir", o.CertDir, "Directory of the webhook's serving certificate and key, tls.crt and tls.key (a mounted kubernetes.io/tls Secret); read again when they change, without a restart.")
	fs.StringVar(&o.ClientCA, "admission-client-ca", o.ClientCA, "PEM file of the CAs that sign the API server's client certificate for webhooks (its AdmissionConfiguration's kubeconfig): the webhook then answers only a caller that presents one, so that nobody else who reaches the port can ask it. Read at start. Empty (the default) asks for no client certificate. Helm: ripple.admission.clientCA.")
	fs.IntVar(&o.MaxRollouts, "admission-max-rollouts", o.MaxRollouts, "The admission guard: deny a ConfigMap or Secret write that rolls more than this many workloads, unless the config's <annotation-prefix>/ack-rollouts annotation acknowledges at least that many. With --namespace-defaults, a Namespace's <annotation-prefix>/max-rollouts annotation sets its own limit in place of this one. 0 (the default) denies nothing. Needs --admission-bind-address; when Ripple is down, no write is denied. Helm: ripple.admission.maxRollouts.")
}

func (o *AdmissionOptions) validate(errs *problems, op Operations) Admission {
	a := Admission{Addr: o.BindAddress, CertDir: o.CertDir, ClientCA: o.ClientCA, MaxRollouts: o.MaxRollouts}
	if o.MaxRollouts < 0 {
		errs.bad("admission-max-rollouts", "%d is negative; 0 denies nothing", o.MaxRollouts)
	}
	if o.BindAddress == "" {
		if o.MaxRollouts > 0 {
			errs.bad("admission-max-rollouts", "the guard needs the webhook: set --admission-bind-address")
		}
		if o.ClientCA != "" {
			errs.bad("admission-client-ca", "authenticates the webhook's callers: set --admission-bind-address")
		}
		return a
	}
	if _, port, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs.bad("admission-bind-address", "%q is not host:port: %v", o.BindAddress, err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		errs.bad("admission-bind-address", "%q: the port must be a number from 1 to 65535", o.BindAddress)
	} else if samePort(o.BindAddress, op.MetricsAddr) || (op.HealthAddr != "" && samePort(o.BindAddress, op.HealthAddr)) {
		errs.bad("admission-bind-address", "%q must be an address of its own, not the metrics or health address", o.BindAddress)
	}
	if o.CertDir == "" {
		errs.bad("admission-cert-dir", "is empty; the webhook serves TLS only")
	}
	return a
}
