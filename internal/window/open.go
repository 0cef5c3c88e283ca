package window

import "time"

// span is one opening of a window: [open, close).
type span struct{ open, close time.Time }

// on is the opening of w that starts on the local date of day (any time
// on that date); ok is false when w does not open that day, or when DST
// leaves nothing of it (a window inside the skipped hour).
func (w window) on(day time.Time) (span, bool) {
	y, m, d := day.Date()
	if !w.days[time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()] {
		return span{}, false
	}
	end := w.end
	if end <= w.start {
		end += 24 * 60 // across midnight: closes the next day
	}
	s := span{wall(y, m, d, w.start, w.loc).In(w.loc), wall(y, m, d, end, w.loc).In(w.loc)}
	return s, s.open.Before(s.close)
}

// wall is the instant of the wall-clock time minutes after midnight of
// the date in loc (minutes may run past 24:00 into the next days). A time
// skipped at spring-forward is the instant the clocks jump to; a time that
// happens twice at fall-back is its first occurrence.
func wall(y int, m time.Month, d, minutes int, loc *time.Location) time.Time {
	want := time.Date(y, m, d, 0, minutes, 0, 0, time.UTC) // normalized wall fields
	probe := time.Date(y, m, d, 0, minutes, 0, 0, loc)
	var best time.Time
	for _, around := range []time.Time{probe.Add(-12 * time.Hour), probe.Add(12 * time.Hour)} {
		_, off := around.Zone()
		c := want.Add(-time.Duration(off) * time.Second)
		if sameWall(c.In(loc), want) && (best.IsZero() || c.Before(best)) {
			best = c
		}
	}
	if !best.IsZero() {
		return best
	}
	// In the gap: with the offset before the jump the instant lies just
	// after it, and its zone began at the jump.
	_, off := probe.Add(-12 * time.Hour).Zone()
	start, _ := want.Add(-time.Duration(off) * time.Second).In(loc).ZoneBounds()
	return start
}

func sameWall(t, want time.Time) bool {
	y, m, d := t.Date()
	wy, wm, wd := want.Date()
	return y == wy && m == wm && d == wd && t.Hour() == want.Hour() && t.Minute() == want.Minute()
}

// around returns the openings of every window that start from the day
// before t (local to each window) for days days.
func (s Schedule) around(t time.Time, days int, each func(span) bool) {
	for _, w := range s.windows {
		local := t.In(w.loc)
		y, m, d := local.Date()
		for i := -1; i < days; i++ {
			if sp, ok := w.on(time.Date(y, m, d+i, 12, 0, 0, 0, time.UTC)); ok && !each(sp) {
				return
			}
		}
	}
}

// Open reports whether a reload may roll at t.
func (s Schedule) Open(t time.Time) bool {
	if s.Always() {
		return true
	}
	open := false
	s.around(t, 1, func(sp span) bool {
		open = !t.Before(sp.open) && t.Before(sp.close)
		return !open
	})
	return open
}

// horizon is how many days Next looks ahead: two weeks, so that a weekly
// window one DST change leaves nothing of still opens the week after.
const horizon = 15

// Next returns the next opening at or after t, in the zone of the window
// that opens then: t itself when the schedule is open at t; the zero time when it never opens (it always does: every
// window opens at least once a week).
func (s Schedule) Next(t time.Time) time.Time {
	if s.Open(t) {
		return t
	}
	var next time.Time
	s.around(t, horizon, func(sp span) bool {
		if !sp.open.Before(t) && (next.IsZero() || sp.open.Before(next)) {
			next = sp.open
		}
		return true
	})
	return next
}

// End returns when the opening that t is in closes (openings that overlap
// or touch count as one); the zero time when the schedule is closed at t,
// or always open.
func (s Schedule) End(t time.Time) time.Time {
	if s.Always() || !s.Open(t) {
		return time.Time{}
	}
	end := t
	for range 2 * horizon * max(1, len(s.windows)) { // bounded: every opening ends
		last := end
		s.around(end, 1, func(sp span) bool {
			if !end.Before(sp.open) && end.Before(sp.close) {
				end = sp.close
			}
			return true
		})
		if end.Equal(last) {
			return end
		}
	}
	return end
}
