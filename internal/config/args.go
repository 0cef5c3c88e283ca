package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// reloaderStringBools are Reloader's boolean flags that are string flags
// there, so `--reload-on-create true` (two arguments) is how Reloader
// users may write them.
var reloaderStringBools = map[string]bool{"reload-on-create": true, "reload-on-delete": true, "is-Argo-Rollouts": true}

// Parse parses args into fs, reading a boolean flag's value from the next
// argument as Reloader does for its string-valued booleans: `--flag true`
// is `--flag=true`. A boolean flag alone still means true. For
// Reloader's string-valued ones any next argument that is not a flag is
// the value (a bad one is then an error naming the flag, not an unknown
// command); for the others only a boolean word (true, false, 1, 0...) is.
func Parse(fs *pflag.FlagSet, args []string) error {
	return fs.Parse(JoinBoolValues(fs, args))
}

// JoinBoolValues returns args with each boolean flag written as two
// arguments joined into one, as Parse describes.
func JoinBoolValues(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok || strings.Contains(name, "=") || i+1 == len(args) {
			out = append(out, a)
			continue
		}
		f := fs.Lookup(name)
		next := args[i+1]
		if f == nil || f.Value.Type() != "bool" || !isBoolValue(name, next) {
			out = append(out, a)
			continue
		}
		out = append(out, a+"="+next)
		i++
	}
	return out
}

func isBoolValue(flag, v string) bool {
	if reloaderStringBools[flag] {
		return !strings.HasPrefix(v, "-")
	}
	_, err := strconv.ParseBool(v)
	return err == nil
}

// reloaderBool is one of reloaderStringBools. Reloader declares them as
// strings and turns them on only for the exact value "true", so
// `--is-Argo-Rollouts=True` leaves Argo Rollouts off there; it does here
// too, so a Reloader user's flags keep their meaning, and Config warns
// about every value other than true and false.
type reloaderBool struct {
	on  *bool
	raw *string
}

// bindReloaderBool registers a reloaderBool; alone, the flag means true.
func bindReloaderBool(fs *pflag.FlagSet, on *bool, raw *string, name, usage string) {
	fs.VarPF(reloaderBool{on: on, raw: raw}, name, "", usage).NoOptDefVal = "true"
}

func (b reloaderBool) Set(v string) error {
	*b.raw, *b.on = v, v == "true"
	return nil
}

func (b reloaderBool) String() string { return strconv.FormatBool(*b.on) }

// Type is "bool" so usage shows no value and JoinBoolValues joins it.
func (b reloaderBool) Type() string { return "bool" }

// looseBool is the warning for a reloaderBool given a value that Reloader
// reads as false without saying so, or "".
func looseBool(name, raw string) string {
	if raw == "" || raw == "true" || raw == "false" {
		return ""
	}
	return fmt.Sprintf("--%s=%q is read as false, as Reloader reads every value but the exact string true; write --%s=true to turn it on", name, raw, name)
}
