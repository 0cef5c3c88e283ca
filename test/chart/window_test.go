package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/window"
)

// TestReloadWindowSpellings: the chart takes ripple.reloadWindow in every
// spelling Ripple's parser takes (day names in any case, in full, with
// spaces around the commas) and passes it on as it is; a value the parser
// rejects, the chart rejects at install, naming the value, rather than
// rendering a Deployment whose pod exits at start. (The zone's existence
// and a window that opens and closes at once are left to Ripple.)
func TestReloadWindowSpellings(t *testing.T) {
	accepted := []string{
		"Mon-Fri 02:00-04:00 Europe/Berlin",
		"Sat,Sun 00:00-24:00",
		"Sat, Sun 00:00-24:00",
		"Sat ,Sun 00:00-24:00",
		"sat,SUN 00:00-24:00",
		"MONDAY-friday 22:00-02:00 America/New_York",
		"Monday,Wed-Fri 22:00-02:00 America/Argentina/Buenos_Aires",
		"Tuesday, thursday , Saturday 23:59-00:00 EST5EDT",
		"Fri-Mon 10:00-11:00",
		"02:00-04:00",
		"Mon 01:00-02:00 UTC;Tue 03:00-04:00  Asia/Tokyo",
		"Mon-Fri 02:00-04:00 Europe/Berlin; Sat, Sun 00:00-24:00 Etc/GMT+5",
		"always",
		" Always ",
	}
	rejected := []string{
		"Sat. Sun 00:00-24:00",
		"Sat Sun 00:00-24:00",
		"Mon-Fry 02:00-04:00",
		"Mon-Fri 2:00-04:00",
		"Mon-Fri 02:00-04:60",
		"Mon-Fri 02:00",
		"Mon-Fri",
		"Mon 02:00-04:00 UTC extra",
		"Mon 02:00-04:00;",
		"24:00-02:00",
		"Sat,,Sun 02:00-03:00",
		"Sat, 02:00-03:00",
		"never",
	}
	for _, v := range slices.Concat(accepted, rejected) {
		ok := slices.Contains(accepted, v)
		t.Run(fmt.Sprintf("%q", v), func(t *testing.T) {
			t.Parallel()
			// The table is the binary's: each value is accepted or
			// rejected by Ripple's own parser as the test says.
			if _, err := window.Parse(v); (err == nil) != ok {
				t.Fatalf("window.Parse(%q): %v; the table says accepted=%t", v, err, ok)
			}
			rel := helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{{"ripple": map[string]any{"reloadWindow": v}}}}
			if !ok {
				_, err := helmchart.Template(rel)
				if want := fmt.Sprintf("ripple.reloadWindow: %q is not a reload window", v); err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("helm template: %v; want an error saying %q", err, want)
				}
				return
			}
			_, objs := render(t, rel)
			_, c := rippleDeployment(t, objs)
			if !slices.Contains(c.Args, "--reload-window="+v) {
				t.Errorf("arguments %q lack --reload-window=%s", c.Args, v)
			}
			parseRendered(t, objs)
		})
	}
}
