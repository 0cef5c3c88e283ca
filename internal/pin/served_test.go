package pin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubetesting "k8s.io/client-go/testing"
)

// Pinning is refused, naming what is missing, where the API server serves
// admissionregistration.k8s.io/v1 without MutatingAdmissionPolicy (1.30
// to 1.35) or does not serve the group version at all.
func TestRefusal(t *testing.T) {
	vap := metav1.APIResource{Name: "validatingadmissionpolicies", Kind: "ValidatingAdmissionPolicy"}
	mapol := metav1.APIResource{Name: "mutatingadmissionpolicies", Kind: "MutatingAdmissionPolicy"}
	for _, tc := range []struct {
		name    string
		served  []*metav1.APIResourceList
		refused bool
	}{
		{"1.36 and later", []*metav1.APIResourceList{{GroupVersion: policyGroupVersion, APIResources: []metav1.APIResource{vap, mapol}}}, false},
		{"1.35", []*metav1.APIResourceList{{GroupVersion: policyGroupVersion, APIResources: []metav1.APIResource{vap}}}, true},
		{"no admissionregistration.k8s.io/v1", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc := &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{Resources: tc.served}}
			why, err := Refusal(dc)
			if err != nil {
				t.Fatal(err)
			}
			if refused := why != ""; refused != tc.refused || (refused && !strings.Contains(why, "MutatingAdmissionPolicy")) {
				t.Errorf("Refusal = %q, want refused %v, naming MutatingAdmissionPolicy", why, tc.refused)
			}
		})
	}
}
