package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
)

// point is one value of a series, labelled with its scenario.
type point struct {
	x, y  float64
	label string
}

// series is a set of points drawn with one colour and marker. Points are
// not joined: neighbouring points are often different scenarios.
type series struct {
	name   string
	color  string
	marker string // circle, square, triangle, cross
	points []point
}

// panel is one chart: logarithmic x, and logarithmic or linear y.
type panel struct {
	title, xLabel, yLabel string
	logY                  bool
	yFormat               func(float64) string
	series                []series
}

// Chart geometry.
const (
	panelW, panelH = 560, 480
	padL, padR     = 70, 40
	padT, padB     = 40, 170
)

// writeChart draws the latency and memory panels side by side. It is drawn
// by hand rather than with a plotting library so that the benchmark adds
// no dependency.
func writeChart(w io.Writer, run Run) {
	latency := panel{title: "Reaction latency vs workloads", xLabel: "workloads in the scenario (log)", yLabel: "reaction latency (log)", logY: true, yFormat: axisDuration}
	memory := panel{title: "Controller memory vs objects cached", xLabel: "workloads + ConfigMaps + Secrets (log)", yLabel: "MiB", yFormat: func(v float64) string { return fmt.Sprintf("%.0f", v) }}

	p50 := series{name: "p50", color: "#1b9e77", marker: "circle"}
	p95 := series{name: "p95", color: "#7570b3", marker: "square"}
	p99 := series{name: "p99", color: "#d95f02", marker: "triangle"}
	pmax := series{name: "max", color: "#e7298a", marker: "cross"}
	rssPeak := series{name: "RSS peak", color: "#d95f02", marker: "triangle"}
	rssSteady := series{name: "RSS steady", color: "#7570b3", marker: "square"}
	heap := series{name: "Go live heap, steady", color: "#1b9e77", marker: "circle"}
	for _, r := range run.Results {
		label := r.Name
		if r.Latency.Count > 0 {
			x := float64(max(r.Scale.Workloads, 1))
			p50.points = append(p50.points, point{x, r.Latency.P50, label})
			p95.points = append(p95.points, point{x, r.Latency.P95, label})
			p99.points = append(p99.points, point{x, r.Latency.P99, label})
			pmax.points = append(pmax.points, point{x, r.Latency.Max, label})
		}
		if r.Memory.RSSPeak > 0 {
			x := float64(max(r.Scale.Objects(), 1))
			rssPeak.points = append(rssPeak.points, point{x, r.Memory.RSSPeak / (1 << 20), label})
			rssSteady.points = append(rssSteady.points, point{x, r.Memory.RSSSteady / (1 << 20), label})
			heap.points = append(heap.points, point{x, r.Memory.LiveSteady / (1 << 20), label})
		}
	}
	latency.series = []series{p50, p95, p99, pmax}
	memory.series = []series{rssPeak, rssSteady, heap}

	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		2*panelW, panelH+30, 2*panelW, panelH+30)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="10" y="18" font-size="13" font-weight="bold">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("Ripple benchmark (%s set, %s)", run.Set, run.Started)))
	latency.draw(w, 0, 30)
	memory.draw(w, panelW, 30)
	fmt.Fprintln(w, "</svg>")
}

