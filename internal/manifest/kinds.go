package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typedKinds are the kinds decoded to client-go types, in the versions the
// controller watches. Older versions (extensions/v1beta1) stay
// unstructured, as the controller never sees them either.
var typedKinds = map[schema.GroupVersionKind]func() client.Object{
	appsv1.SchemeGroupVersion.WithKind("Deployment"):  func() client.Object { return &appsv1.Deployment{} },
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"): func() client.Object { return &appsv1.StatefulSet{} },
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"):   func() client.Object { return &appsv1.DaemonSet{} },
	batchv1.SchemeGroupVersion.WithKind("CronJob"):    func() client.Object { return &batchv1.CronJob{} },
	batchv1.SchemeGroupVersion.WithKind("Job"):        func() client.Object { return &batchv1.Job{} },
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):   func() client.Object { return &corev1.ConfigMap{} },
	corev1.SchemeGroupVersion.WithKind("Secret"):      func() client.Object { return &corev1.Secret{} },
}

// unstructuredKinds are the kinds Ripple reads that stay unstructured, in
// any version: the controller reads them so, without their modules.
var unstructuredKinds = map[schema.GroupKind]bool{
	{Group: "argoproj.io", Kind: "Rollout"}:                            true,
	{Group: "apps.openshift.io", Kind: "DeploymentConfig"}:             true,
	{Group: "secrets-store.csi.x-k8s.io", Kind: "SecretProviderClass"}: true,
}

// mergeStringData moves a Secret's stringData into its data, as the API
// server does on write (stringData wins), so that the Secret's digest is
// the one the cluster will have.
func mergeStringData(obj client.Object) {
	s, ok := obj.(*corev1.Secret)
	if !ok || len(s.StringData) == 0 {
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}
