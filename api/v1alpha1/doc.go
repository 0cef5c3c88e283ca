// Package v1alpha1 is Ripple's API, group ripple.dev: ConfigRollout, the
// home of one change of a ConfigMap's or Secret's data, written by
// Ripple's change controller (docs/config-rollouts.md).
//
// +kubebuilder:object:generate=true
// +groupName=ripple.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "ripple.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder adds the API's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes adds ConfigRollout and its list, with the group version's
// meta types (options, status, watch events), to s.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ConfigRollout{}, &ConfigRolloutList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
