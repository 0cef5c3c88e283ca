package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// FuzzFlag checks every flag with any value: parsing and validating never
// panic, and a value rejected is rejected with a message naming its flag.
func FuzzFlag(f *testing.F) {
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	NewOptions().BindFlags(fs)
	var names []string
	fs.VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })
	if len(names) == 0 {
		f.Fatal("no flags bound")
	}
	for i := range names {
		f.Add(uint16(i), "")
		f.Add(uint16(i), "true")
		f.Add(uint16(i), "Mon-Fri 02:00-04:00 Europe/Berlin")
		f.Add(uint16(i), "app=a,tier in (x,y)")
		f.Add(uint16(i), "-1s")
	}
	f.Fuzz(func(t *testing.T, i uint16, value string) {
		name := names[int(i)%len(names)]
		_, err := parse(t, nil, "--"+name+"="+value)
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Fatalf("--%s=%q: error %q does not name the flag", name, value, err)
		}
	})
}
