package metricgate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// Querier is the part of a Prometheus-compatible API the gate uses: an
// instant query.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, error)
}

// The files of a credentials directory (--prometheus-credentials-dir), as
// a Secret mounted there holds them; each is used when present.
const (
	TokenFile = "token"
	CAFile    = "ca.crt"
	CertFile  = "tls.crt"
	KeyFile   = "tls.key"
)

// NewAPI is the Prometheus-compatible API at address, authenticated with
// what dir holds (none when dir is ""): a bearer token, a CA, a client
// certificate. The files are read again as they change (a Secret's
// rotation), without a restart.
func NewAPI(address, dir string) (Querier, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http or https URL", address)
	}
	cfg := config.DefaultHTTPClientConfig
	// The credentials are added to every request, a redirected one too:
	// a Prometheus (or whoever answers for it) could send them anywhere.
	cfg.FollowRedirects = false
	if dir != "" {
		has := func(name string) (string, bool, error) {
			p := filepath.Join(dir, name)
			_, err := os.Stat(p)
			if errors.Is(err, fs.ErrNotExist) {
				return "", false, nil
			}
			return p, err == nil, err
		}
		token, ok, err := has(TokenFile)
		if err != nil {
			return nil, err
		}
		if ok {
			cfg.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: token}
		}
		for name, field := range map[string]*string{CAFile: &cfg.TLSConfig.CAFile, CertFile: &cfg.TLSConfig.CertFile, KeyFile: &cfg.TLSConfig.KeyFile} {
			if *field, _, err = has(name); err != nil {
				return nil, err
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("the credentials in %s: %w", dir, err)
	}
	hc, err := config.NewClientFromConfig(cfg, "ripple-canary-query")
	if err != nil {
		return nil, fmt.Errorf("the credentials in %s: %w", dir, err)
	}
	// An error rather than the 3xx answer itself, which the API client
	// would tell as a bare status code. The HTTP client's error adds the
	// redirect's target (its URL).
	hc.CheckRedirect = func(*http.Request, []*http.Request) error {
		return fmt.Errorf("the Prometheus API at %s answered with a redirect, which is not followed so that Ripple's credentials go to --prometheus-url only; set --prometheus-url to where it redirects", u.Host)
	}
	c, err := api.NewClient(api.Config{Address: address, Client: hc})
	if err != nil {
		return nil, err
	}
	return promv1.NewAPI(c), nil
}
