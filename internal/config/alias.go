package config

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// Reloader 2 renamed some of Reloader 1's settings (--metrics-addr for
// what Ripple calls --metrics-bind-address, --alert-webhook-url for
// $ALERT_WEBHOOK_URL). Ripple takes both names for one setting; to tell a
// value given twice from a default, each flag records whether it was set.

// given is a value and whether its flag (or variable) was given.
type given[T comparable] struct {
	v   T
	set bool
}

// trackedString is a string flag that records that it was set.
type trackedString struct{ g *given[string] }

func (f trackedString) Set(v string) error { f.g.v, f.g.set = v, true; return nil }
func (f trackedString) String() string     { return f.g.v }
func (f trackedString) Type() string       { return "string" }

// trackedBool is a bool flag that records that it was set; alone, it
// means true.
type trackedBool struct{ g *given[bool] }

func (f trackedBool) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	f.g.v, f.g.set = b, true
	return nil
}
func (f trackedBool) String() string { return strconv.FormatBool(f.g.v) }

// Type is "bool" so usage shows no value and JoinBoolValues joins it.
func (f trackedBool) Type() string { return "bool" }

func bindTrackedString(fs *pflag.FlagSet, g *given[string], name, usage string) {
	fs.Var(trackedString{g}, name, usage)
}

func bindTrackedBool(fs *pflag.FlagSet, g *given[bool], name, usage string) {
	fs.VarPF(trackedBool{g}, name, "", usage).NoOptDefVal = "true"
}

// pick resolves one setting given under two names: the second when only
// it was given, else the first; both given with different values is an
// error naming both. show formats a value for the message (nil: values
// are not shown, as they may hold a token).
func pick[T comparable](errs *problems, first, second given[T], firstName, secondName string, show func(T) string) T {
	if !second.set {
		return first.v
	}
	if first.set && first.v != second.v {
		msg := fmt.Sprintf("%s and %s are the same setting (Reloader 1's and Reloader 2's names) and are given different values", firstName, secondName)
		if show != nil {
			msg = fmt.Sprintf("%s (%s and %s)", msg, show(first.v), show(second.v))
		}
		*errs = append(*errs, fmt.Errorf("%s; give one of them", msg))
		return first.v
	}
	return second.v
}

// envString is an environment variable as a given: set when not empty.
func envString(v string) given[string] { return given[string]{v: v, set: v != ""} }
