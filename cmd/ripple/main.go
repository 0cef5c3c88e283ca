// Command ripple runs the Ripple controller: it rolls workloads when the
// ConfigMaps and Secrets they use change, as a drop-in replacement for
// Stakater Reloader.
//
//	ripple [flags]     run the controller
//	ripple version     print the version
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ripple-dev/ripple/internal/app"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/version"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// The initial sync decodes every Secret whole and keeps only its
		// digest: collecting that garbage sooner keeps the peak near the
		// steady state, for a little CPU at start. $GOGC overrides it.
		debug.SetGCPercent(defaultGOGC)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// defaultGOGC is Ripple's GC target when $GOGC is not set (Go's is 100).
const defaultGOGC = 50

// run returns the exit code: 0 on a clean stop, 1 when Ripple fails while
// running, 2 for invalid arguments.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "version" {
		fmt.Fprintln(stdout, "ripple", version.Version)
		return 0
	}
	opts := config.NewOptions()
	opts.ReadEnv(os.Getenv)
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: ripple [flags]\n       ripple version\n\nFlags:\n%s", fs.FlagUsages())
	}
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "ripple: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ripple: unknown command %q; commands: version\n", fs.Arg(0))
		return 2
	}
	cfg, err := opts.Config()
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "ripple: %s\n", line)
		}
		return 2
	}

	logger := zap.New(zap.WriteTo(stderr), zap.UseDevMode(false), zap.Level(zapcore.Level(-cfg.LogLevel)),
		func(o *zap.Options) {
			if cfg.LogJSON {
				o.Encoder = zapcore.NewJSONEncoder(zapcore.EncoderConfig{
					TimeKey: "ts", LevelKey: "level", NameKey: "logger", MessageKey: "msg", StacktraceKey: "stacktrace",
					EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder, EncodeDuration: zapcore.StringDurationEncoder,
				})
			} else {
				o.Encoder = zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
					TimeKey: "ts", LevelKey: "level", NameKey: "logger", MessageKey: "msg",
					EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.CapitalLevelEncoder, EncodeDuration: zapcore.StringDurationEncoder,
				})
			}
		})
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // client-go's own lines (leader election, watches) in the same format
	for _, w := range cfg.Warnings {
		logger.Info("setting has no effect", "warning", w)
	}
	ctx := ctrl.LoggerInto(ctrl.SetupSignalHandler(), logger)
	if err := app.Run(ctx, cfg); err != nil {
		logger.Error(err, "ripple stopped")
		return 1
	}
	return 0
}
