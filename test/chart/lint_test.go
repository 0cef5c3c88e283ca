package chart

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

// TestLint runs helm lint --strict (warnings fail) with the chart's
// defaults and with Reloader's default values file.
func TestLint(t *testing.T) {
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	production, err := os.CreateTemp(t.TempDir(), "production-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(production).Encode(productionValues()); err != nil {
		t.Fatal(err)
	}
	if err := production.Close(); err != nil {
		t.Fatal(err)
	}
	for name, extra := range map[string][]string{
		"chart defaults":            nil,
		"Reloader's default values": {"-f", reloaderValues()},
		"production values":         {"-f", production.Name()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"lint", "--strict", "--kube-version", helmchart.KubeVersion, chart}, extra...)
			out, err := helmchart.Helm(args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(string(out), "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

// TestSchemaRejects: values.schema.json and the chart's own checks reject
// unknown keys, mistyped values and impossible combinations, with a message
// that names the value.
func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"misspelled Reloader key", r(map[string]any{"enableHa": true}), "at '/reloader': additional properties 'enableHa' not allowed"},
		{"misspelled top-level key", map[string]any{"reloder": map[string]any{}}, "additional properties 'reloder' not allowed"},
		// Quoted booleans ("true") are accepted, as older Reloader values
		// files write them (TestReloaderChartValuesFiles); other strings not.
		{"boolean as a string that is no boolean", r(map[string]any{"enableHA": "yes"}), "at '/reloader/enableHA': value must be one of true, false, 'true', 'false'"},
		{"unknown strategy", r(map[string]any{"reloadStrategy": "rolling"}), "at '/reloader/reloadStrategy'"},
		{"unknown custom annotation", r(map[string]any{"custom_annotations": map[string]any{"autoo": "x/y"}}), "additional properties 'autoo' not allowed"},
		{"bad namespace", r(map[string]any{"namespaces": []any{"Team_A"}}), "at '/reloader/namespaces/0'"},
		{"bad webhook URL", r(map[string]any{"webhookUrl": "ftp://example.com"}), "at '/reloader/webhookUrl'"},
		{"replicas as a string", r(map[string]any{"deployment": map[string]any{"replicas": "2"}}), "at '/reloader/deployment/replicas': got string, want integer"},
		{"misspelled deployment key", r(map[string]any{"deployment": map[string]any{"replica": 2}}), "at '/reloader/deployment': additional properties 'replica' not allowed"},
		{"bad settle window", map[string]any{"ripple": map[string]any{"settleWindow": "soon"}}, "at '/ripple/settleWindow'"},
		{"non-positive QPS", map[string]any{"ripple": map[string]any{"kubeApiQps": 0}}, "at '/ripple/kubeApiQps'"},
		{"unknown Ripple key", map[string]any{"ripple": map[string]any{"settle": "1s"}}, "at '/ripple': additional properties 'settle' not allowed"},
		{"unknown CronJob mode", map[string]any{"ripple": map[string]any{"cronJobReload": "now"}}, "at '/ripple/cronJobReload'"},
		// The Job and CronJob rules follow reloader.ignoreJobs and
		// ignoreCronJobs alone.
		{"removed ripple.rbac", map[string]any{"ripple": map[string]any{"rbac": map[string]any{"jobs": true}}}, "at '/ripple': additional properties 'rbac' not allowed"},
		{"both config kinds ignored", r(map[string]any{"ignoreSecrets": true, "ignoreConfigMaps": true}), "reloader.ignoreSecrets and reloader.ignoreConfigMaps are both true"},
		{"pprof on the metrics port", r(map[string]any{"enablePProf": true, "pprofAddr": ":9090"}), "reloader.pprofAddr is :9090"},
		{"two webhook URLs", deepMerge(r(map[string]any{"webhookUrl": "https://hooks.example.com/a"}), map[string]any{"ripple": map[string]any{"webhookUrlSecret": map[string]any{"name": "hooks"}}}), "reloader.webhookUrl and ripple.webhookUrlSecret.name are both set"},
		{"bad webhook Secret name", map[string]any{"ripple": map[string]any{"webhookUrlSecret": map[string]any{"name": "Hooks_1"}}}, "at '/ripple/webhookUrlSecret/name'"},
		{"pprof on the metrics port of the loopback", r(map[string]any{"enablePProf": true, "pprofAddr": "127.0.0.1:9090"}), "reloader.pprofAddr is 127.0.0.1:9090"},
		// Reloader chart 3.0's keys.
		{"Reloader's enterprise console", map[string]any{"enterprise": map[string]any{"enabled": true}}, "enterprise.enabled is true: Reloader's enterprise console and gateway (Reloader chart 3.0) are not part of Ripple"},
		{"two lease durations", deepMerge(r(map[string]any{"enableHA": true, "leaderElection": map[string]any{"leaseDuration": "20s"}}), map[string]any{"ripple": map[string]any{"leaderElection": map[string]any{"leaseDuration": "30s"}}}), "reloader.leaderElection.leaseDuration (20s) and ripple.leaderElection.leaseDuration (30s)"},
		{"bad lease duration", r(map[string]any{"leaderElection": map[string]any{"retryPeriod": "soon"}}), "at '/reloader/leaderElection/retryPeriod'"},
		{"unknown Reloader 3 custom annotation", r(map[string]any{"custom_annotations": map[string]any{"job_exclude": "x/y"}}), "additional properties 'job_exclude' not allowed"},
		// Values Ripple refuses at start (TestCanaryBakeValueAsRippleReadsIt,
		// TestDeclaredKindsAsRippleReadsThem and others hold the chart to it).
		{"canary bake over 24h", map[string]any{"ripple": map[string]any{"canaryBake": "25h"}}, "ripple.canaryBake: 25h is over 24h"},
		{"negative canary", map[string]any{"ripple": map[string]any{"canary": -1}}, "at '/ripple/canary'"},
		{"canary percentage over 100", map[string]any{"ripple": map[string]any{"canary": "110%"}}, "at '/ripple/canary'"},
		{"misspelled declared kind field", map[string]any{"ripple": map[string]any{"workloadKinds": map[string]any{"declared": []any{map[string]any{"group": "example.com", "version": "v1", "kind": "Widget", "tmplate": "spec.template"}}}}}, "at '/ripple/workloadKinds/declared/0': additional properties 'tmplate' not allowed"},
		{"declared kind in lower case", map[string]any{"ripple": map[string]any{"workloadKinds": map[string]any{"declared": []any{map[string]any{"group": "example.com", "version": "v1", "kind": "widget", "template": "spec.template"}}}}}, `ripple.workloadKinds.declared entry 1 (widget): kind: "widget" is not a kind`},
		{"unknown restart method", map[string]any{"ripple": map[string]any{"restartMethod": "rolling"}}, "at '/ripple/restartMethod'"},
		{"reload action permission not a boolean", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadAction": "yes"}}}, "at '/ripple/restartMethods/reloadAction'"},
		{"reload action port out of range", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadActionPorts": []any{70000}}}}, "at '/ripple/restartMethods/reloadActionPorts/0'"},
		{"reload action port 0", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadActionPorts": []any{0}}}}, "at '/ripple/restartMethods/reloadActionPorts/0'"},
		// A number in quotes is no port name: the NetworkPolicy would
		// refuse it.
		{"reload action port number as a string", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadActionPorts": []any{"9090"}}}}, "at '/ripple/restartMethods/reloadActionPorts/0'"},
		{"reload action port name in upper case", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadActionPorts": []any{"HTTP"}}}}, "at '/ripple/restartMethods/reloadActionPorts/0'"},
		{"reload action port name with a double hyphen", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadActionPorts": []any{"web--reload"}}}}, "at '/ripple/restartMethods/reloadActionPorts/0'"},
		{"reload action port name over 15 characters", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadActionPorts": []any{"prometheus-reload"}}}}, "at '/ripple/restartMethods/reloadActionPorts/0'"},
		{"reload action port listed twice", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadActionPorts": []any{9090, 9090}}}}, "at '/ripple/restartMethods/reloadActionPorts': items at 0 and 1 are equal"},
		{"reload action ports as a string", map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"reloadActionPorts": "9090"}}}, "at '/ripple/restartMethods/reloadActionPorts': got string, want null or array"},
		{"a canary without ConfigRollouts", map[string]any{"ripple": map[string]any{"canary": 1, "configRollouts": map[string]any{"enabled": false}}}, "ripple.canary needs ripple.configRollouts.enabled"},
		{"query gate without a Prometheus", map[string]any{"ripple": map[string]any{"canaryGates": []any{"query"}}}, "ripple.canaryGates has query but ripple.prometheus.url is empty"},
		{"query gate without a condition", map[string]any{"ripple": map[string]any{"canaryGates": []any{"query"}, "prometheus": map[string]any{"url": "https://prometheus:9090"}}}, "ripple.canaryGates has query but no condition to ask"},
		{"unknown inconclusive", map[string]any{"ripple": map[string]any{"prometheus": map[string]any{"inconclusive": "fail"}}}, "at '/ripple/prometheus/inconclusive'"},
		{"Prometheus URL of another scheme", map[string]any{"ripple": map[string]any{"prometheus": map[string]any{"url": "ftp://prometheus"}}}, "at '/ripple/prometheus/url'"},
		{"unknown gate", map[string]any{"ripple": map[string]any{"canaryGates": []any{"metrics"}}}, "at '/ripple/canaryGates/0'"},
		// The admission webhook: never blocking, never slow, and coherent.
		{"admission timeout over 2s", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"timeoutSeconds": 3}}}), "at '/ripple/admission/timeoutSeconds'"},
		{"admission timeout 0", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"timeoutSeconds": 0}}}), "at '/ripple/admission/timeoutSeconds'"},
		{"admission failurePolicy Fail", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"failurePolicy": "Fail"}}}), "at '/ripple/admission/failurePolicy'"},
		{"admission in webhook mode", admissionValues(map[string]any{"reloader": map[string]any{"webhookUrl": "https://hooks.example.com/a"}}), "in webhook mode Ripple posts changes and rolls nothing"},
		{"negative maxRollouts", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"maxRollouts": -1}}}), "at '/ripple/admission/maxRollouts'"},
		{"admission on the metrics port", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"port": 9090}}}), "ripple.admission.port is 9090"},
		{"admission on the pprof port", admissionValues(deepMerge(r(map[string]any{"enablePProf": true}), map[string]any{"ripple": map[string]any{"admission": map[string]any{"port": 6060}}})), "ripple.admission.port 6060 is reloader.pprofAddr's port"},
		{"admission port out of range", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"port": 70000}}}), "at '/ripple/admission/port'"},
		{"admission in one namespace", admissionValues(r(map[string]any{"watchGlobally": false})), "ripple.admission.enabled with reloader.watchGlobally: false"},
		{"admission scoped to its own namespace", admissionValues(r(map[string]any{"namespaces": []any{relNS}})), "reloader.namespaces lists only Ripple's own namespace"},
		{"admission Secret without a CA", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"certificate": map[string]any{"secretName": "tls"}}}}), "secretName and caBundle go together"},
		{"admission CA not PEM", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"certificate": map[string]any{"secretName": "tls", "caBundle": "LS0tLS1CRUdJTg=="}}}}), "at '/ripple/admission/certificate/caBundle'"},
		{"admission cert-manager and a Secret", admissionValues(deepMerge(admissionCM(map[string]any{"enabled": true}), map[string]any{"ripple": map[string]any{"admission": map[string]any{"certificate": map[string]any{"secretName": "tls", "caBundle": "-----BEGIN CERTIFICATE-----"}}}})), "certManager.enabled and ripple.admission.certificate.secretName are both set"},
		{"admission issuerRef without a name", admissionValues(admissionCM(map[string]any{"enabled": true, "issuerRef": map[string]any{"kind": "ClusterIssuer"}})), "issuerRef has no name"},
		{"admission renewal not before expiry", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"certificate": map[string]any{"validityDays": 30, "renewBeforeDays": 30}}}}), "renewBeforeDays (30) must be less than validityDays (30)"},
		{"admission selector operator", admissionValues(map[string]any{"ripple": map[string]any{"admission": map[string]any{"objectSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Equals"}}}}}}), "at '/ripple/admission/objectSelector/matchExpressions/0/operator'"},
		{"misspelled admission key", map[string]any{"ripple": map[string]any{"admission": map[string]any{"enable": true}}}, "at '/ripple/admission': additional properties 'enable' not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := helmchart.Template(helmchart.Release{Name: relName, Namespace: relNS, ValuesFiles: []string{reloaderValues()}, Values: []map[string]any{tc.values}})
			if err == nil {
				t.Fatal("the chart accepted the values")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}
