package workload

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typed adapts a built-in kind whose pod template is a typed field. Its
// reload is a server-side apply of Ripple's fields (apply.go) when the kind
// can extract them, else a patch of the template.
type typed[T client.Object] struct {
	name     string
	newObj   func() T
	newList  func() client.ObjectList
	template func(T) *corev1.PodTemplateSpec
	// paused is spec.paused, for kinds that have it.
	paused func(T) *bool
	// applyVersion, when set, is the kind's apiVersion, and its reload is
	// a server-side apply of Ripple's fields (apply.go); empty writes by
	// patch.
	applyVersion string
}

func (k typed[T]) Name() string                     { return k.name }
func (k typed[T]) New() client.Object               { return k.newObj() }
func (k typed[T]) NewList() client.ObjectList       { return k.newList() }
func (k typed[T]) KeepsTemplate(client.Object) bool { return false }

// RollsWithTemplate: a Deployment, StatefulSet or DaemonSet rolls on any
// template change (an OnDelete one on neither Ripple's nor anyone's).
func (k typed[T]) RollsWithTemplate() bool { return true }

func (k typed[T]) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	o, ok := obj.(T)
	if !ok {
		return nil, fmt.Errorf("unexpected object type %T for a %s", obj, k.name)
	}
	return k.template(o), nil
}

func (k typed[T]) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	o, ok := obj.(T)
	if !ok {
		return Result{}, fmt.Errorf("unexpected object type %T for a %s", obj, k.name)
	}
	if old := k.template(o); k.applyVersion != "" && supports(old, u.Template) {
		return Result{}, k.applier().write(ctx, c, obj, old.DeepCopy(), u, k.set)
	}
	return Result{}, patch(ctx, c, obj, u, func(o client.Object) bool { return k.set(o, u) })
}

// set writes the template and spec.paused of u on o.
func (k typed[T]) set(o client.Object, u Update) bool {
	w, ok := o.(T)
	if !ok {
		return false
	}
	if u.Template != nil {
		*k.template(w) = *u.Template
	}
	if u.Paused != nil && k.paused != nil {
		*k.paused(w) = *u.Paused
	}
	return true
}

func (k typed[T]) applier() applier {
	ap := applier{
		extract: func(obj client.Object, manager string) (map[string]any, error) {
			o, ok := obj.(T)
			if !ok {
				return nil, fmt.Errorf("unexpected object type %T for a %s", obj, k.name)
			}
			var paused *bool
			if k.paused != nil {
				paused = k.paused(o)
			}
			return ownedFields(o, k.applyVersion, k.name, k.template(o), paused, manager)
		},
		templatePath: []string{"spec", "template"},
	}
	if k.paused != nil {
		ap.paused = func(obj client.Object) bool {
			o, ok := obj.(T)
			return ok && *k.paused(o)
		}
	}
	return ap
}

// pausable is a typed kind with spec.paused.
type pausable[T client.Object] struct{ typed[T] }

func (k pausable[T]) Paused(obj client.Object) bool {
	o, ok := obj.(T)
	return ok && *k.paused(o)
}
