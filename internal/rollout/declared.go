package rollout

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripple-dev/ripple/internal/declared"
)

// Declared reads a declared kind's rollout by its ready rule, once the
// observed generation (a number or a string) has caught up: its condition
// is "True", or its updated and available replicas reach the desired
// count. A declared kind has no rule for a stalled rollout: one that never
// completes is held up to --rollout-timeout.
func Declared(u *unstructured.Unstructured, r declared.Ready) Status {
	gen, ok := int64At(u, declared.Path(r.ObservedGeneration))
	if !ok {
		return progressing("no %s yet", r.ObservedGeneration)
	}
	if st, ok := observed(u.GetKind(), u.GetGeneration(), gen); !ok {
		return st
	}
	if r.Condition != "" {
		return condition(u, r.Condition)
	}
	want, _ := int64At(u, declared.Path(r.Replicas.Desired))
	updated, _ := int64At(u, declared.Path(r.Replicas.Updated))
	available, _ := int64At(u, declared.Path(r.Replicas.Available))
	if updated < want || available < want {
		return progressing("%d of %d replicas updated, %d available", updated, want, available)
	}
	return done
}

// condition is complete when status.conditions has typ with status True.
func condition(u *unstructured.Unstructured, typ string) Status {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != typ {
			continue
		}
		if m["status"] == "True" {
			return done
		}
		msg, _ := m["message"].(string)
		return progressing("%s", withMessage("condition "+typ+" is not True", msg))
	}
	return progressing("no %s condition yet", typ)
}

// int64At reads an integer field, written as a number or a string.
func int64At(u *unstructured.Unstructured, path []string) (int64, bool) {
	v, found, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	if !found {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}
