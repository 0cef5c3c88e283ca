// Command ripple runs the Ripple controller: it rolls workloads when the
// ConfigMaps and Secrets they use change, as a drop-in replacement for
// Stakater Reloader.
//
//	ripple [flags]                 run the controller
//	ripple explain <kind>/<name>   say why a workload reloads or not
//	ripple history <kind>/<name>   the configs each revision was built for
//	ripple approve <kind>/<name>   approve the reload a manual workload waits for
//	ripple resume configmap/<name> continue a canaried change its canary halted
//	ripple wait configmap/<name>   wait until the config's change reaches every workload
//	ripple undo configmap/<name>   roll the workloads that pin it back to the data before its change
//	ripple plan --old <m> --new <m> what a change of manifests will roll, for CI
//	ripple version                 print the version
//	ripple help                    list the commands
//
// Installed as kubectl-ripple, it is the kubectl plugin `kubectl ripple`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
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
		// steady state, for a little CPU at start. Go's default comes
		// back once the caches have synced (syncedGC). $GOGC overrides
		// both.
		debug.SetGCPercent(syncGOGC)
	}
	os.Exit(run(ctrl.SetupSignalHandler(), filepath.Base(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr))
}

// pluginName is the binary's name as a kubectl plugin.
const pluginName = "kubectl-ripple"

// syncGOGC is Ripple's GC target while its caches sync when $GOGC is not
// set (Go's is 100).
const syncGOGC = 50

// syncedGC returns Go's default GC target once the caches have synced,
// unless $GOGC is set: after the sync the garbage is a reload's, and at 50
// collecting it cost a fan-out of 300 Deployments about 10% of its time
// (docs/performance.md).
func syncedGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}

// run runs the command named by args, the binary being called prog, until
// it is done or ctx is cancelled, and returns the exit code: 0 on success
// or a clean stop, 1 when Ripple fails while running or cannot read the
// cluster, 2 for invalid arguments.
func run(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	plugin := strings.TrimSuffix(prog, ".exe") == pluginName
	name := "ripple"
	if plugin {
		name = "kubectl ripple"
	}
	if len(args) == 0 && plugin {
		// kubectl runs a plugin without arguments for `kubectl ripple`:
		// that is a question, not a request to start the controller.
		commandsUsage(stdout, name, plugin)
		return 0
	}
	if len(args) > 0 {
		commands := map[string]func() int{
			"version": func() int { return runVersion(name, args[1:], stdout, stderr) },
			"explain": func() int { return runExplain(ctx, name, args[1:], os.Stdin, stdout, stderr, time.Now) },
			"history": func() int { return runHistory(ctx, name, args[1:], stdout, stderr, time.Now) },
			"approve": func() int { return runApprove(ctx, name, args[1:], stdout, stderr, time.Now) },
			"resume":  func() int { return runResume(ctx, name, args[1:], stdout, stderr) },
			"wait":    func() int { return runWait(ctx, name, args[1:], stdout, stderr, time.Now) },
			"undo":    func() int { return runUndo(ctx, name, args[1:], stdout, stderr) },
			"plan":    func() int { return runPlan(ctx, name, args[1:], os.Stdin, stdout, stderr, time.Now) },
			"help": func() int {
				commandsUsage(stdout, name, plugin)
				return 0
			},
		}
		if command, ok := commands[args[0]]; ok {
			return command()
		}
		if !strings.HasPrefix(args[0], "-") {
			// The controller takes flags only: a first word is a command,
			// even before --help.
			fmt.Fprintf(stderr, "%s: %s\n", name, unknownCommand(name, args[0]))
			return 2
		}
	}
	if plugin {
		return pluginFlags(name, args, stdout, stderr)
	}
	return runController(ctx, name, args, stdout, stderr)
}

// pluginFlags answers flags given to the kubectl plugin without a
// command. The plugin runs on the user's machine with the user's
// credentials: a controller started there (`kubectl ripple --dry-run`)
// would act beside the one in the cluster, so it never starts one.
func pluginFlags(name string, args []string, stdout, stderr io.Writer) int {
	if args[0] == "-h" || args[0] == "--help" {
		commandsUsage(stdout, name, true)
		return 0
	}
	fmt.Fprintf(stderr, "%s: %s is not a command: the kubectl plugin never runs the controller, which runs in the cluster (the chart's Deployment); commands: %s (%s help says what each does), e.g. %s explain --all -A\n",
		name, args[0], commandNames, name, name)
	return 2
}

// commandNames are the commands, as errors list them.
const commandNames = "explain, plan, history, approve, resume, wait, undo, version, help"

