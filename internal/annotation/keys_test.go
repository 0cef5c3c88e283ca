package annotation

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

func TestDefaultKeys(t *testing.T) {
	// Users have these keys in their manifests; any drift breaks them.
	reloader := Keys{
		Auto:                       "reloader.stakater.com/auto",
		ConfigMapAuto:              "configmap.reloader.stakater.com/auto",
		SecretAuto:                 "secret.reloader.stakater.com/auto",
		SecretProviderClassAuto:    "secretproviderclass.reloader.stakater.com/auto",
		ConfigMapReload:            "configmap.reloader.stakater.com/reload",
		SecretReload:               "secret.reloader.stakater.com/reload",
		SecretProviderClassReload:  "secretproviderclass.reloader.stakater.com/reload",
		Search:                     "reloader.stakater.com/search",
		Match:                      "reloader.stakater.com/match",
		Ignore:                     "reloader.stakater.com/ignore",
		ConfigMapExclude:           "configmaps.exclude.reloader.stakater.com/reload",
		SecretExclude:              "secrets.exclude.reloader.stakater.com/reload",
		SecretProviderClassExclude: "secretproviderclasses.exclude.reloader.stakater.com/reload",
		RolloutStrategy:            "reloader.stakater.com/rollout-strategy",
		PausePeriod:                "deployment.reloader.stakater.com/pause-period",
		PausedAt:                   "deployment.reloader.stakater.com/paused-at",
	}
	tests := []struct {
		name   string
		prefix string
		own    string // the prefix Ripple's own keys get
	}{
		{name: "default prefix", prefix: "ripple.dev", own: "ripple.dev"},
		{name: "custom prefix", prefix: "example.com", own: "example.com"},
		{name: "empty prefix falls back to default", prefix: "", own: "ripple.dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := reloader
			want.SettleWindow, want.Applied = tt.own+"/settle-window", tt.own+"/applied"
			want.ReloadOnKeys, want.AppliedAlias = tt.own+"/reload-on-keys", tt.own+"/applied-alias"
			want.MinRolloutInterval = tt.own + "/min-rollout-interval"
			want.CronJobReload, want.PendingJob = tt.own+"/cronjob-reload", tt.own+"/pending-job"
			want.ReloadWindow, want.ReloadPolicy, want.Approval = tt.own+"/reload-window", tt.own+"/reload-policy", tt.own+"/approval"
			want.RecreateRecord, want.Replaces = tt.own+"/recreate-job", tt.own+"/replaces-uid"
			want.Canary, want.CanaryBake, want.CanaryFirst = tt.own+"/canary", tt.own+"/canary-bake", tt.own+"/canary-first"
			want.CanaryResume, want.CanaryRecord, want.CanaryQuery = tt.own+"/canary-resume", tt.own+"/canary-record", tt.own+"/canary-query"
			want.RestartMethod, want.MaxUnavailable = tt.own+"/restart-method", tt.own+"/max-unavailable"
			want.RestartContainers, want.InPlaceFallback = tt.own+"/restart-containers", tt.own+"/in-place-fallback"
			want.ReloadAction, want.ReloadDelay = tt.own+"/reload-action", tt.own+"/reload-delay"
			want.RestartedAt = tt.own + "/restarted-at"
			want.AckRollouts, want.MaxRollouts = tt.own+"/ack-rollouts", tt.own+"/max-rollouts"
			want.RestartPods = tt.own + "/restart-pods"
			want.SharedWith = tt.own + "/shared-with"
			want.Pin, want.Pinned = tt.own+"/pin", tt.own+"/pinned"
			want.ConfigMapSelector, want.SecretSelector = tt.own+"/configmap-selector", tt.own+"/secret-selector"
			if got := DefaultKeys(tt.prefix); got != want {
				t.Errorf("DefaultKeys(%q) =\n%+v\nwant\n%+v", tt.prefix, got, want)
			}
		})
	}
}

func TestKeysForKind(t *testing.T) {
	keys := DefaultKeys("")
	tests := []struct {
		name                       string
		kind                       refs.Kind
		reload, typedAuto, exclude string
	}{
		{
			name:      "configmap",
			kind:      refs.ConfigMap,
			reload:    "configmap.reloader.stakater.com/reload",
			typedAuto: "configmap.reloader.stakater.com/auto",
			exclude:   "configmaps.exclude.reloader.stakater.com/reload",
		},
		{
			name:      "secret",
			kind:      refs.Secret,
			reload:    "secret.reloader.stakater.com/reload",
			typedAuto: "secret.reloader.stakater.com/auto",
			exclude:   "secrets.exclude.reloader.stakater.com/reload",
		},
		{
			name:      "secretproviderclass",
			kind:      refs.SecretProviderClass,
			reload:    "secretproviderclass.reloader.stakater.com/reload",
			typedAuto: "secretproviderclass.reloader.stakater.com/auto",
			exclude:   "secretproviderclasses.exclude.reloader.stakater.com/reload",
		},
		{name: "unknown kind has no typed keys", kind: refs.Kind("Pod")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keys.ReloadKey(tt.kind); got != tt.reload {
				t.Errorf("ReloadKey = %q, want %q", got, tt.reload)
			}
			if got := keys.TypedAutoKey(tt.kind); got != tt.typedAuto {
				t.Errorf("TypedAutoKey = %q, want %q", got, tt.typedAuto)
			}
			if got := keys.ExcludeKey(tt.kind); got != tt.exclude {
				t.Errorf("ExcludeKey = %q, want %q", got, tt.exclude)
			}
		})
	}
}

func TestKeysAll(t *testing.T) {
	// Reflection is here only, so that a field added to Keys and forgotten
	// in All fails this test instead of going unlinted.
	keys := DefaultKeys("")
	all := keys.All()
	v := reflect.ValueOf(keys)
	var fields int
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.String {
			continue
		}
		fields++
		if !slices.Contains(all, f.String()) {
			t.Errorf("All() misses Keys.%s (%q)", v.Type().Field(i).Name, f.String())
		}
	}
	if len(all) != fields {
		t.Errorf("All() has %d keys, Keys has %d string fields: %q", len(all), fields, all)
	}
}
