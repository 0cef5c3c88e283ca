package docs

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/reason"
)

// Known collects the names that exist from the code of the module at root.
// It builds Ripple and the benchmark into dir to read their --help.
func Known(ctx context.Context, root, dir string) (Names, error) {
	flags, err := flagsOf(ctx, root, dir)
	if err != nil {
		return nil, err
	}
	keys, err := annotationsOf(root)
	if err != nil {
		return nil, err
	}
	reasons := reasonsOf()
	words, err := explainWordsOf(root)
	if err != nil {
		return nil, err
	}
	m, err := metricsOf()
	if err != nil {
		return nil, err
	}
	return Names{Flag: flags, Annotation: keys, Metric: m, Reason: reasons, ExplainWord: words}, nil
}

var (
	pflagLineRE = regexp.MustCompile(`(?m)^\s+(?:-[A-Za-z], )?--([A-Za-z0-9][A-Za-z0-9-]*)`)
	goFlagRE    = regexp.MustCompile(`(?m)^  -([A-Za-z0-9][A-Za-z0-9-]*)`)
	wholeKeyRE  = regexp.MustCompile(`^(?:[A-Za-z0-9-]+\.)*(?:reloader\.stakater\.com|ripple\.dev)/[A-Za-z0-9._-]+$`)
	descNameRE  = regexp.MustCompile(`fqName: "([^"]+)"`)
)

// flagsOf reads the flags from the --help of every command the docs
// describe: ripple and its commands (explain, plan, approve, resume,
// history, wait) and the benchmark (hack/bench).
func flagsOf(ctx context.Context, root, dir string) (map[string]bool, error) {
	flags := map[string]bool{"help": true}
	programs := []struct {
		pkg  string
		args [][]string
		re   *regexp.Regexp
	}{
		{"./cmd/ripple", [][]string{{"--help"}, {"explain", "--help"}, {"plan", "--help"}, {"approve", "--help"}, {"resume", "--help"}, {"history", "--help"}, {"wait", "--help"}, {"version", "--help"}}, pflagLineRE},
		{"./hack/bench", [][]string{{"-help"}}, goFlagRE},
	}
	for _, p := range programs {
		bin := filepath.Join(dir, filepath.Base(p.pkg))
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, p.pkg)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w\n%s", p.pkg, err, out)
		}
		for _, args := range p.args {
			// --help may exit non-zero (flag.ErrHelp): the text is what counts.
			out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			for _, m := range p.re.FindAllStringSubmatch(string(out), -1) {
				flags[m[1]] = true
			}
		}
	}
	if len(flags) < 20 {
		return nil, fmt.Errorf("found only %d flags in the --help output: has its format changed?", len(flags))
	}
	return flags, nil
}

// annotationsOf returns the annotation keys (internal/annotation), and every
// other key of the two domains that the Go code or the chart's templates
// spell out (labels such as reloader.stakater.com/meta-info, the cache's
// internal keys, the chart's ripple.dev/shard pod label).
func annotationsOf(root string) (map[string]bool, error) {
	keys := map[string]bool{annotation.LastReloadedFrom: true}
	for _, k := range annotation.DefaultKeys(annotation.DefaultPrefix).All() {
		keys[k] = true
	}
	err := goFiles(root, func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && wholeKeyRE.MatchString(s) {
					keys[s] = true
				}
			}
			return true
		})
	})
	if err != nil {
		return nil, err
	}
	templates, err := filepath.Glob(filepath.Join(root, "deploy", "helm", "ripple", "templates", "*"))
	if err != nil {
		return nil, err
	}
	for _, t := range templates {
		b, err := os.ReadFile(t)
		if err != nil {
			return nil, err
		}
		for _, m := range keyRE.FindAllStringSubmatch(string(b), -1) {
			if wholeKeyRE.MatchString(m[1]) {
				keys[m[1]] = true
			}
		}
	}
	return keys, nil
}

// reasonsOf returns the Event reasons of the registry (package reason),
// the only place a reason is declared.
func reasonsOf() map[string]bool {
	reasons := map[string]bool{}
	for _, i := range reason.All() {
		if i.Event {
			reasons[string(i.Reason)] = true
		}
	}
	return reasons
}

// reasonsUsed returns the registry's reasons the code outside the registry
// names (reason.X): those it can tell.
func reasonsUsed(root string) (map[string]bool, error) {
	used := map[string]bool{}
	err := goFiles(root, func(f *ast.File) {
		if f.Name.Name == "reason" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "reason" {
					used[sel.Sel.Name] = true
				}
			}
			return true
		})
	})
	return used, err
}

// explainWordsOf returns the CamelCase strings of internal/explain and
// internal/standing: the states of where a workload stands and the words
// of `ripple explain`'s report (docs/explain.md), which the docs name
// beside Event reasons.
func explainWordsOf(root string) (map[string]bool, error) {
	words := map[string]bool{}
	err := goFiles(root, func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && camelRE.MatchString(s) {
					words[s] = true
				}
			}
			return true
		})
	}, filepath.Join("internal", "explain"), filepath.Join("internal", "standing"))
	for _, i := range reason.All() {
		if !i.Event {
			words[string(i.Reason)] = true // told by explain only
		}
	}
	return words, err
}

// goFiles parses every non-test Go file under root's internal/ and cmd/,
// or under the directories given.
func goFiles(root string, visit func(*ast.File), dirs ...string) error {
	fset := token.NewFileSet()
	if len(dirs) == 0 {
		dirs = []string{"internal", "cmd", "api"}
	}
	for _, top := range dirs {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			visit(f)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// metricsOf registers internal/metrics' collectors (the optional
// by-namespace counter too) and reads the name of every metric they
// describe: described, not gathered, so a labelled metric counts before it
// has a series.
func metricsOf() (map[string]bool, error) {
	d := describer{names: map[string]bool{}}
	if _, err := metrics.New(&d, true); err != nil {
		return nil, err
	}
	if len(d.names) == 0 {
		return nil, errors.New("internal/metrics registered no metric")
	}
	return d.names, nil
}

// describer is a prometheus.Registerer that keeps the names of the metrics
// registered on it.
type describer struct{ names map[string]bool }

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	for desc := range ch {
		m := descNameRE.FindStringSubmatch(desc.String())
		if m == nil {
			return fmt.Errorf("no metric name in %s", desc)
		}
		d.names[m[1]] = true
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return true }