// bounds returns the range of a panel's values, widened to whole decades
// on log axes so that tick marks fall on round numbers.
func (p panel) bounds() (x0, x1, y0, y1 float64) {
	x0, y0 = math.Inf(1), math.Inf(1)
	x1, y1 = math.Inf(-1), math.Inf(-1)
	for _, s := range p.series {
		for _, pt := range s.points {
			x0, x1 = math.Min(x0, pt.x), math.Max(x1, pt.x)
			if !p.logY || pt.y > 0 {
				y0, y1 = math.Min(y0, pt.y), math.Max(y1, pt.y)
			}
		}
	}
	if math.IsInf(x0, 1) {
		return 1, 10, 1, 10
	}
	x0, x1 = math.Pow(10, math.Floor(math.Log10(x0))), math.Pow(10, math.Ceil(math.Log10(x1)))
	if x0 == x1 {
		x1 *= 10
	}
	if p.logY {
		y0, y1 = math.Pow(10, math.Floor(math.Log10(math.Max(y0, 0.01)))), math.Pow(10, math.Ceil(math.Log10(math.Max(y1, 0.01))))
		if y0 == y1 {
			y1 *= 10
		}
	} else {
		y0, y1 = 0, niceCeil(y1*1.1)
	}
	return x0, x1, y0, y1
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func (p panel) draw(w io.Writer, ox, oy float64) {
	x0, x1, y0, y1 := p.bounds()
	plotW, plotH := float64(panelW-padL-padR), float64(panelH-padT-padB)
	px := func(x float64) float64 {
		return ox + padL + (math.Log10(x)-math.Log10(x0))/(math.Log10(x1)-math.Log10(x0))*plotW
	}
	py := func(y float64) float64 {
		var f float64
		if p.logY {
			f = (math.Log10(math.Max(y, y0)) - math.Log10(y0)) / (math.Log10(y1) - math.Log10(y0))
		} else {
			f = (y - y0) / (y1 - y0)
		}
		return oy + padT + plotH - f*plotH
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" font-size="12" font-weight="bold">%s</text>`+"\n", ox+padL, oy+padT-18, html.EscapeString(p.title))
	fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", ox+padL, oy+padT, plotW, plotH)
	// x ticks at each decade
	for x := x0; x <= x1*1.0001; x *= 10 {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", px(x), oy+padT, px(x), oy+padT+plotH)
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), oy+padT+plotH+14, compact(x))
	}
	// y ticks: decades on log axes, five steps on linear ones
	var ticks []float64
	if p.logY {
		for y := y0; y <= y1*1.0001; y *= 10 {
			ticks = append(ticks, y)
		}
	} else {
		for i := range 6 {
			ticks = append(ticks, y0+(y1-y0)*float64(i)/5)
		}
	}
	for _, y := range ticks {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", ox+padL, py(y), ox+padL+plotW, py(y))
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", ox+padL-4, py(y)+4, html.EscapeString(p.yFormat(y)))
	}
	fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", ox+padL+plotW/2, oy+padT+plotH+30, html.EscapeString(p.xLabel))
	fmt.Fprintf(w, `<text transform="translate(%.1f,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", ox+16, oy+padT+plotH/2, html.EscapeString(p.yLabel))

	// Scenario labels under the axis, so every marker can be traced to its
	// scenario; labels of nearby points are pushed apart rather than drawn
	// over each other.
	type label struct {
		x    float64
		name string
	}
	var labels []label
	for _, s := range p.series {
		for _, pt := range s.points {
			l := label{px(pt.x), pt.label}
			if !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
	}
	slices.SortFunc(labels, func(a, b label) int { return cmpFloat(a.x, b.x) })
	next := math.Inf(-1)
	for _, l := range labels {
		x := math.Max(l.x-2, next)
		next = x + 10
		fmt.Fprintf(w, `<text transform="translate(%.1f,%.1f) rotate(60)" font-size="9" fill="#555">%s</text>`+"\n",
			x, oy+padT+plotH+40, html.EscapeString(l.name))
	}

	for i, s := range p.series {
		pts := slices.Clone(s.points)
		slices.SortFunc(pts, func(a, b point) int { return cmpFloat(a.x, b.x) })
		for _, pt := range pts {
			fmt.Fprint(w, marker(s.marker, px(pt.x), py(pt.y), s.color, fmt.Sprintf("%s %s: %s", pt.label, s.name, p.yFormat(pt.y))))
		}
		// legend
		lx, ly := ox+padL+8, oy+padT+14+float64(i)*14
		fmt.Fprint(w, marker(s.marker, lx, ly-4, s.color, s.name))
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+8, ly, html.EscapeString(s.name))
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// marker draws one marker with a tooltip.
func marker(kind string, x, y float64, color, title string) string {
	t := "<title>" + html.EscapeString(title) + "</title>"
	switch kind {
	case "square":
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="7" height="7" fill="%s">%s</rect>`+"\n", x-3.5, y-3.5, color, t)
	case "triangle":
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s">%s</polygon>`+"\n", x, y-4.5, x-4, y+3.5, x+4, y+3.5, color, t)
	case "cross":
		return fmt.Sprintf(`<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="2">%s</path>`+"\n",
			x-4, y-4, x+4, y+4, x-4, y+4, x+4, y-4, color, t)
	default:
		return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s">%s</circle>`+"\n", x, y, color, t)
	}
}

// axisDuration formats a round number of milliseconds: 1 ms, 100 ms, 10 s.
func axisDuration(msec float64) string {
	if msec >= 1000 {
		return fmt.Sprintf("%g s", msec/1000)
	}
	return fmt.Sprintf("%g ms", msec)
}

// compact formats an axis value: 1, 10, 1k, 10k.
func compact(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
