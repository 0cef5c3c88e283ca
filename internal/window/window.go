// Package window parses and evaluates reload windows: when a reload may
// roll a workload, written as a person reads it, e.g.
//
//	Mon-Fri 02:00-04:00 Europe/Berlin; Sat,Sun 00:00-24:00 Europe/Berlin
//
// A schedule is one or more windows separated by ";". A window is an
// optional list of days (names of three letters or in full, single or as
// ranges such as Mon-Fri or Fri-Mon, separated by "," with or without
// spaces around it; none means every day), a start and an end time HH:MM (24:00 is the end of the day), and an
// optional IANA time zone (UTC when left out; the zone database is
// embedded in the binary). A window whose end is not after its start runs
// across midnight and belongs to the day it starts: "Fri 22:00-02:00"
// opens Friday at 22:00 and closes Saturday at 02:00. An empty schedule,
// or "always", has no window: it is always open.
//
// Times are wall-clock times in the window's zone. Across a DST change a
// time that does not exist (it falls in the hour skipped at spring-forward)
// stands for the instant the clocks jump to, and a time that happens twice
// (fall-back) for its first occurrence. So "02:00-04:00 Europe/Berlin" is
// open 03:00-04:00 on the day the clocks go forward (one hour) and from the
// first 02:00 to 04:00 on the day they go back (three hours): a window is
// never skipped and never opens twice in one day.
//
// Everything here is a pure function of its arguments.
package window

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // the IANA zones, whatever the image carries
)

// Schedule is a parsed reload window: the zero value (and "always") is
// always open.
type Schedule struct {
	windows []window
}

// window is one window of a schedule.
type window struct {
	// days[d] is set when the window opens on weekday d.
	days [7]bool
	// start and end are minutes since midnight; end may be 1440 (24:00),
	// and an end not after start closes the next day.
	start, end int
	loc        *time.Location
}

// Always reports whether the schedule has no window: it is always open.
func (s Schedule) Always() bool { return len(s.windows) == 0 }

// Error is a parse error: where in the text it is and what was expected.
type Error struct {
	// Offset is the byte offset in the text, from 0.
	Offset int
	// Window is which window of the schedule, from 1.
	Window int
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("at character %d (window %d): %s", e.Offset+1, e.Window, e.Msg)
}

// Parse reads a schedule. Errors are *Error, naming the position.
func Parse(text string) (Schedule, error) {
	if t := strings.TrimSpace(text); t == "" || strings.EqualFold(t, "always") {
		return Schedule{}, nil
	}
	var s Schedule
	offset := 0
	for i, part := range strings.Split(text, ";") {
		w, err := parseWindow(part, offset, i+1)
		if err != nil {
			return Schedule{}, err
		}
		s.windows = append(s.windows, w)
		offset += len(part) + 1
	}
	return s, nil
}

// token is a word of a window and its offset in the whole text.
type token struct {
	text   string
	offset int
}

func fields(s string, base int) []token {
	var out []token
	start := -1
	for i, r := range s + " " {
		space := r == ' ' || r == '\t' || r == '\n'
		switch {
		case space && start >= 0:
			out = append(out, token{s[start:i], base + start})
			start = -1
		case !space && start < 0:
			start = i
		}
	}
	return out
}

