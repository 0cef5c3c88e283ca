package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// --log-format=json makes every line Ripple prints (its own, controller-
// runtime's and client-go's) one JSON object with ts, level and msg; the
// default is human-readable text.
func TestLogFormat(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			ns := newNamespace(t, cs)
			r := startRipple(t, ns, "--log-format="+format, "--leader-elect", "--leader-election-namespace="+ns)
			cm := createConfigMap(t, cs, ns, configName, "v1")
			web := workload{kit.Deployment, ns, "web"}
			web.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
			before := waitRolledOut(t, cs, web)
			waitBaseline(t, cs, web, digest.ConfigMap(cm))
			sum := setConfigMapValue(t, cs, ns, configName, "v2")
			expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
			waitLog(t, r, "reloaded")

			var lines []string
			// Only whole lines: the pipe may have delivered part of the next.
			out := r.Out.From(r.Mark)
			for _, l := range strings.Split(out[:strings.LastIndex(out, "\n")+1], "\n") {
				if l != "" {
					lines = append(lines, l)
				}
			}
			if len(lines) < 5 {
				t.Fatalf("only %d log lines", len(lines))
			}
			for _, l := range lines {
				var m map[string]any
				err := json.Unmarshal([]byte(l), &m)
				switch format {
				case "json":
					// Reloader's logrus JSON keys.
					if err != nil || m["time"] == nil || m["level"] == nil || m["msg"] == nil {
						t.Errorf("not a JSON log line with time, level and msg: %s", l)
					}
				case "text":
					if err == nil {
						t.Errorf("a JSON line in text format: %s", l)
					}
				}
			}
		})
	}
}
