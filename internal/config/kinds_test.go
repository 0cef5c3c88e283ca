package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkloadKinds(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	for name, body := range map[string]string{
		good: "- {group: example.com, version: v1, kind: Widget, template: spec.template}\n",
		bad:  "- {group: example.com, version: v1, kind: Widget, template: spec.template}\n- {group: example.com, version: v1, kind: Gadget, restart: {}}\n",
	} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := parse(t, nil, "--workload-kinds-preset=external-secrets,kruise", "--workload-kinds="+good)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range cfg.DeclaredKinds {
		names = append(names, k.Name())
	}
	if strings.Join(names, ",") != "ExternalSecret,CloneSet,StatefulSet.apps.kruise.io,DaemonSet.apps.kruise.io,Widget" {
		t.Fatalf("declared kinds %v, want the presets' in order, then the file's", names)
	}
	for _, tc := range []struct{ args, want string }{
		{"--workload-kinds=" + bad, "--workload-kinds: " + bad + ": entry 2 (Gadget): restart.annotation: \"\" is not an annotation key"},
		{"--workload-kinds=" + filepath.Join(dir, "missing.yaml"), "--workload-kinds: open " + filepath.Join(dir, "missing.yaml")},
		{"--workload-kinds-preset=agones", `--workload-kinds-preset: "agones" is not a preset`},
	} {
		if _, err := parse(t, nil, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
