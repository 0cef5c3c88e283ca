package workload

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RolloutGVK and DeploymentConfigGVK are the optional kinds, read as
// unstructured objects so that neither Argo's nor OpenShift's modules are
// needed.
var (
	RolloutGVK          = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}
	DeploymentConfigGVK = schema.GroupVersionKind{Group: "apps.openshift.io", Version: "v1", Kind: "DeploymentConfig"}
)

// RolloutRestart is the rollout-strategy annotation value that restarts a
// Rollout (spec.restartAt) instead of changing its template.
const RolloutRestart = "restart"

// unstructuredKind is a kind read as unstructured objects of its group,
// version and kind: the optional kinds and the declared ones, whose Go
// types Ripple does not import.
type unstructuredKind struct{ gvk schema.GroupVersionKind }

func (k unstructuredKind) New() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.gvk)
	return u
}

func (k unstructuredKind) NewList() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	return l
}

// object is obj as an unstructured object of the kind.
func (k unstructuredKind) object(obj client.Object) (*unstructured.Unstructured, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != k.gvk {
		return nil, fmt.Errorf("%s: unexpected object %T", k.gvk.Kind, obj)
	}
	return u, nil
}

// podTemplateAt converts the pod template at path (named field in
// messages); nil when there is none. The result does not point into obj.
func (k unstructuredKind) podTemplateAt(obj client.Object, path []string, field string) (*corev1.PodTemplateSpec, error) {
	u, err := k.object(obj)
	if err != nil {
		return nil, err
	}
	m, found, err := unstructured.NestedMap(u.Object, path...)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %s: %w", k.gvk.Kind, u.GetNamespace(), u.GetName(), field, err)
	}
	if !found {
		return nil, nil
	}
	tpl := &corev1.PodTemplateSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, tpl); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %s is not a pod template: %w", k.gvk.Kind, u.GetNamespace(), u.GetName(), field, err)
	}
	return tpl, nil
}

// custom is a kind served by a CRD or an aggregated API, with its pod
// template at spec.template.
type custom struct{ unstructuredKind }

// DeploymentConfig rolls an OpenShift apps.openshift.io/v1
// DeploymentConfig by patching its pod template (its ConfigChange trigger
// then deploys).
var DeploymentConfig Kind = custom{unstructuredKind{DeploymentConfigGVK}}

func (k custom) Name() string                     { return k.gvk.Kind }
func (k custom) KeepsTemplate(client.Object) bool { return false }

// RollsWithTemplate: a DeploymentConfig deploys on a template change (its
// ConfigChange trigger, which Ripple's own write relies on too), and an
// Argo Rollout (the embedding rollout) rolls on one.
func (k custom) RollsWithTemplate() bool { return true }

// PodTemplate converts spec.template; the result does not point into obj.
func (k custom) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	return k.podTemplateAt(obj, []string{"spec", "template"}, "spec.template")
}

func (k custom) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	var spec map[string]any
	if u.Template != nil {
		uo, err := k.object(obj)
		if err != nil {
			return Result{}, err
		}
		old, err := k.PodTemplate(obj)
		if err != nil {
			return Result{}, err
		}
		raw, err := templateJSON(uo, []string{"spec", "template"})
		if err != nil {
			return Result{}, err
		}
		// Written on the template as stored (stored.go), so that no field
		// Ripple's types do not know is lost.
		diff, err := k.reloadPatch(obj, "spec.template", raw, old, u.Template)
		if err != nil {
			return Result{}, err
		}
		spec = map[string]any{"template": diff}
	}
	return Result{}, mergePatch(ctx, c, obj, spec, u.Annotations)
}

// mergePatch writes spec fields and annotations as one JSON merge patch
// (custom resources take no strategic merge), locked on obj's
// resourceVersion so that a stale decision fails with a conflict.
func mergePatch(ctx context.Context, c client.Client, obj client.Object, spec map[string]any, annotations map[string]*string) error {
	var body map[string]any
	if spec != nil {
		body = map[string]any{"spec": spec}
	}
	return patchAt(ctx, c, obj, body, annotations)
}

// RolloutOptions configure the Argo Rollout kind.
type RolloutOptions struct {
	// StrategyKey is Reloader's rollout-strategy annotation.
	StrategyKey string
	// Reader reads a workloadRef's Deployment (the cache).
	Reader client.Reader
	// Now is the restartAt time.
	Now func() time.Time
}

// NewRollout returns the Argo Rollout kind: the pod template is patched,
// or with rollout-strategy "restart" spec.restartAt is set and the
// template left alone (for GitOps). A Rollout that takes its template from
// a Deployment (spec.workloadRef) gets the change on that Deployment's
// template, which Argo then rolls out.
func NewRollout(o RolloutOptions) Kind { return rollout{custom{unstructuredKind{RolloutGVK}}, o} }

type rollout struct {
	custom
	o RolloutOptions
}

func (k rollout) restarts(obj client.Object) bool {
	return strings.TrimSpace(obj.GetAnnotations()[k.o.StrategyKey]) == RolloutRestart
}

func (k rollout) KeepsTemplate(obj client.Object) bool { return k.restarts(obj) }

// TemplateRef returns the name of the Deployment a Rollout takes its
// template from (spec.workloadRef), if it does.
func (rollout) TemplateRef(obj client.Object) (string, bool) { return workloadRef(obj) }

func workloadRef(obj client.Object) (string, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return "", false
	}
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "workloadRef", "kind")
	name, _, _ := unstructured.NestedString(u.Object, "spec", "workloadRef", "name")
	return name, kind == "Deployment" && name != ""
}

// PodTemplate is nil for a Rollout with a workloadRef: its template is
// its Deployment's (Template reads it).
func (k rollout) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	if _, ok := workloadRef(obj); ok {
		return nil, nil
	}
	return k.custom.PodTemplate(obj)
}

func (k rollout) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	if u.Template != nil && k.restarts(obj) {
		restart := map[string]any{"restartAt": k.o.Now().UTC().Format(time.RFC3339)}
		return Result{}, mergePatch(ctx, c, obj, restart, u.Annotations)
	}
	name, ok := workloadRef(obj)
	if !ok || u.Template == nil {
		return k.custom.Write(ctx, c, obj, u)
	}
	d := &appsv1.Deployment{}
	if err := k.o.Reader.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, d); err != nil {
		return Result{}, fmt.Errorf("reading the workloadRef Deployment %s: %w", name, err)
	}
	if _, err := Deployment.Write(ctx, c, d, Update{Template: u.Template}); err != nil {
		return Result{}, fmt.Errorf("patching the workloadRef Deployment %s: %w", name, err)
	}
	if len(u.Annotations) == 0 {
		return Result{}, nil
	}
	return Result{}, mergePatch(ctx, c, obj, nil, u.Annotations)
}
