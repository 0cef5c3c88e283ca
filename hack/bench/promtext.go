package main

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is one scrape of a /metrics endpoint.
type metrics []sample

// parseMetrics reads the Prometheus text format (version 0.0.4), which every
// Go controller built on client_golang serves. It is a small parser rather
// than prometheus/common's because the benchmark needs only names, labels
// and values, and must not add a module dependency. Lines it cannot read
// are skipped: a metric the benchmark does not use must not fail a run.
func parseMetrics(r io.Reader) (metrics, error) {
	var out metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if s, ok := parseSample(line); ok {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

func parseSample(line string) (sample, bool) {
	s := sample{labels: map[string]string{}}
	rest := ""
	if i := strings.IndexByte(line, '{'); i >= 0 {
		s.name = line[:i]
		j := i + 1
		for {
			for j < len(line) && (line[j] == ' ' || line[j] == ',') {
				j++
			}
			if j >= len(line) {
				return s, false
			}
			if line[j] == '}' {
				j++
				break
			}
			eq := strings.IndexByte(line[j:], '=')
			if eq < 0 || j+eq+1 >= len(line) || line[j+eq+1] != '"' {
				return s, false
			}
			key := strings.TrimSpace(line[j : j+eq])
			val, n, ok := unquoteLabel(line[j+eq+2:])
			if !ok {
				return s, false
			}
			s.labels[key] = val
			j += eq + 2 + n
		}
		rest = line[j:]
	} else {
		sp := strings.IndexAny(line, " \t")
		if sp < 0 {
			return s, false
		}
		s.name, rest = line[:sp], line[sp:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || s.name == "" {
		return s, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, false
	}
	s.value = v
	return s, true
}

// unquoteLabel reads a label value up to its closing quote, handling the
// format's three escapes, and returns the value and the bytes consumed
// including the closing quote.
func unquoteLabel(s string) (string, int, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, true
		case '\\':
			if i+1 >= len(s) {
				return "", 0, false
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default: // \\ and \"
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// value returns the sum of the samples of name whose labels include match,
// and whether there was any.
func (m metrics) value(name string, match map[string]string) (float64, bool) {
	sum, found := 0.0, false
	for _, s := range m {
		if s.name != name || !labelsMatch(s.labels, match) {
			continue
		}
		sum += s.value
		found = true
	}
	return sum, found
}

// by returns the sum of the samples of name grouped by the values of label.
func (m metrics) by(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.name == name {
			out[s.labels[label]] += s.value
		}
	}
	return out
}

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// counterDelta returns after - before per key, keeping only keys that grew:
// counters only grow, so a missing key in before counts as zero.
func counterDelta(before, after map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := int(v - before[k] + 0.5); d > 0 {
			out[k] = d
		}
	}
	return out
}
