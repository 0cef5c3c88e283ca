package app

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// forbiddenRequest finds the verb and the scope in the API server's
// message of a forbidden request: `cannot list resource "configmaps" in
// API group "" at the cluster scope` or `... in the namespace "shop"`.
var forbiddenRequest = regexp.MustCompile(`cannot (\w+) resource "[^"]*" in API group "[^"]*" (at the cluster scope|in the namespace "([^"]*)")`)

// watchErrorHandler logs an informer's failed list or watch by resource
// and the RBAC rule it lacks, where client-go names the Go type
// ("failed to list *v1.ConfigMap"); other errors it leaves to client-go.
// The informer retries with backoff either way, so a rule granted later
// is picked up without a restart.
func watchErrorHandler(ctx context.Context, r *toolscache.Reflector, err error) {
	if msg, ok := forbiddenMessage(err); ok {
		klog.FromContext(ctx).Error(err, msg)
		return
	}
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
}

// forbiddenMessage says which resource err could not be read and which
// rule grants it, when err is a forbidden error.
func forbiddenMessage(err error) (string, bool) {
	var status apierrors.APIStatus
	if !apierrors.IsForbidden(err) || !errors.As(err, &status) {
		return "", false
	}
	d := status.Status().Details
	resource, group := "the resource", ""
	if d != nil && d.Kind != "" {
		resource, group = d.Kind, d.Group
	}
	verb, where, grant := "list", "", "a ClusterRole or Role"
	if m := forbiddenRequest.FindStringSubmatch(status.Status().Message); m != nil {
		verb = m[1]
		if m[3] != "" {
			where, grant = fmt.Sprintf(" in namespace %s", m[3]), fmt.Sprintf("a Role in namespace %s", m[3])
		} else {
			where, grant = " cluster-wide", "a ClusterRole"
		}
	}
	return fmt.Sprintf("cannot %s %s%s: Ripple's ServiceAccount needs get, list and watch on %s (API group %q) through %s; retrying",
		verb, resource, where, resource, group, grant), true
}
