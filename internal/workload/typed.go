package workload

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typed adapts a built-in kind whose pod template is a typed field and whose
// reload is a patch of that template.
type typed[T client.Object] struct {
	name     string
	newObj   func() T
	newList  func() client.ObjectList
	template func(T) *corev1.PodTemplateSpec
	// paused is spec.paused, for kinds that have it.
	paused func(T) *bool
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
	return Result{}, patch(ctx, c, obj, u, func(o client.Object) bool {
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
	})
}

// pausable is a typed kind with spec.paused.
type pausable[T client.Object] struct{ typed[T] }

func (k pausable[T]) Paused(obj client.Object) bool {
	o, ok := obj.(T)
	return ok && *k.paused(o)
}
