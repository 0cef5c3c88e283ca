package window

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParse(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "always"},
		{"  Always ", "always"},
		{"02:00-04:00", "02:00-04:00 UTC"},
		{"Mon-Fri 02:00-04:00 Europe/Berlin", "Mon-Fri 02:00-04:00 Europe/Berlin"},
		{"sat,SUN 00:00-24:00", "Sat,Sun 00:00-24:00 UTC"},
		{"Monday,Wed-Fri 22:00-02:00 America/New_York", "Mon,Wed-Fri 22:00-02:00 America/New_York"},
		{"Fri-Mon 10:00-11:00", "Mon,Fri-Sun 10:00-11:00 UTC"},
		{"Mon-Sun 10:00-11:00", "10:00-11:00 UTC"},
		{"Mon 01:00-02:00 UTC;Tue 03:00-04:00  Asia/Tokyo", "Mon 01:00-02:00 UTC; Tue 03:00-04:00 Asia/Tokyo"},
		// A day list as people write lists: spaces around the commas.
		{"Sat, Sun 00:00-24:00", "Sat,Sun 00:00-24:00 UTC"},
		{"Sat ,Sun 00:00-24:00", "Sat,Sun 00:00-24:00 UTC"},
		{"mon , wed,\tFriday 01:00-02:00 Europe/Berlin", "Mon,Wed,Fri 01:00-02:00 Europe/Berlin"},
		{"Mon-Wed, Fri 01:00-02:00; Sat, Sun 03:00-04:00", "Mon-Wed,Fri 01:00-02:00 UTC; Sat,Sun 03:00-04:00 UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := s.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			again, err := Parse(s.String())
			if err != nil || again.String() != tt.want {
				t.Errorf("canonical form does not parse back: %v %q", err, again.String())
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in             string
		offset, window int
		msg            string
	}{
		{"Mon-Fry 02:00-04:00", 4, 1, `expected a day such as Fri after "Mon-", found "Fry"`},
		{"Mon-Fri 2:00-04:00", 8, 1, `expected a time HH:MM such as 02:00, found "2:00"`},
		{"Mon-Fri 02:00-04:60", 14, 1, `found "04:60"`},
		{"Mon-Fri 02:00", 8, 1, "expected a time range"},
		{"Mon-Fri", 7, 1, "expected a time range such as 02:00-04:00 after the days"},
		{"02:00-04:00 Europe/Berlni", 12, 1, `unknown time zone "Europe/Berlni"`},
		{"02:00-04:00 Local", 12, 1, `"Local" is not a time zone`},
		{"Mon 02:00-04:00 UTC; Tue 05:00-06:00 UTC extra", 41, 2, `unexpected "extra"`},
		{"Mon 02:00-04:00;", 16, 2, "empty window"},
		{"02:00-02:00", 0, 1, "opens and closes at the same time"},
		{"24:00-02:00", 0, 1, `found "24:00"`},
		{"Xyz 02:00-03:00", 0, 1, `expected a day such as Mon or a time such as 02:00, found "Xyz"`},
		{"Mon,Tue,Wdn 02:00-03:00", 8, 1, `found "Wdn"`},
		{"Mon, Tue, Wdn 02:00-03:00", 10, 1, `found "Wdn"`},
		{"Sat, Sun-Mno 02:00-03:00", 9, 1, `expected a day such as Fri after "Sun-", found "Mno"`},
		{"Mon 01:00-02:00; Sat, 02:00-03:00", 21, 2, `expected a day after ","`},
		{"Sat,,Sun 02:00-03:00", 4, 1, `expected a day after ","`},
		{"Sat, Sun", 8, 1, "expected a time range such as 02:00-04:00 after the days"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %v, want an *Error", tt.in, err)
			}
			if pe.Offset != tt.offset || pe.Window != tt.window || !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("Parse(%q) = %+v, want offset %d window %d and %q", tt.in, *pe, tt.offset, tt.window, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "at character ") {
				t.Errorf("Error() = %q does not say where", err)
			}
		})
	}
}

