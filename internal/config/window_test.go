package config

import (
	"strings"
	"testing"
	"time"
)

// --reload-window is validated at start: an error names the flag and the
// position; a valid value reaches the planner's settings as written.
func TestReloadWindowFlag(t *testing.T) {
	_, err := parse(t, nil, "--reload-window=Mon-Fri 02:00-04:00 Europe/Berlni")
	if err == nil || !strings.Contains(err.Error(), "--reload-window") || !strings.Contains(err.Error(), "at character 21 (window 1): unknown time zone") {
		t.Errorf("invalid --reload-window: error %v, want one naming the flag and the position", err)
	}
	cfg, err := parse(t, nil, "--reload-window=Sat,Sun 00:00-24:00 UTC")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.PlanSettings(time.Time{}).ReloadWindow; got != "Sat,Sun 00:00-24:00 UTC" {
		t.Errorf("settings window %q", got)
	}
}
