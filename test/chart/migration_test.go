package chart

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/config"
)

// reloaderFullname is the fullname rule of Stakater Reloader's chart:
// fullnameOverride, else <release>-<nameOverride or "reloader">, cut at 63
// characters without a trailing "-". Written out here so that the chart's
// rule is checked against it, not against itself.
func reloaderFullname(release, nameOverride, fullnameOverride string) string {
	cut := func(s string) string {
		if len(s) > 63 {
			s = s[:63]
		}
		return strings.TrimSuffix(s, "-")
	}
	if fullnameOverride != "" {
		return cut(fullnameOverride)
	}
	name := nameOverride
	if name == "" {
		name = "reloader"
	}
	return cut(release + "-" + name)
}

// The chart names every object as Reloader's chart does, so that
// `helm upgrade <release>` from Reloader's chart keeps the Deployment, its
// selector, the ServiceAccount, RBAC and Service: Helm patches them in place
// instead of deleting Reloader's and creating Ripple's.
func TestNamesFollowReloadersChart(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 53) // Helm's longest release name
	for _, tc := range []struct {
		release, nameOverride, fullnameOverride string
		// want overrides Reloader's rule: releases named after Ripple.
		want string
	}{
		{release: "reloader"},
		{release: "prod"},
		{release: "reloader-prod"},
		{release: "prod", nameOverride: "rl"},
		{release: "prod", fullnameOverride: "cluster-reloader"},
		{release: long},
		{release: long, nameOverride: "reloader-platform"}, // cut at 63, then the trailing "-"
		{release: "ripple", want: "ripple"},
		{release: "ripple-prod", want: "ripple-prod"},
		{release: "ripple", nameOverride: "x"},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.release, tc.nameOverride, tc.fullnameOverride), func(t *testing.T) {
			t.Parallel()
			want := tc.want
			if want == "" {
				want = reloaderFullname(tc.release, tc.nameOverride, tc.fullnameOverride)
			}
			values := map[string]any{
				"nameOverride": tc.nameOverride, "fullnameOverride": tc.fullnameOverride,
				"reloader": map[string]any{"service": map[string]any{"port": 9090}},
			}
			_, objs := render(t, helmchart.Release{Name: tc.release, Namespace: "ns", ValuesFiles: []string{reloaderValues()}, Values: []map[string]any{values}})
			names := map[string]string{}
			for _, o := range objs {
				names[o.GetKind()+"/"+o.GetName()] = o.GetName()
			}
			for _, obj := range []string{
				"Deployment/" + want, "ServiceAccount/" + want, "Service/" + want,
				"ClusterRole/" + want + "-role", "ClusterRoleBinding/" + want + "-role-binding",
			} {
				if _, ok := names[obj]; !ok {
					t.Errorf("no %s among %v", obj, slices.Sorted(maps.Keys(names)))
				}
			}
			d, _ := rippleDeployment(t, objs)
			wantSel := map[string]string{"app": want, "release": tc.release}
			if !maps.Equal(d.Spec.Selector.MatchLabels, wantSel) {
				t.Errorf("selector %v, want Reloader's %v", d.Spec.Selector.MatchLabels, wantSel)
			}
		})
	}
}

