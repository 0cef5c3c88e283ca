package main

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/lint"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/metainfo"
)

// offlineFrom is where the settings come from with -f.
const offlineFrom = "the defaults and the flags given (-f: no cluster is read)"

// explainFiles explains the workloads of the files given with -f, with
// the lint findings on them. Nothing reads the cluster, nor the kubeconfig:
// -n only names the namespace of the objects that have none. It fails when
// a finding printed is an error.
func (f *explainFlags) explainFiles(ctx context.Context, stdin io.Reader, stdout io.Writer, now func() time.Time) error {
	ns := f.overrides.Context.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	objs, err := manifest.Load(f.opts.files, stdin, ns)
	if err != nil {
		return err
	}
	settings, err := f.ripple.Resolve(metainfo.Info{})
	if err != nil {
		return usageError{err}
	}
	settings.From = offlineFrom
	reader := manifest.NewReader(objs)
	findings := fromLint(lint.Check(ctx, settings.Config.Keys, objs, settings.Config.DeclaredKinds...))
	e := explain.Explainer{Reader: reader, Settings: settings, Findings: explain.FindingsFor(findings), Now: now}
	kinds := explain.Kinds(settings, reader)
	if f.opts.all {
		list, err := e.All(ctx, kinds, "")
		if err != nil {
			return err
		}
		list.Findings = findings
		if f.opts.gitops != "" {
			return explain.PrintGitOps(stdout, f.opts.gitops, list.Items, settings)
		}
		if err := explain.PrintList(stdout, f.opts.output, list, true); err != nil {
			return err
		}
		return failOnErrors(findings)
	}
	if f.opts.config != nil {
		return f.explainFileConfig(ctx, e, kinds, ns, stdout)
	}
	kind, err := f.opts.findKind(kinds)
	if err != nil {
		return err
	}
	r, err := e.Explain(ctx, kind, ns, f.opts.name)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s is not in the files", f.opts.kind, ns, f.opts.name)
	}
	if err != nil {
		return err
	}
	if f.opts.gitops != "" {
		return explain.PrintGitOps(stdout, f.opts.gitops, []explain.Report{r}, settings)
	}
	if err := explain.Print(stdout, f.opts.output, r); err != nil {
		return err
	}
	return failOnErrors(r.Findings)
}

// explainFileConfig explains the config the argument names across the
// workloads of the files that use it. Offline there is no canary record
// and no ConfigRollout: what is left is its digest and their states.
func (f *explainFlags) explainFileConfig(ctx context.Context, e explain.Explainer, kinds []explain.Kind, ns string, stdout io.Writer) error {
	ref := *f.opts.config
	c, err := e.Change(ctx, kinds, ns, ref)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s is not in the files", ref.Kind, ns, ref.Name)
	}
	if err != nil {
		return err
	}
	return explain.PrintChange(stdout, f.opts.output, c)
}

// fromLint converts lint's findings to the report's.
func fromLint(in []lint.Finding) []explain.Finding {
	out := make([]explain.Finding, 0, len(in))
	for _, f := range in {
		out = append(out, explain.Finding{Severity: string(f.Severity), Object: f.Object, Key: f.Key, Message: f.Message})
	}
	return out
}

// failOnErrors fails when a finding is an error, for CI.
func failOnErrors(findings []explain.Finding) error {
	n := 0
	for _, f := range findings {
		if f.Severity == string(lint.Error) {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("1 finding is an error")
	}
	return fmt.Errorf("%d findings are errors", n)
}