func TestOpenNextEnd(t *testing.T) {
	type check struct {
		at        string
		open      bool
		next, end string // RFC3339; "" for the zero time
	}
	tests := []struct {
		name   string
		window string
		checks []check
	}{{
		name:   "always",
		window: "always",
		checks: []check{{at: "2026-11-25T14:00:00Z", open: true, next: "2026-11-25T14:00:00Z"}},
	}, {
		name:   "weekdays in Berlin (CET, UTC+1)",
		window: "Mon-Fri 02:00-04:00 Europe/Berlin",
		checks: []check{
			// Wednesday 2026-11-25, 14:00 UTC = 15:00 CET: next is Thursday 02:00 CET.
			{at: "2026-11-25T14:00:00Z", next: "2026-11-26T01:00:00Z"},
			// at the opening edge: open; at the closing edge: closed.
			{at: "2026-11-26T01:00:00Z", open: true, next: "2026-11-26T01:00:00Z", end: "2026-11-26T03:00:00Z"},
			{at: "2026-11-26T02:59:59Z", open: true, next: "2026-11-26T02:59:59Z", end: "2026-11-26T03:00:00Z"},
			{at: "2026-11-26T03:00:00Z", next: "2026-11-27T01:00:00Z"},
			// Friday after the window: Monday.
			{at: "2026-11-27T10:00:00Z", next: "2026-11-30T01:00:00Z"},
		},
	}, {
		name:   "across midnight belongs to the day it starts",
		window: "Fri 22:00-02:00 UTC",
		checks: []check{
			{at: "2026-11-27T21:59:00Z", next: "2026-11-27T22:00:00Z"},
			{at: "2026-11-28T01:30:00Z", open: true, next: "2026-11-28T01:30:00Z", end: "2026-11-28T02:00:00Z"}, // Saturday morning
			{at: "2026-11-28T02:00:00Z", next: "2026-12-04T22:00:00Z"},
			// Thursday night is not Friday's window.
			{at: "2026-11-27T01:00:00Z", next: "2026-11-27T22:00:00Z"},
		},
	}, {
		name:   "several windows; touching openings are one",
		window: "Mon 10:00-12:00 UTC; Mon 12:00-13:00 UTC; Tue 08:00-09:00 Asia/Tokyo",
		checks: []check{
			{at: "2026-11-30T11:00:00Z", open: true, next: "2026-11-30T11:00:00Z", end: "2026-11-30T13:00:00Z"},
			// Monday 14:00 UTC: Tuesday 08:00 in Tokyo is Monday 23:00 UTC.
			{at: "2026-11-30T14:00:00Z", next: "2026-11-30T23:00:00Z"},
			{at: "2026-11-30T23:30:00Z", open: true, next: "2026-11-30T23:30:00Z", end: "2026-12-01T00:00:00Z"},
		},
	}, {
		name:   "spring forward: the skipped hour opens when the clocks jump",
		window: "02:30-04:00 Europe/Berlin",
		checks: []check{
			// 2026-03-29: 02:00 CET -> 03:00 CEST at 01:00 UTC. 02:30 does not exist.
			{at: "2026-03-29T00:00:00Z", next: "2026-03-29T01:00:00Z"},
			{at: "2026-03-29T01:00:00Z", open: true, next: "2026-03-29T01:00:00Z", end: "2026-03-29T02:00:00Z"},
			// the day before and after, at the usual times
			{at: "2026-03-28T00:00:00Z", next: "2026-03-28T01:30:00Z"},
			{at: "2026-03-29T02:00:00Z", next: "2026-03-30T00:30:00Z"},
		},
	}, {
		name:   "spring forward: a window inside the skipped hour is skipped that day",
		window: "02:10-02:50 Europe/Berlin",
		checks: []check{
			{at: "2026-03-28T23:00:00Z", next: "2026-03-30T00:10:00Z"},
			{at: "2026-03-29T01:00:00Z", next: "2026-03-30T00:10:00Z"},
		},
	}, {
		name:   "fall back: a repeated time is its first occurrence",
		window: "02:30-03:30 Europe/Berlin",
		checks: []check{
			// 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00 UTC; 02:30 happens at 00:30 and 01:30 UTC.
			{at: "2026-10-25T00:00:00Z", next: "2026-10-25T00:30:00Z"},
			{at: "2026-10-25T00:30:00Z", open: true, next: "2026-10-25T00:30:00Z", end: "2026-10-25T02:30:00Z"},
			{at: "2026-10-25T01:45:00Z", open: true, next: "2026-10-25T01:45:00Z", end: "2026-10-25T02:30:00Z"},
			{at: "2026-10-25T02:30:00Z", next: "2026-10-26T01:30:00Z"},
		},
	}, {
		name:   "US DST across midnight",
		window: "Sat 23:00-03:00 America/New_York",
		checks: []check{
			// 2026-03-08 02:00 EST -> 03:00 EDT (07:00 UTC): Saturday 23:00 EST to Sunday 03:00 EDT.
			{at: "2026-03-08T04:00:00Z", open: true, next: "2026-03-08T04:00:00Z", end: "2026-03-08T07:00:00Z"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.window)
			if err != nil {
				t.Fatal(err)
			}
			zero := func(v string) time.Time {
				if v == "" {
					return time.Time{}
				}
				return at(t, v)
			}
			for _, c := range tt.checks {
				now := at(t, c.at)
				if got := s.Open(now); got != c.open {
					t.Errorf("Open(%s) = %v, want %v", c.at, got, c.open)
				}
				if got := s.Next(now); !got.Equal(zero(c.next)) {
					t.Errorf("Next(%s) = %s, want %s", c.at, got.UTC().Format(time.RFC3339), c.next)
				}
				if got := s.End(now); !got.Equal(zero(c.end)) {
					t.Errorf("End(%s) = %s, want %s", c.at, got.UTC().Format(time.RFC3339), c.end)
				}
			}
		})
	}
}
