package config

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/declared"
)

// KindsOptions are the workload kinds declared rather than built in: a
// kinds file and presets (docs/workload-kinds.md).
type KindsOptions struct {
	KindsFile   string
	KindPresets []string
}

// BindFlags registers the declared kinds' flags.
func (o *KindsOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.KindsFile, "workload-kinds", o.KindsFile, "A YAML file declaring more workload kinds: for each, its group, version and kind and how to reload it (template: the field path of its pod template, or restart: {annotation: KEY}). Each is used once its API is served. See docs/workload-kinds.md.")
	fs.StringSliceVar(&o.KindPresets, "workload-kinds-preset", o.KindPresets, fmt.Sprintf("Declared workload kinds shipped with Ripple, by name: %v.", declared.PresetNames()))
}

// validate reads the kinds file and returns the presets' kinds and then
// the file's.
func (o *KindsOptions) validate(errs *problems) []declared.Kind {
	srcs, err := declared.Presets(o.KindPresets)
	if err != nil {
		errs.bad("workload-kinds-preset", "%v", err)
	}
	if o.KindsFile != "" {
		data, err := os.ReadFile(o.KindsFile)
		if err != nil {
			errs.bad("workload-kinds", "%v", err)
			return nil
		}
		kinds, err := declared.Parse(o.KindsFile, data)
		if err != nil {
			errs.bad("workload-kinds", "%v", err)
			return nil
		}
		srcs = append(srcs, declared.Source{Name: o.KindsFile, Flag: "--workload-kinds=" + o.KindsFile, Kinds: kinds})
	}
	kinds, err := declared.Merge(srcs...)
	if err != nil {
		errs.bad("workload-kinds", "%v", err)
	}
	return kinds
}
