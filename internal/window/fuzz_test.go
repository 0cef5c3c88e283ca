package window

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse checks that any reload-window value is rejected with an
// *Error pointing inside it, or parses to a canonical form that parses
// back to itself and answers Open and Next without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "always", "02:00-04:00", "Mon-Fri 02:00-04:00 Europe/Berlin", "sat,SUN 00:00-24:00",
		"Fri-Mon 10:00-11:00", "Mon 01:00-02:00 UTC;Tue 03:00-04:00  Asia/Tokyo", "25:00-26:00", "Mon-", "02:00-04:00 Nowhere/City", ";;"} {
		f.Add(s, int64(1_700_000_000))
	}
	f.Fuzz(func(t *testing.T, text string, unix int64) {
		s, err := Parse(text)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Offset < 0 || e.Offset > len(text) {
				t.Fatalf("error %v is not an *Error inside the %d-byte value", err, len(text))
			}
			return
		}
		again, err := Parse(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("canonical form %q parses back as %q, %v", s.String(), again.String(), err)
		}
		now := time.Unix(unix%(1<<34), 0).UTC() // a few centuries either side of 1970
		next := s.Next(now)
		if s.Open(now) != next.Equal(now) || (!next.IsZero() && next.Before(now)) {
			t.Fatalf("at %v: open %v, next opening %v", now, s.Open(now), next)
		}
	})
}
