package config

import (
	"strings"
	"testing"
	"time"
)

func TestBreakerFlags(t *testing.T) {
	cfg, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinRolloutInterval != 0 || cfg.FlapThreshold != 10 || cfg.FlapWindow != time.Minute || cfg.FlapQuietPeriod != 10*time.Second {
		t.Errorf("defaults: interval %v, threshold %d, window %v, quiet %v; want 0, 10, 1m, 10s",
			cfg.MinRolloutInterval, cfg.FlapThreshold, cfg.FlapWindow, cfg.FlapQuietPeriod)
	}
	cfg, err = parse(t, nil, "--min-rollout-interval=5m", "--flap-threshold=0", "--flap-window=0", "--flap-quiet-period=0")
	if err != nil || cfg.MinRolloutInterval != 5*time.Minute || cfg.FlapThreshold != 0 {
		t.Errorf("breaker off: %+v, %v", cfg.ReloadFlags, err)
	}
	for args, flag := range map[string]string{
		"--min-rollout-interval=-1s": "--min-rollout-interval:",
		"--flap-threshold=-1":        "--flap-threshold:",
		"--flap-threshold=101":       "--flap-threshold:",
		"--flap-window=0":            "--flap-window:",
		"--flap-quiet-period=0s":     "--flap-quiet-period:",
	} {
		if _, err := parse(t, nil, args); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: got %v, want an error naming the flag", args, err)
		}
	}
}
