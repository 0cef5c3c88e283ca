package plan

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/refs"
)

// A Sourced input planned again at other times, settle schedules and
// canaries plans exactly as the input itself does: its sources depend on
// none of these, and the stages after them change only the plan's own
// copies.
func TestSourcedPlansAsTheInput(t *testing.T) {
	inputs := map[string]Input{
		"changed":        in(both, digestOf(cmApp, "cm2")),
		"settled":        in(both, digestOf(cmApp, "cm2"), annotate(keys.SettleWindow, "5s")),
		"both changed":   in(both, digestOf(cmApp, "cm2"), digestOf(secDB, "s2"), annotate(keys.SettleWindow, "1s")),
		"first sight":    in(),
		"manual":         in(both, digestOf(cmApp, "cm2"), annotate(keys.ReloadPolicy, "manual")),
		"window":         in(both, digestOf(cmApp, "cm2"), annotate(keys.ReloadWindow, "Mon-Fri 02:00-03:00")),
		"canaried":       in(both, digestOf(cmApp, "cm2"), annotate(keys.Canary, "true")),
		"template shows": in(both, digestOf(cmApp, "cm2"), envVar(cmApp, "cm2")),
		"excluded":       in(both, digestOf(cmApp, "cm2"), annotate(keys.ExcludeKey(refs.ConfigMap), "app")),
		"before":         in(both, digestOf(cmApp, "cm2"), before(cmApp, "cm1", now.Add(-time.Minute))),
	}
	passed := map[refs.Ref]canary.State{cmApp: {Phase: canary.Passed}}
	for name, base := range inputs {
		t.Run(name, func(t *testing.T) {
			sourced := Sourced(base)
			for i, vary := range []func(*Input){
				func(*Input) {},
				func(x *Input) { x.Now = x.Now.Add(5 * time.Second) },
				func(x *Input) { x.Pending = Pending{}.Notice(now).Notice(now) },
				func(x *Input) { x.Now, x.Pending = x.Now.Add(time.Second), Pending{}.Notice(now) },
				func(x *Input) { x.Canaries = passed },
				func(*Input) {},
			} {
				plain, again := base, sourced
				vary(&plain)
				vary(&again)
				want, got := For(plain), For(again)
				if !reflect.DeepEqual(want, got) {
					t.Fatalf("plan %d of the sourced input:\n%s\nwant\n%s", i, fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want))
				}
			}
		})
	}
}
