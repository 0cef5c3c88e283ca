package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"
)

// A change set whose workload's Helm release is pending waits for it (the
// upgrade may write the template next), up to ReleaseHoldMax from the
// change set's first sight; a settle window of 0 waits for nothing.
func TestPendingReleaseHolds(t *testing.T) {
	pending := func(release string, firstSeen time.Duration) func(*Input) {
		return func(i *Input) {
			i.SettleWindow, i.Workload.Release = time.Second, release
			i.Pending = Pending{}.Notice(now.Add(-firstSeen)) // the window has closed
		}
	}
	for _, tc := range []struct {
		name  string
		opt   func(*Input)
		rolls bool
	}{
		{"no release: the settle window has closed, it rolls", pending("", time.Minute), true},
		{"a pending release: it waits", pending("web (pending-upgrade)", time.Minute), false},
		{"a release pending past the bound: it rolls", pending("web (pending-upgrade)", ReleaseHoldMax), true},
		{"a settle window of 0: no wait", func(i *Input) { pending("web (pending-upgrade)", time.Minute)(i); i.SettleWindow = 0 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(in(both, digestOf(cmApp, "cm2"), tc.opt))
			if p.Reloads() != tc.rolls {
				t.Fatalf("reloads %v, want %v (wait %v, notices %+v)", p.Reloads(), tc.rolls, p.Wait, p.Notices)
			}
			if tc.rolls {
				return
			}
			n, ok := p.Notice(reason.SettleWindow)
			if p.Wait != ReleasePoll || !ok || !strings.Contains(n.Message, `wait for the Helm release web (pending-upgrade) to finish`) ||
				!strings.Contains(n.Message, now.Add(-time.Minute).Add(ReleaseHoldMax).UTC().Format(time.RFC3339)) {
				t.Errorf("wait %v, notice %+v: want a wait of %v told naming the release and the bound", p.Wait, n, ReleasePoll)
			}
		})
	}
}
