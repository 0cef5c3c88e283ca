package config

import (
	"strings"
	"testing"
)

func TestShardFlags(t *testing.T) {
	tests := map[string]struct {
		args  []string
		shard Shard
		err   string
	}{
		"off by default":      {shard: Shard{Count: 1}},
		"third of three":      {args: []string{"--shard-count=3", "--shard-index=2"}, shard: Shard{Count: 3, Index: 2}},
		"index past the end":  {args: []string{"--shard-count=3", "--shard-index=3"}, err: "--shard-index: 3: must be from 0 to --shard-count - 1 (2)"},
		"negative index":      {args: []string{"--shard-count=2", "--shard-index=-1"}, err: "--shard-index: -1"},
		"index without count": {args: []string{"--shard-index=1"}, err: "--shard-index: 1"},
		"no shards":           {args: []string{"--shard-count=0"}, err: "--shard-count: 0: must be at least 1"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := parse(t, nil, tt.args...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil || cfg.Shard != tt.shard || cfg.Shard.Sharded() != (tt.shard.Count > 1) {
				t.Fatalf("got %+v, %v; want %+v", cfg.Shard, err, tt.shard)
			}
		})
	}
}

// Each shard holds a Lease of its own, named after the leader election
// id, given or default.
func TestShardLeaseName(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"unsharded":  {args: []string{"--leader-elect"}, want: "stakater-reloader-lock"},
		"sharded":    {args: []string{"--leader-elect", "--shard-count=3", "--shard-index=1"}, want: "stakater-reloader-lock-shard-1-of-3"},
		"given name": {args: []string{"--leader-elect", "--leader-election-id=mine", "--shard-count=2"}, want: "mine-shard-0-of-2"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := parse(t, nil, tt.args...)
			if err != nil || cfg.LeaderElectionID != tt.want {
				t.Fatalf("got %q, %v; want %q", cfg.LeaderElectionID, err, tt.want)
			}
		})
	}
}
