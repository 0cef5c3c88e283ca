package config

import (
	"strings"
	"testing"
	"time"
)

func TestRolloutLimits(t *testing.T) {
	cfg, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxConcurrentRollouts != DefaultMaxConcurrentRollouts || cfg.MaxConcurrentRolloutsPerNamespace != 0 || cfg.RolloutTimeout != 10*time.Minute {
		t.Errorf("defaults: %d, %d per namespace, timeout %s; want %d, 0, 10m",
			cfg.MaxConcurrentRollouts, cfg.MaxConcurrentRolloutsPerNamespace, cfg.RolloutTimeout, DefaultMaxConcurrentRollouts)
	}
	cfg, err = parse(t, nil, "--max-concurrent-rollouts=0", "--max-concurrent-rollouts-per-namespace=5", "--rollout-timeout=0")
	if err != nil || cfg.MaxConcurrentRollouts != 0 || cfg.MaxConcurrentRolloutsPerNamespace != 5 || cfg.RolloutTimeout != 0 {
		t.Errorf("set: %+v, %v", cfg.ReloadFlags, err)
	}
	for _, flag := range []string{"--max-concurrent-rollouts=-1", "--max-concurrent-rollouts-per-namespace=-1", "--rollout-timeout=-1s"} {
		name := strings.TrimPrefix(strings.Split(flag, "=")[0], "--")
		if _, err := parse(t, nil, flag); err == nil || !strings.Contains(err.Error(), "--"+name+":") {
			t.Errorf("%s: error %v, want one naming --%s", flag, err, name)
		}
	}
}
