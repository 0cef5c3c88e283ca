package tracing

import (
	"strings"
	"testing"
)

func TestParent(t *testing.T) {
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	good := []struct {
		value   string
		sampled bool
	}{
		{"00-" + tid + "-" + sid + "-01", true},
		{"00-" + tid + "-" + sid + "-00", false},
		{"01-" + tid + "-" + sid + "-01-more", true}, // a later version's extra field
	}
	for _, c := range good {
		sc, err := Parent(c.value)
		if err != nil {
			t.Errorf("Parent(%q): %v", c.value, err)
			continue
		}
		if sc.TraceID().String() != tid || sc.SpanID().String() != sid || !sc.IsRemote() || sc.IsSampled() != c.sampled {
			t.Errorf("Parent(%q) = %v %v remote %v sampled %v", c.value, sc.TraceID(), sc.SpanID(), sc.IsRemote(), sc.IsSampled())
		}
	}
	bad := []string{
		"",
		"garbage",
		"00-" + tid + "-" + sid,               // no flags
		"00-" + tid + "-" + sid + "-01-extra", // version 00 has four fields
		"ff-" + tid + "-" + sid + "-01",       // version ff
		"00-" + strings.ToUpper(tid) + "-" + sid + "-01", // upper case
		"00-00000000000000000000000000000000-" + sid + "-01",
		"00-" + tid + "-0000000000000000-01",
		"00-" + tid + "x" + sid + "-01",
		"00-" + tid + "-" + sid + "-0g",
		"01-" + tid + "-" + sid + "-01" + strings.Repeat("x", 300),
	}
	for _, v := range bad {
		if sc, err := Parent(v); err == nil {
			t.Errorf("Parent(%q) = %v, want an error", v, sc)
		}
	}
}

func TestRebuild(t *testing.T) {
	sc, ok := Rebuild("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
	if !ok || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsRemote() || !sc.IsSampled() {
		t.Fatalf("Rebuild = %v, %v", sc, ok)
	}
	for _, ids := range [][2]string{{"", ""}, {"4bf92f3577b34da6a3ce929d0e0e4736", ""}, {"00000000000000000000000000000000", "00f067aa0ba902b7"}, {"4BF92F3577B34DA6A3CE929D0E0E4736", "00f067aa0ba902b7"}, {"4bf9", "00f0"}} {
		if sc, ok := Rebuild(ids[0], ids[1]); ok {
			t.Errorf("Rebuild(%q, %q) = %v, want false", ids[0], ids[1], sc)
		}
	}
}

func TestOn(t *testing.T) {
	cases := []struct {
		env     map[string]string
		on, bad bool
	}{
		{map[string]string{}, false, false},
		{map[string]string{EnvEndpoint: "http://collector:4318"}, true, false},
		{map[string]string{EnvTracesEndpoint: "http://collector:4318/v1/traces"}, true, false},
		{map[string]string{EnvExporter: "otlp"}, true, false},
		{map[string]string{EnvEndpoint: "http://collector:4318", EnvExporter: "none"}, false, false},
		{map[string]string{EnvEndpoint: "http://collector:4318", EnvSDKDisabled: "true"}, false, false},
		{map[string]string{EnvEndpoint: "http://collector:4318", EnvExporter: "zipkin"}, false, true},
	}
	for _, c := range cases {
		on, err := On(func(k string) string { return c.env[k] })
		if on != c.on || (err != nil) != c.bad {
			t.Errorf("On(%v) = %v, %v; want %v, error %v", c.env, on, err, c.on, c.bad)
		}
	}
}
