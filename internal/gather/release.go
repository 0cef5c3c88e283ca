package gather

import (
	"context"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The annotations Helm 3 writes on every object of a release, and the
// labels of its release records (Secrets, Helm's default storage).
const (
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// ReleaseIndex is the cache's field index of Helm's release records (the
// Secrets labelled owner=helm) by their release's name.
const ReleaseIndex = "helm.release"

// ReleaseIndexValue is the ReleaseIndex value of o: its release's name,
// when it is a release record.
func ReleaseIndexValue(o client.Object) []string {
	if l := o.GetLabels(); l["owner"] == "helm" && l["name"] != "" {
		return []string{l["name"]}
	}
	return nil
}

// PendingRelease names the Helm release of obj when the release is in the
// middle of an install, upgrade or rollback: its newest release record (a
// Secret labelled owner=helm and name=<release> in obj's namespace, the
// one with the highest version label) has a pending-* status. Helm writes
// that record before it writes the release's objects, and marks it
// deployed (or failed) after, so a config and the workload's template
// changed by one upgrade are both written while it is pending. Empty when
// obj belongs to no release of its own namespace, when the release is not
// pending, or when the records cannot be read (Secrets not watched, no
// right to list them): the settle window alone then decides.
// With indexed, r is a cache with ReleaseIndex: the release's records are
// found without reading the namespace's other Secrets, so every reconcile
// of a release's workload may ask.
func PendingRelease(ctx context.Context, r client.Reader, obj client.Object, indexed bool) string {
	ann := obj.GetAnnotations()
	name := ann[helmReleaseName]
	if name == "" || ann[helmReleaseNamespace] != obj.GetNamespace() {
		return ""
	}
	var records corev1.SecretList
	match := client.ListOption(client.MatchingLabels{"owner": "helm", "name": name})
	if indexed {
		match = client.MatchingFields{ReleaseIndex: name}
	}
	if err := r.List(ctx, &records, client.InNamespace(obj.GetNamespace()), match); err != nil {
		return ""
	}
	newest, status := -1, ""
	for _, s := range records.Items {
		if v, err := strconv.Atoi(s.Labels["version"]); err == nil && v > newest {
			newest, status = v, s.Labels["status"]
		}
	}
	if !strings.HasPrefix(status, "pending-") {
		return ""
	}
	return name + " (" + status + ")"
}
