package explain

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Every reason explain prints is the registry's (internal/reason): the
// verdict's and the notices'; a source's is its decision's (internal/decide)
// or the registry's. explain declares none of its own.
func TestEveryReasonIsTheRegistrys(t *testing.T) {
	written := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	decided := map[string]bool{}
	for _, r := range []decide.Reason{decide.AutoMatch, decide.NamedMatch, decide.SearchMatch, decide.AutoReloadAll,
		decide.NotOptedIn, decide.NotReferenced, decide.Excluded, decide.Ignored, decide.SelectorMatch} {
		decided[string(r)] = true
	}
	auto := "reloader.stakater.com/auto"
	var reports []Report
	for _, meta := range []map[string]string{
		{auto: "true"}, {}, {auto: "true", "ripple.dev/settle-window": "1m"}, {auto: "true", "ripple.dev/settle-window": "0s"},
		{auto: "true", "ripple.dev/reload-policy": "manual"}, {auto: "true", "ripple.dev/reload-policy": "notify"},
		{auto: "true", "ripple.dev/reload-window": "Sat 00:00-00:01 UTC"}, {auto: "true", "ripple.dev/settle-window": "soon"},
		{auto: "true", "configmaps.exclude.reloader.stakater.com/reload": "app"},
	} {
		for _, applied := range []string{"", old, current} {
			f := facts(t, meta, applied, current, written, defaults(t))
			reports = append(reports, Build(f))
			f.NoTemplate, f.Template = "it has no pod template", nil
			reports = append(reports, Build(f))
			f = facts(t, meta, applied, current, written, defaults(t))
			f.Unselected = map[refs.Ref]string{{Kind: refs.ConfigMap, Name: "app"}: "none"}
			reports = append(reports, Build(f))
		}
	}
	for _, r := range reports {
		if _, ok := reason.Lookup(r.Reason); !ok {
			t.Errorf("verdict %q: reason %q is not the registry's", r.Verdict, r.Reason)
		}
		for _, n := range r.Notices {
			if _, ok := reason.Lookup(reason.Reason(n.Reason)); !ok {
				t.Errorf("notice %q: reason %q is not the registry's", n.Message, n.Reason)
			}
		}
		for _, s := range r.Sources {
			if _, ok := reason.Lookup(reason.Reason(s.Reason)); !ok && !decided[s.Reason] {
				t.Errorf("source %s/%s: reason %q is neither a decision's nor the registry's", s.Kind, s.Name, s.Reason)
			}
		}
	}
}

// explain's code names a reason of the registry only by its constant
// (reason.X): a string spelling one is an alias, which would not follow a
// rename.
func TestNoReasonSpelledOut(t *testing.T) {
	names := map[string]bool{}
	for _, i := range reason.All() {
		names[string(i.Reason)] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
					t.Errorf("%s: %q spells out the registry's reason: use reason.%s", fset.Position(lit.Pos()), s, s)
				}
			}
			return true
		})
	}
}
