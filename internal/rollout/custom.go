package rollout

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ArgoRollout reads an Argo Rollout's status.phase once its controller
// observed the spec: Healthy is complete, Degraded stalled (its message
// says why, e.g. ProgressDeadlineExceeded), anything else in progress.
// Argo writes status.observedGeneration as a string; both forms are read.
func ArgoRollout(u *unstructured.Unstructured) Status {
	if gen, ok := generationOf(u); ok {
		if st, ok := observed("Rollout", u.GetGeneration(), gen); !ok {
			return st
		}
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
	switch phase {
	case "Healthy":
		return done
	case "Degraded":
		return Status{State: Stalled, Reason: withMessage("the Rollout is degraded", msg)}
	case "":
		return progressing("the Rollout has no phase yet")
	}
	return progressing("%s", withMessage("the Rollout is "+phase, msg))
}

// DeploymentConfig reads an OpenShift DeploymentConfig's Progressing
// condition: NewReplicationControllerAvailable is complete,
// ProgressDeadlineExceeded and RolloutCancelled are stalled.
func DeploymentConfig(u *unstructured.Unstructured) Status {
	if gen, ok := generationOf(u); ok {
		if st, ok := observed("DeploymentConfig", u.GetGeneration(), gen); !ok {
			return st
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Progressing" {
			continue
		}
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		switch reason {
		case "NewReplicationControllerAvailable":
			return done
		case progressDeadlineExceeded:
			return Status{State: Stalled, Reason: withMessage("progress deadline exceeded", msg)}
		case "RolloutCancelled":
			return Status{State: Stalled, Reason: withMessage("the rollout was cancelled", msg)}
		}
		return progressing("%s", withMessage("progressing", msg))
	}
	return progressing("no Progressing condition yet")
}

// generationOf reads status.observedGeneration as a number or a string.
func generationOf(u *unstructured.Unstructured) (int64, bool) {
	v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "observedGeneration")
	if !found {
		return 0, false
	}
	switch g := v.(type) {
	case int64:
		return g, true
	case float64:
		return int64(g), true
	case string:
		n, err := strconv.ParseInt(g, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func withMessage(s, msg string) string {
	if msg == "" {
		return s
	}
	return s + ": " + msg
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }
