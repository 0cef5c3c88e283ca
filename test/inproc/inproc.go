// Package inproc runs Ripple inside a test process, configured by the same
// flag and environment parsing as cmd/ripple, so integration and chart
// tests exercise the real command-line surface without a binary. Several
// Ripples may run in one process: controller name checks are off and each
// gets a metrics registry of its own unless it asks for the real one.
package inproc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/app"
	"github.com/ripple-dev/ripple/internal/config"
)

// ParseFlags parses args and the environment lookup as cmd/ripple does.
func ParseFlags(args []string, lookup func(string) string) (*config.Options, config.Config, error) {
	opts := config.NewOptions()
	if lookup == nil {
		lookup = func(string) string { return "" }
	}
	opts.ReadEnv(lookup)
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	fs.SetOutput(&strings.Builder{})
	opts.BindFlags(fs)
	if err := config.Parse(fs, args); err != nil {
		return opts, config.Config{}, err
	}
	if fs.NArg() > 0 {
		return opts, config.Config{}, fmt.Errorf("unexpected positional arguments %q", fs.Args())
	}
	cfg, err := opts.Config()
	return opts, cfg, err
}

// Options says how to run a Ripple.
type Options struct {
	// REST is how Ripple authenticates.
	REST *rest.Config
	Args []string
	Env  func(string) string
	// Registry receives Ripple's metrics; nil means a fresh one.
	Registry prometheus.Registerer
}

// Ripple is a running Ripple.
type Ripple struct {
	Config  config.Config
	Manager ctrl.Manager
	// Log holds everything it logged.
	Log *kit.LogBuffer

	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

// Start starts a Ripple under ctx; it does not wait for its caches. It runs
// until Stop or until ctx ends.
func Start(ctx context.Context, o Options) (*Ripple, error) {
	_, cfg, err := ParseFlags(o.Args, o.Env)
	if err != nil {
		return nil, err
	}
	r := &Ripple{Config: cfg, Log: &kit.LogBuffer{}, done: make(chan struct{})}
	r.Manager, err = app.NewManager(o.REST, cfg, func(mo *ctrl.Options) {
		mo.Controller.SkipNameValidation = ptr.To(true)
		mo.Logger = zap.New(zap.WriteTo(r.Log), zap.UseDevMode(true))
	})
	if err != nil {
		return nil, err
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	ctx, r.cancel = context.WithCancel(ctx)
	if err := app.Setup(ctx, r.Manager, cfg, clock.RealClock{}, reg); err != nil {
		r.cancel()
		return nil, err
	}
	go func() {
		defer close(r.done)
		r.err = r.Manager.Start(ctx)
	}()
	return r, nil
}

// stackAfter is how long after its context ended a Ripple that has not
// stopped has its goroutines logged: before the manager's grace period
// (30 s) ends it with an error.
const stackAfter = 25 * time.Second

// Stop stops the Ripple and returns the error it stopped with, if any.
// It is safe to call more than once.
func (r *Ripple) Stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case <-r.done:
			return
		case <-time.After(stackAfter):
			// Still running near the manager's grace period: what every
			// goroutine waits for goes into the log a failed test prints,
			// so that a shutdown that hangs names what holds it.
			buf := make([]byte, 8<<20)
			r.Log.Printf("ripple has not stopped %s after its context ended; goroutines:\n%s", stackAfter, buf[:runtime.Stack(buf, true)])
		}
		select {
		case <-r.done:
		case <-time.After(time.Minute - stackAfter):
			r.err = errors.New("ripple did not stop within a minute of its context ending")
		}
	})
	return r.err
}
