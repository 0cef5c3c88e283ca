// Package v1alpha1 is Ripple's API, group ripple.dev: ConfigRollout, the
// home of one change of a ConfigMap's or Secret's data, written by
// Ripple's change controller (docs/config-rollouts.md).
//
// +kubebuilder:object:generate=true
// +groupName=ripple.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "ripple.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder adds the API's types to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