// Values files written for Reloader's charts 1.0, 1.3, 1.4 and 2.2 pass
// the schema and render; every deprecated form (quoted booleans, the image
// under reloader.deployment, volumes at reloader level) is named in a
// comment on the Deployment (and in NOTES.txt) and means what it meant to
// Reloader.
func TestReloaderChartValuesFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file       string
		deprecated []string
		check      func(t *testing.T, objs []*unstructured.Unstructured, cfg config.Config, args string)
	}{
		{
			file: "chart-1.0.yaml",
			deprecated: []string{
				`reloader.watchGlobally: "true" is a quoted boolean`,
				`reloader.ignoreSecrets: "false" is a quoted boolean`,
				`reloader.reloadOnCreate: "true" is a quoted boolean`,
				`reloader.readOnlyRootFileSystem: "true" is a quoted boolean`,
				`reloader.rbac.enabled: "true" is a quoted boolean`,
				"reloader.deployment.image is deprecated",
				"reloader.volumes is deprecated; use reloader.deployment.volumes.",
				"reloader.volumeMounts is deprecated; use reloader.deployment.volumeMounts.",
			},
			check: func(t *testing.T, objs []*unstructured.Unstructured, cfg config.Config, args string) {
				d, c := rippleDeployment(t, objs)
				if !strings.Contains(args, "--reload-on-create=true") || strings.Contains(args, "--resources-to-ignore") {
					t.Errorf(`reloadOnCreate "true" / ignoreSecrets "false": args %s`, args)
				}
				if len(roles(find(objs, "ClusterRole"))) != 1 {
					t.Errorf(`watchGlobally "true", rbac.enabled "true": want one ClusterRole of Ripple's`)
				}
				if !strings.HasPrefix(c.Image, "ghcr.io/ripple-dev/ripple:") {
					t.Errorf("reloader.deployment.image names Reloader's image: want Ripple's, got %s", c.Image)
				}
				mounts := map[string]string{}
				for _, m := range c.VolumeMounts {
					mounts[m.Name] = m.MountPath
				}
				if mounts["ca"] != "/etc/ssl/corporate" || mounts["tmp"] != "/tmp" {
					t.Errorf("volume mounts %v: want reloader.volumeMounts and the read-only root's /tmp", mounts)
				}
				vols := map[string]bool{}
				for _, v := range d.Spec.Template.Spec.Volumes {
					vols[v.Name] = v.ConfigMap != nil || v.EmptyDir != nil
				}
				if !vols["ca"] || !vols["tmp"] {
					t.Errorf("volumes %v: want reloader.volumes' ca and tmp", vols)
				}
				if d.Spec.Selector.MatchLabels["team"] != "platform" {
					t.Errorf("selector %v lacks reloader.matchLabels", d.Spec.Selector.MatchLabels)
				}
			},
		},
		{
			file:       "chart-1.3.yaml",
			deprecated: []string{`reloader.reloadOnDelete: "false" is a quoted boolean`},
			check: func(t *testing.T, objs []*unstructured.Unstructured, cfg config.Config, args string) {
				if strings.Contains(args, "--reload-on-delete") || !strings.Contains(args, "--enable-ha=true") {
					t.Errorf(`reloadOnDelete "false", enableHA: args %s`, args)
				}
				svc := find(objs, "Service")
				if len(svc) != 1 || svc[0].GetLabels()["release-name"] != "reloader" {
					t.Errorf("the Service's labels are templated as Reloader's chart does: %v", svc)
				}
			},
		},
		{
			file:       "chart-1.4.yaml",
			deprecated: []string{`reloader.ignoreCronJobs: "true" is a quoted boolean`},
			check: func(t *testing.T, objs []*unstructured.Unstructured, cfg config.Config, args string) {
				if !strings.Contains(args, "--ignored-workload-types=jobs,cronjobs") {
					t.Errorf(`ignoreJobs, ignoreCronJobs "true": args %s`, args)
				}
				if len(find(objs, "ClusterRole")) != 0 || len(find(objs, "Role")) == 0 {
					t.Error("watchGlobally false: want Roles and no ClusterRole")
				}
			},
		},
		{
			file: "chart-2.2.yaml",
			check: func(t *testing.T, objs []*unstructured.Unstructured, cfg config.Config, args string) {
				if !strings.Contains(args, "--namespaces=reloader,team-a,team-b") {
					t.Errorf("scoped mode: args %s", args)
				}
			},
		},
		{
			// Reloader chart 3.0-beta: its new keys render as the flags
			// Reloader 2 takes, and ALERT_ON_RELOAD=true without a URL
			// starts Ripple (alerts off, one warning) as it starts Reloader.
			file: "chart-3.0-beta.yaml",
			check: func(t *testing.T, objs []*unstructured.Unstructured, cfg config.Config, args string) {
				for _, want := range []string{
					"--configmap-exclude-annotation=platform.example.com/configmaps-exclude", "--secret-exclude-annotation=platform.example.com/secrets-exclude",
					"--secretproviderclass-annotation=platform.example.com/spc-reload", "--secretproviderclass-auto-annotation=platform.example.com/spc-auto",
					"--secretproviderclass-exclude-annotation=platform.example.com/spc-exclude",
					"--leader-election-lease-duration=20s", "--leader-election-renew-deadline=15s", "--leader-election-retry-period=3s",
				} {
					if !strings.Contains(args, want) {
						t.Errorf("args lack %s: %s", want, args)
					}
				}
				k := cfg.Keys
				if k.ConfigMapExclude != "platform.example.com/configmaps-exclude" || k.SecretProviderClassExclude != "platform.example.com/spc-exclude" || k.SecretProviderClassAuto != "platform.example.com/spc-auto" {
					t.Errorf("keys %+v", k)
				}
				if !cfg.LeaderElection || cfg.LeaseDuration.String() != "20s" || cfg.RenewDeadline.String() != "15s" || cfg.RetryPeriod.String() != "3s" {
					t.Errorf("leader election %v, %v/%v/%v", cfg.LeaderElection, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
				}
				if cfg.Alert.URL != "" || !slices.ContainsFunc(cfg.Warnings, func(w string) bool {
					return strings.Contains(w, "alerts are off") && strings.Contains(w, "ALERT_ON_RELOAD")
				}) {
					t.Errorf("ALERT_ON_RELOAD without a URL: alert %+v, warnings %q; want alerts off and a warning", cfg.Alert, cfg.Warnings)
				}
				_, c := rippleDeployment(t, objs)
				if !strings.HasPrefix(c.Image, "ghcr.io/ripple-dev/ripple:") {
					t.Errorf("image %s: want Ripple's", c.Image)
				}
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			out, objs := render(t, helmchart.Release{Name: "reloader", Namespace: "reloader", ValuesFiles: []string{testdata("reloader-values/" + tc.file)}})
			_, cfg := parseRendered(t, objs)
			_, c := rippleDeployment(t, objs)
			var got []string
			for _, line := range strings.Split(string(out), "\n") {
				if s, ok := strings.CutPrefix(line, "#   * "); ok {
					got = append(got, s)
				}
			}
			if len(tc.deprecated) == 0 && strings.Contains(string(out), "DEPRECATED") {
				t.Errorf("deprecation notices for a current values file:\n%s", strings.Join(got, "\n"))
			}
			for _, want := range tc.deprecated {
				if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("no deprecation notice %q; got:\n%s", want, strings.Join(got, "\n"))
				}
			}
			if len(got) != len(tc.deprecated) {
				t.Errorf("%d deprecation notices, want %d:\n%s", len(got), len(tc.deprecated), strings.Join(got, "\n"))
			}
			tc.check(t, objs, cfg, strings.Join(c.Args, " "))
		})
	}
}
