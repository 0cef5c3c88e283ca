package history

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The annotations and labels a workload controller puts on its revisions.
const (
	deploymentRevision        = "deployment.kubernetes.io/revision"
	deploymentRevisionHistory = "deployment.kubernetes.io/revision-history"
	deploymentHashLabel       = "pod-template-hash"
	rolloutRevision           = "rollout.argoproj.io/revision"
	rolloutRevisionHistory    = "rollout.argoproj.io/revision-history"
	rolloutHashLabel          = "rollouts-pod-template-hash"
	controllerRevisionLabel   = "controller-revision-hash"
)

// replicaSetKeys are where a controller of ReplicaSets numbers them.
type replicaSetKeys struct{ revision, history, hashLabel string }

var (
	deploymentKeys = replicaSetKeys{deploymentRevision, deploymentRevisionHistory, deploymentHashLabel}
	rolloutKeys    = replicaSetKeys{rolloutRevision, rolloutRevisionHistory, rolloutHashLabel}
)

// FromReplicaSets are the revisions of a Deployment (rollout false) or an
// Argo Rollout (rollout true) held by rss, its ReplicaSets. A ReplicaSet
// without a readable revision number is left out.
func FromReplicaSets(rss []appsv1.ReplicaSet, rollout bool) []Revision {
	keys := deploymentKeys
	if rollout {
		keys = rolloutKeys
	}
	var out []Revision
	for i := range rss {
		rs := &rss[i]
		n, err := strconv.ParseInt(rs.Annotations[keys.revision], 10, 64)
		if err != nil {
			continue
		}
		tpl := rs.Spec.Template.DeepCopy()
		delete(tpl.Labels, keys.hashLabel)
		out = append(out, Revision{
			Number: n, Earlier: numbers(rs.Annotations[keys.history]), Object: "ReplicaSet/" + rs.Name,
			Created: rs.CreationTimestamp.Time, Template: tpl, Annotations: rs.Annotations,
		})
	}
	return out
}

// numbers reads a revision-history annotation: "1,3".
func numbers(v string) []int64 {
	var out []int64
	for _, s := range strings.Split(v, ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// FromControllerRevisions are the revisions of a StatefulSet or a
// DaemonSet held by crs, its ControllerRevisions. Their data is the patch
// that restores the workload's pod template; one that does not decode
// is an error naming it.
func FromControllerRevisions(crs []appsv1.ControllerRevision) ([]Revision, error) {
	var out []Revision
	for i := range crs {
		cr := &crs[i]
		var data struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(cr.Data.Raw, &data); err != nil {
			return nil, fmt.Errorf("reading the pod template of ControllerRevision %s: %w", cr.Name, err)
		}
		tpl := &data.Spec.Template
		delete(tpl.Labels, controllerRevisionLabel)
		out = append(out, Revision{
			Number: cr.Revision, Object: "ControllerRevision/" + cr.Name,
			Created: cr.CreationTimestamp.Time, Template: tpl, Annotations: cr.Annotations,
		})
	}
	return out, nil
}