func parseWindow(part string, base, n int) (window, error) {
	fail := func(offset int, format string, args ...any) (window, error) {
		return window{}, &Error{Offset: offset, Window: n, Msg: fmt.Sprintf(format, args...)}
	}
	toks := fields(part, base)
	if len(toks) == 0 {
		return fail(base, `empty window: expected e.g. "Mon-Fri 02:00-04:00 Europe/Berlin"`)
	}
	w := window{loc: time.UTC}
	if !isDigit(toks[0].text[0]) {
		list, rest := dayList(part, base, toks)
		days, err := parseDays(list, n)
		if err != nil {
			return window{}, err
		}
		w.days, toks = days, rest
	} else {
		w.days = [7]bool{true, true, true, true, true, true, true}
	}
	if len(toks) == 0 {
		return fail(base+len(part), `expected a time range such as 02:00-04:00 after the days`)
	}
	var err error
	if w.start, w.end, err = parseRange(toks[0], n); err != nil {
		return window{}, err
	}
	if len(toks) > 1 {
		z := toks[1]
		if z.text == "Local" {
			return fail(z.offset, `"Local" is not a time zone here: name one, such as UTC or Europe/Berlin`)
		}
		if w.loc, err = time.LoadLocation(z.text); err != nil {
			return fail(z.offset, "unknown time zone %q: expected an IANA name such as UTC or Europe/Berlin", z.text)
		}
	}
	if len(toks) > 2 {
		return fail(toks[2].offset, `unexpected %q: a window is [days] HH:MM-HH:MM [zone]; separate windows with ";"`, toks[2].text)
	}
	return w, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

var fullDayNames = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

func parseDay(s string) (int, bool) {
	l := strings.ToLower(s)
	for d := range dayNames {
		if l == dayNames[d] || l == fullDayNames[d] {
			return d, true
		}
	}
	return 0, false
}

// dayList returns the day list that starts the window part (whose text
// starts at base) and the tokens after it. A list may be written with
// spaces around its commas ("Sat, Sun"), as people write lists: the words
// joined by a comma are one list, kept as written so that errors point
// into it.
func dayList(part string, base int, toks []token) (token, []token) {
	last := 0
	for last+1 < len(toks) && (strings.HasPrefix(toks[last+1].text, ",") ||
		strings.HasSuffix(toks[last].text, ",") && !isDigit(toks[last+1].text[0])) {
		last++
	}
	end := toks[last].offset + len(toks[last].text) - base
	return token{part[toks[0].offset-base : end], toks[0].offset}, toks[last+1:]
}

// parseDays reads a day list such as Mon-Fri or Sat,Sun or Mon,Wed-Fri;
// spaces around a comma are allowed.
func parseDays(t token, n int) ([7]bool, error) {
	var days [7]bool
	offset := t.offset
	for _, written := range strings.Split(t.text, ",") {
		item := strings.TrimLeft(written, " \t\n")
		itemOffset := offset + len(written) - len(item)
		offset += len(written) + 1
		item = strings.TrimRight(item, " \t\n")
		if item == "" {
			return days, &Error{Offset: itemOffset, Window: n, Msg: `expected a day after ","`}
		}
		from, to, isRange := strings.Cut(item, "-")
		a, ok := parseDay(from)
		if !ok {
			return days, &Error{Offset: itemOffset, Window: n, Msg: fmt.Sprintf("expected a day such as Mon or a time such as 02:00, found %q", from)}
		}
		b := a
		if isRange {
			if b, ok = parseDay(to); !ok {
				return days, &Error{Offset: itemOffset + len(from) + 1, Window: n, Msg: fmt.Sprintf("expected a day such as Fri after %q, found %q", from+"-", to)}
			}
		}
		for d := a; ; d = (d + 1) % 7 { // Fri-Mon wraps over the weekend
			days[d] = true
			if d == b {
				break
			}
		}
	}
	return days, nil
}

// parseRange reads HH:MM-HH:MM.
func parseRange(t token, n int) (start, end int, err error) {
	from, to, ok := strings.Cut(t.text, "-")
	if !ok {
		return 0, 0, &Error{Offset: t.offset, Window: n, Msg: fmt.Sprintf("expected a time range such as 02:00-04:00, found %q", t.text)}
	}
	if start, err = parseClock(from, t.offset, n, false); err != nil {
		return 0, 0, err
	}
	if end, err = parseClock(to, t.offset+len(from)+1, n, true); err != nil {
		return 0, 0, err
	}
	if start == end%(24*60) && end != 24*60 {
		return 0, 0, &Error{Offset: t.offset, Window: n, Msg: fmt.Sprintf("%q opens and closes at the same time: use 00:00-24:00 for a whole day", t.text)}
	}
	return start, end, nil
}

// parseClock reads HH:MM as minutes since midnight; 24:00 only as an end.
func parseClock(s string, offset, n int, isEnd bool) (int, error) {
	bad := &Error{Offset: offset, Window: n, Msg: fmt.Sprintf("expected a time HH:MM such as 02:00, found %q", s)}
	if len(s) != 5 || s[2] != ':' {
		return 0, bad
	}
	var h, m int
	for i, c := range s {
		switch {
		case i == 2:
		case c < '0' || c > '9':
			return 0, bad
		case i < 2:
			h = h*10 + int(c-'0')
		default:
			m = m*10 + int(c-'0')
		}
	}
	if m > 59 || h > 24 || (h == 24 && (m != 0 || !isEnd)) {
		return 0, bad
	}
	return h*60 + m, nil
}

// String is the schedule in its canonical form; "always" when it has no
// window.
func (s Schedule) String() string {
	if s.Always() {
		return "always"
	}
	parts := make([]string, len(s.windows))
	for i, w := range s.windows {
		parts[i] = w.String()
	}
	return strings.Join(parts, "; ")
}

func (w window) String() string {
	clock := func(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }
	s := clock(w.start) + "-" + clock(w.end) + " " + w.loc.String()
	if d := formatDays(w.days); d != "" {
		s = d + " " + s
	}
	return s
}

// formatDays writes the days as ranges from Monday; "" for every day.
func formatDays(days [7]bool) string {
	var parts []string
	for i := 0; i < 7; {
		d := (i + 1) % 7 // Monday first
		if !days[d] {
			i++
			continue
		}
		j := i
		for j+1 < 7 && days[(j+2)%7] {
			j++
		}
		name := func(k int) string { n := dayNames[(k+1)%7]; return strings.ToUpper(n[:1]) + n[1:] }
		switch j {
		case i:
			parts = append(parts, name(i))
		case i + 1:
			parts = append(parts, name(i), name(j))
		default:
			parts = append(parts, name(i)+"-"+name(j))
		}
		i = j + 1
	}
	if len(parts) == 1 && parts[0] == "Mon-Sun" {
		return ""
	}
	return strings.Join(parts, ",")
}
