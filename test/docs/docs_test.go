package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/reason"
)

// root is the module root, two directories up from this package.
const root = "../.."

// docFiles are the hand-written pages. docs/reference.md is generated from
// the code (`make docs`) and internal/config's TestReferenceIsCurrent keeps
// it so; CHANGELOG.md names old names on purpose.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "reference.md" })
	files = append(files, filepath.Join(root, "README.md"))
	if _, err := os.Stat(filepath.Join(root, "deploy", "helm", "ripple", "README.md")); err == nil {
		files = append(files, filepath.Join(root, "deploy", "helm", "ripple", "README.md"))
	}
	return files
}

func known(t *testing.T) Names {
	t.Helper()
	names, err := Known(t.Context(), root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Every flag, annotation, metric and Event reason the docs name exists.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	names := known(t)
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, finding := range Check(rel, string(b), names) {
			t.Error(finding)
		}
	}
}

// The names are read from the code: a few that must be there are.
func TestKnownNamesComeFromTheCode(t *testing.T) {
	names := known(t)
	for kind, want := range map[string][]string{
		Flag:       {"settle-window", "reload-on-create", "is-Argo-Rollouts", "all-namespaces", "filename", "quick"},
		Annotation: {"reloader.stakater.com/auto", "configmap.reloader.stakater.com/reload", "ripple.dev/applied", "reloader.stakater.com/last-reloaded-from", "reloader.stakater.com/meta-info"},
		Metric:     {"reloader_reload_executed_total", "reloader_reload_executed_total_by_namespace", "ripple_rollouts_stalled_total"},
		Reason:     {"Reloaded", "ReloadSkipped", "RolloutStalled", "ReloadHeld"},
	} {
		for _, n := range want {
			if !names[kind][n] {
				t.Errorf("%s %q not found in the code; found %d %ss", kind, n, len(names[kind]), kind)
			}
		}
	}
}

// The checker itself: the fixture names one wrong name of each kind among
// right ones, and flags of other tools; exactly the wrong ones are found.
func TestCheckerFindsWrongNames(t *testing.T) {
	b, err := os.ReadFile("testdata/wrong.md")
	if err != nil {
		t.Fatal(err)
	}
	names := Names{
		Flag:       {"settle-window": true, "dry-run": true, "help": true},
		Annotation: {"reloader.stakater.com/auto": true, "ripple.dev/settle-window": true, "configmap.reloader.stakater.com/reload": true, "reloader.stakater.com/ignore": true},
		Metric:     {"reloader_reload_executed_total": true, "ripple_rollout_duration_seconds": true},
		Reason:     {"Reloaded": true, "ReloadFail": true, "RolloutStalled": true},
	}
	var got []string
	for _, f := range Check("wrong.md", string(b), names) {
		got = append(got, f.String())
	}
	want := []string{
		`wrong.md:5: flag "--settle-windwo" does not exist in the code (did you mean --settle-window?)`,
		`wrong.md:7: annotation "reloader.stakater.com/atuo" does not exist in the code (did you mean reloader.stakater.com/auto?)`,
		`wrong.md:10: metric "reloader_reloads_executed_total" does not exist in the code (did you mean reloader_reload_executed_total?)`,
		`wrong.md:13: event reason "ReloadFailed" does not exist in the code (did you mean ReloadFail?)`,
		`wrong.md:14: event reason "RolloutStuck" does not exist in the code (not one of the Reason constants)`,
		`wrong.md:23: flag "--dry-runn" does not exist in the code (did you mean --dry-run?)`,
		`wrong.md:27: annotation "ripple.dev/settle" does not exist in the code`,
		`wrong.md: <!-- docs-check: not-a-name --> lists "reloader.stakater.com/auto": it exists: remove it from the directive`,
		`wrong.md: <!-- docs-check: not-a-name --> lists "reloader.stakater.com/nope": the page does not use it: remove it from the directive`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every reason of the registry is told by the code, is in the reference's
// Events table when it is an Event, and, when it is a reason a workload
// did not roll, has its entry in docs/troubleshooting.md, headed by the
// reason in a code span. No reason is declared anywhere else: the code
// names reasons only through the registry.
func TestReasonsAreToldAndDocumented(t *testing.T) {
	used, err := reasonsUsed(root)
	if err != nil {
		t.Fatal(err)
	}
	ref := readDoc(t, "docs/reference.md")
	var headings []string
	for _, l := range strings.Split(readDoc(t, "docs/troubleshooting.md"), "\n") {
		if strings.HasPrefix(l, "#") {
			headings = append(headings, l)
		}
	}
	for _, i := range reason.All() {
		name := string(i.Reason)
		if !used[name] {
			t.Errorf("reason %s is in the registry but no code tells it (reason.%s)", name, name)
		}
		if i.Event && !strings.Contains(ref, "| `"+name+"` | "+i.Type()+" |") {
			t.Errorf("Event reason %s is not in docs/reference.md's Events table (make docs)", name)
		}
		if i.NotRolled && !slices.ContainsFunc(headings, func(h string) bool { return strings.Contains(h, "`"+name+"`") }) {
			t.Errorf("reason %s, a reason a workload did not roll, has no entry in docs/troubleshooting.md (a heading naming `%s`)", name, name)
		}
	}
}

// Events are recorded in one place: the emitter (internal/controller/emit.go).
func TestOnlyTheEmitterRecordsEvents(t *testing.T) {
	fsys := os.DirFS(root)
	err := fs.WalkDir(fsys, "internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		if path != "internal/controller/emit.go" && strings.Contains(string(b), "Recorder.Eventf(") {
			t.Errorf("%s records an Event itself; tell a plan.Notice through the emitter (controller.emit)", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
