// Package lint finds mistakes in the Ripple (Reloader) annotations of a set
// of Kubernetes objects, such as the manifests `ripple explain -f` reads:
// misspelled keys, named reloads that match nothing, typed auto on a kind
// the workload does not use, patterns that do not compile, and keys put on
// the wrong kind of object.
//
// It is pure: it reads only the objects it is given, so what it reports
// about configs is about the configs in those objects. Messages name keys,
// objects and config names, never the data of a config.
package lint

import (
	"cmp"
	"context"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Severity is how bad a finding is.
type Severity string

const (
	// Error is a finding that makes Ripple ignore what the user wrote: an
	// unknown key, a pattern that does not compile.
	Error Severity = "error"
	// Warning is a finding that may be intended, or may depend on objects
	// outside the files.
	Warning Severity = "warning"
)

// Finding is one thing wrong with one object.
type Finding struct {
	Severity Severity `json:"severity"`
	// Object is the object at fault, as "Kind namespace/name" (or "Kind
	// name" for an object without a namespace), e.g. "Deployment shop/web".
	Object string `json:"object"`
	// Key is the annotation at fault, if any.
	Key string `json:"key,omitempty"`
	// Message says what is wrong, in a short sentence.
	Message string `json:"message"`
}

// HasErrors reports whether any finding is an Error.
func HasErrors(findings []Finding) bool {
	return slices.ContainsFunc(findings, func(f Finding) bool { return f.Severity == Error })
}

// Check returns the findings on objs, Ripple's annotations being keys, and
// the declared kinds (--workload-kinds) being workloads too. They are
// sorted by object, errors first, then by key and message.
func Check(ctx context.Context, keys annotation.Keys, objs []client.Object, kinds ...declared.Kind) []Finding {
	c := newChecker(keys, objs)
	for _, k := range kinds {
		c.workloads[k.GVK()] = workload.NewDeclared(k)
	}
	var out []Finding
	for _, obj := range objs {
		out = append(out, c.object(ctx, obj)...)
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(
			strings.Compare(a.Object, b.Object),
			cmp.Compare(rank(a.Severity), rank(b.Severity)),
			strings.Compare(a.Key, b.Key),
			strings.Compare(a.Message, b.Message),
		)
	})
	return out
}

// rank orders errors before warnings.
func rank(s Severity) int {
	if s == Error {
		return 0
	}
	return 1
}

// source is a config in the files.
type source struct {
	kind            refs.Kind
	namespace, name string
}

// checker holds what the checks need to know about all the objects.
type checker struct {
	keys annotation.Keys
	// known holds every key Ripple reads or writes; suggest is the same
	// keys sorted, for a stable "did you mean".
	known   map[string]bool
	suggest []string
	// homes says where each key Ripple reads belongs.
	homes map[string]home
	// prefix is Ripple's own key prefix, e.g. "ripple.dev".
	prefix string
	// workloads are the kinds Ripple rolls, by the exact version it reads.
	workloads map[schema.GroupVersionKind]workload.Kind
	// sources maps each config in the files to whether it carries the
	// match annotation, for search.
	sources map[source]bool
	// files reads the objects checked, as the API server would serve them:
	// a Rollout's spec.workloadRef Deployment is read through it.
	files client.Reader
}

func newChecker(keys annotation.Keys, objs []client.Object) *checker {
	c := &checker{
		keys:      keys,
		known:     map[string]bool{annotation.LastReloadedFrom: true},
		homes:     homes(keys),
		prefix:    strings.SplitN(keys.SettleWindow, "/", 2)[0],
		workloads: workloadKinds(keys),
		sources:   map[source]bool{},
		files:     manifest.NewReader(objs),
	}
	for _, k := range keys.All() {
		c.known[k] = true
	}
	for k := range c.known {
		c.suggest = append(c.suggest, k)
	}
	slices.Sort(c.suggest)
	for _, obj := range objs {
		gvk := kindOf(obj)
		if kind, ok := configKind(gvk); ok {
			s := source{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName()}
			c.sources[s] = annotation.IsTrue(obj.GetAnnotations()[keys.Match])
		}
	}
	return c
}

// deploymentGVK is the Deployment Ripple reads; a Rollout may take its pod
// template from one.
var deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")

// workloadKinds returns the kinds Ripple rolls. Only their pure
// PodTemplate is used, so the options that serve writes stay empty.
func workloadKinds(keys annotation.Keys) map[schema.GroupVersionKind]workload.Kind {
	return map[schema.GroupVersionKind]workload.Kind{
		deploymentGVK: workload.Deployment,
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"): workload.StatefulSet,
		appsv1.SchemeGroupVersion.WithKind("DaemonSet"):   workload.DaemonSet,
		batchv1.SchemeGroupVersion.WithKind("CronJob"):    workload.NewCronJob(workload.CronJobOptions{ModeKey: keys.CronJobReload}),
		batchv1.SchemeGroupVersion.WithKind("Job"):        workload.NewJob(workload.JobOptions{}),
		workload.RolloutGVK:                               workload.NewRollout(workload.RolloutOptions{StrategyKey: keys.RolloutStrategy}),
		workload.DeploymentConfigGVK:                      workload.DeploymentConfig,
	}
}

// configKind returns the kind of config gvk is, if it is one.
func configKind(gvk schema.GroupVersionKind) (refs.Kind, bool) {
	switch {
	case gvk == corev1.SchemeGroupVersion.WithKind(string(refs.ConfigMap)):
		return refs.ConfigMap, true
	case gvk == corev1.SchemeGroupVersion.WithKind(string(refs.Secret)):
		return refs.Secret, true
	case gvk.Group == "secrets-store.csi.x-k8s.io" && gvk.Kind == string(refs.SecretProviderClass):
		return refs.SecretProviderClass, true // any version
	}
	return "", false
}

// kindOf returns obj's kind, from its type when it is a typed object
// without type meta (as clients return them).
func kindOf(obj client.Object) schema.GroupVersionKind {
	if gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme); err == nil {
		return gvk
	}
	return obj.GetObjectKind().GroupVersionKind()
}

// object returns the findings on one object.
func (c *checker) object(ctx context.Context, obj client.Object) []Finding {
	gvk := kindOf(obj)
	o := &target{obj: obj, kind: gvk.Kind, apiVersion: gvk.GroupVersion().String(), name: name(gvk.Kind, obj)}
	if kind, ok := c.workloads[gvk]; ok {
		return c.workload(ctx, kind, o)
	}
	if _, ok := configKind(gvk); ok {
		o.config = true
	}
	return c.annotations(o, obj.GetAnnotations(), false)
}

// target is the object being checked.
type target struct {
	obj client.Object
	// kind is the object's kind, e.g. "Deployment"; name is how findings
	// name the object.
	kind, name string
	// apiVersion is the object's, e.g. "apps/v1".
	apiVersion string
	// workload or config is set when Ripple reloads the object or reads it
	// as a config.
	workload, config bool
}

// name is how findings name obj.
func name(kind string, obj client.Object) string {
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// finding builds a finding on o.
func (o *target) finding(s Severity, key, msg string) Finding {
	return Finding{Severity: s, Object: o.name, Key: key, Message: msg}
}
