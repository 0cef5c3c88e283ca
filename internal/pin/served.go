package pin

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// policyGroupVersion serves MutatingAdmissionPolicy from Kubernetes 1.36.
const policyGroupVersion = "admissionregistration.k8s.io/v1"

// Refusal says why pinning cannot work against the API server dc asks:
// it does not serve MutatingAdmissionPolicy, so no policy can point new
// pods at the copies, which would cost their bytes and undo nothing.
// Empty when it serves it; an error when the API server could not be
// asked.
func Refusal(dc discovery.ServerResourcesInterface) (string, error) {
	list, err := dc.ServerResourcesForGroupVersion(policyGroupVersion)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	if err == nil {
		for _, r := range list.APIResources {
			if r.Kind == "MutatingAdmissionPolicy" {
				return "", nil
			}
		}
	}
	return "the API server does not serve MutatingAdmissionPolicy (" + policyGroupVersion + ", Kubernetes 1.36 and later), so no policy can point new pods at the copies", nil
}

// RefusalAt is Refusal of the API server rc reaches, as Ripple asks it at
// start and explain asks it for the Ripple it explains.
func RefusalAt(rc *rest.Config) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return "", err
	}
	why, err := Refusal(dc)
	if err != nil {
		return "", fmt.Errorf("asking the API server whether it serves MutatingAdmissionPolicy, which --pinning needs: %w", err)
	}
	return why, nil
}
