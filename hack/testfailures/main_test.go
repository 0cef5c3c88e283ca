package main

import (
	"strings"
	"testing"
)

// A failed test is named with its own messages and without the log it
// printed after them; a package that failed with no failed test shows its
// last lines; a passing run names nothing.
func TestReport(t *testing.T) {
	const run = `{"Action":"run","Package":"p/e2e","Test":"TestA"}
{"Action":"output","Package":"p/e2e","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p/e2e","Test":"TestA","Output":"    canary_test.go:88: the Deployment rolled 2 times, want 1\n"}
{"Action":"output","Package":"p/e2e","Test":"TestA","Output":"    ripple.go:59: Ripple's output (1 runs):\n"}
{"Action":"output","Package":"p/e2e","Test":"TestA","Output":"        2026-12-03T07:28:49.951Z\tINFO\tAll workers finished\n"}
{"Action":"fail","Package":"p/e2e","Test":"TestA"}
{"Action":"output","Package":"p/e2e","Test":"TestB","Output":"    wait_test.go:9: fine\n"}
{"Action":"pass","Package":"p/e2e","Test":"TestB"}
{"Action":"fail","Package":"p/e2e"}
{"Action":"output","Package":"p/unit","Output":"panic: test timed out after 10m0s\n"}
{"Action":"fail","Package":"p/unit"}
{"Action":"pass","Package":"p/ok"}
`
	var out strings.Builder
	if err := report(&out, strings.NewReader(run)); err != nil {
		t.Fatal(err)
	}
	want := "--- FAIL: TestA (p/e2e)\n" +
		"    canary_test.go:88: the Deployment rolled 2 times, want 1\n" +
		"    ripple.go:59: Ripple's output (1 runs):\n" +
		"--- FAIL: package p/unit\n" +
		"panic: test timed out after 10m0s\n"
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if err := report(&out, strings.NewReader(`{"Action":"pass","Package":"p/ok"}`)); err != nil || out.Len() != 0 {
		t.Errorf("a passing run: %q, %v; want nothing", out.String(), err)
	}
	if err := report(&out, strings.NewReader("ok  p/ok 1.2s")); err == nil || !strings.Contains(err.Error(), "go test -json") {
		t.Errorf("not JSON: %v, want an error naming go test -json", err)
	}
}