// unknownCommand says that arg is no command, and which to use instead.
func unknownCommand(name, arg string) string {
	if arg == "lint" {
		return fmt.Sprintf("there is no lint command: the lint is %s explain -f <file|dir|->, which checks manifests offline and exits 1 on an error finding", name)
	}
	return fmt.Sprintf("unknown command %q; commands: %s (%s help says what each does)", arg, commandNames, name)
}

// unexpectedArgument says what to do about arg, an argument that is
// neither a flag nor a command: after a flag, it is likely meant as the
// flag's value.
func unexpectedArgument(args []string, arg string) string {
	i := slices.Index(args, arg)
	if prev := ""; i > 0 {
		prev = args[i-1]
		if strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
			return fmt.Sprintf("unexpected argument %q after %s: a boolean flag takes true or false, as %s=true or %s false; commands (first, before any flag): %s",
				arg, prev, prev, prev, commandNames)
		}
	}
	return fmt.Sprintf("unexpected argument %q: the controller takes flags only; commands (first, before any flag): %s", arg, commandNames)
}

// commandsUsage lists the commands: `help`, and the head of the
// controller's --help. The kubectl plugin lists no controller: it runs none.
func commandsUsage(w io.Writer, name string, plugin bool) {
	run := fmt.Sprintf("  %[1]s [flags]                    run the controller (%[1]s --help lists its flags)\n", name)
	if plugin {
		run = ""
	}
	fmt.Fprintf(w, `Ripple rolls workloads when the ConfigMaps and Secrets they use change.

Usage:
%[2]s  %[1]s explain <kind>/<name>      say why a workload reloads or not
  %[1]s explain --all              the state of every opted-in workload
  %[1]s explain --pending          the workloads whose reload waits (approval, window)
  %[1]s explain -f <manifests>     the same from files, offline, with lint findings
  %[1]s plan --old <m> --new <m>   what a change of manifests will roll, offline, for CI
  %[1]s history <kind>/<name>      the configs and digests each revision was built for
  %[1]s approve <kind>/<name>      approve the reload a manual workload waits for
  %[1]s resume configmap/<name>    continue a canaried change its canary halted
  %[1]s wait configmap/<name>      wait until the config's change reaches every workload
  %[1]s undo configmap/<name>      roll the workloads that pin it back to the data before its latest change
  %[1]s version                    print the version
  %[1]s help                       print this list

Run '%[1]s <command> --help' for a command's flags.
`, name, run)
}

// runVersion prints the version.
func runVersion(name string, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(name+" version", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stdout, "Print Ripple's version.\n\nUsage:\n  %s version\n", name) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s version: %v\n", name, err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s version: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	fmt.Fprintln(stdout, "ripple", version.Version)
	return 0
}

// runController runs the controller until it is stopped; its --help goes
// to stdout.
func runController(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	opts := config.NewOptions()
	opts.ReadEnv(os.Getenv)
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		commandsUsage(stdout, name, false)
		fmt.Fprintf(stdout, "\nFlags of the controller (%s [flags]):\n%s", name, fs.FlagUsages())
	}
	opts.BindFlags(fs)
	if err := config.Parse(fs, args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "ripple: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: %s\n", name, unexpectedArgument(args, fs.Arg(0)))
		return 2
	}
	cfg, err := opts.Config()
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "ripple: %s\n", line)
		}
		return 2
	}

	logger := newLogger(cfg, stderr)
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // client-go's own lines (leader election, watches) in the same format
	for _, w := range cfg.Warnings {
		logger.Info("setting has no effect", "warning", w)
	}
	ctx = ctrl.LoggerInto(ctx, logger)
	if err := app.Run(ctx, cfg, syncedGC); err != nil {
		logger.Error(err, "ripple stopped")
		return 1
	}
	return 0
}

// newLogger is Ripple's logger under cfg, writing to w: JSON with
// Reloader's keys, or text.
func newLogger(cfg config.Config, w io.Writer) logr.Logger {
	return zap.New(zap.WriteTo(w), zap.UseDevMode(false), zap.Level(zapcore.Level(-cfg.LogLevel)),
		func(o *zap.Options) {
			if cfg.LogJSON {
				// Reloader's logrus JSON keys: time (RFC 3339), level, msg.
				o.Encoder = zapcore.NewJSONEncoder(zapcore.EncoderConfig{
					TimeKey: "time", LevelKey: "level", NameKey: "logger", MessageKey: "msg", StacktraceKey: "stacktrace",
					EncodeTime: zapcore.RFC3339NanoTimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder, EncodeDuration: zapcore.StringDurationEncoder,
				})
			} else {
				o.Encoder = zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
					TimeKey: "ts", LevelKey: "level", NameKey: "logger", MessageKey: "msg",
					EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.CapitalLevelEncoder, EncodeDuration: zapcore.StringDurationEncoder,
				})
			}
		})
}
