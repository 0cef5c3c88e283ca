package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// autoAnnotation opts a workload in to reloads on every config it
// references, in Reloader's and Ripple's vocabulary alike.
const autoAnnotation = "reloader.stakater.com/auto"

func benchMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{benchLabel: "true"}}
}

// namespace returns a benchmark namespace.
func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchLabel: "true"}}}
}

// configMap returns a ConfigMap holding a version and a payload of size
// bytes.
func configMap(ns, name string, payload []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: benchMeta(ns, name),
		Data:       map[string]string{"version": "0", "payload": string(payload)},
	}
}

// secret returns a Secret holding a version and a payload.
func secret(ns, name string, payload []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: benchMeta(ns, name),
		Data:       map[string][]byte{"version": []byte("0"), "payload": payload},
	}
}

// deployment returns a one-replica Deployment that opts in to reloads and
// loads the given ConfigMaps and Secrets with envFrom, the commonest way to
// use them.
func deployment(ns, name string, configMaps, secrets []string) *appsv1.Deployment {
	labels := map[string]string{"app": name, benchLabel: "true"}
	var from []corev1.EnvFromSource
	for _, cm := range configMaps {
		from = append(from, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}})
	}
	for _, s := range secrets {
		from = append(from, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s}}})
	}
	d := &appsv1.Deployment{
		ObjectMeta: benchMeta(ns, name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:    "app",
						Image:   "registry.invalid/app:1", // kwok runs no container
						EnvFrom: from,
					}},
					// kwok's fake nodes are tainted; this lets the pods on them.
					Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
	d.Annotations = map[string]string{autoAnnotation: "true"}
	maps.Copy(d.Annotations, workloadAnnotations)
	return d
}

// workloadAnnotations are added to every Deployment (--workload-annotations).
var workloadAnnotations map[string]string

// annotateWorkloads sets workloadAnnotations from "k=v,k=v".
func annotateWorkloads(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	workloadAnnotations = map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", kv)
		}
		workloadAnnotations[k] = v
	}
	return nil
}

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns the
// first error. Objects are created and dropped one at a time, so creating
// 10,000 of them costs the benchmark no memory.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := retry(ctx, func() error { return fn(ctx, i) }); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// retry retries calls that failed for reasons a loaded local API server
// gives under a creation burst; "already exists" after a retried create
// means the first attempt went through.
func retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := range 8 {
		err = f()
		switch {
		case err == nil, apierrors.IsAlreadyExists(err) && attempt > 0:
			return nil
		case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
			apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsConflict(err):
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
	return err
}

// creator creates the benchmark's objects with a high-QPS client.
type creator struct {
	cs      kubernetes.Interface
	workers int
}

func (c creator) namespaces(ctx context.Context, names []string) error {
	return parallel(ctx, len(names), c.workers, func(ctx context.Context, i int) error {
		_, err := c.cs.CoreV1().Namespaces().Create(ctx, namespace(names[i]), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// configMaps creates n ConfigMaps named by name(i) in ns(i), with
// payload(i).
func (c creator) configMaps(ctx context.Context, n int, ns, name func(int) string, payload func(int) []byte) error {
	return parallel(ctx, n, c.workers, func(ctx context.Context, i int) error {
		_, err := c.cs.CoreV1().ConfigMaps(ns(i)).Create(ctx, configMap(ns(i), name(i), payload(i)), metav1.CreateOptions{})
		return err
	})
}

// secrets creates n Secrets; payload(i) is called per Secret so that large
// payloads can differ without being kept.
func (c creator) secrets(ctx context.Context, n int, ns, name func(int) string, payload func(int) []byte) error {
	return parallel(ctx, n, c.workers, func(ctx context.Context, i int) error {
		_, err := c.cs.CoreV1().Secrets(ns(i)).Create(ctx, secret(ns(i), name(i), payload(i)), metav1.CreateOptions{})
		return err
	})
}

// constant is the payload function of configs that all carry b.
func constant(b []byte) func(int) []byte { return func(int) []byte { return b } }

// deployments creates n Deployments built by build(i).
func (c creator) deployments(ctx context.Context, n int, build func(int) *appsv1.Deployment) error {
	return parallel(ctx, n, c.workers, func(ctx context.Context, i int) error {
		d := build(i)
		_, err := c.cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
}

// configRef names a config the benchmark changes.
type configRef struct {
	Secret    bool
	Namespace string
	Name      string
}

func (r configRef) String() string {
	kind := "configmap"
	if r.Secret {
		kind = "secret"
	}
	return kind + "/" + r.Namespace + "/" + r.Name
}

// changeData changes a config's data with a merge patch that sets its
// version (and replaces its payload when payload is not nil). A merge patch
// without a resourceVersion cannot conflict, so concurrent updates of one
// config in the burst scenario all land.
func changeData(ctx context.Context, cs kubernetes.Interface, ref configRef, version int, payload []byte) error {
	var body []byte
	if ref.Secret {
		if payload != nil {
			body = fmt.Appendf(nil, `{"data":{"version":%q,"payload":%q}}`, b64(fmt.Sprint(version)), b64(string(payload)))
		} else {
			body = fmt.Appendf(nil, `{"data":{"version":%q}}`, b64(fmt.Sprint(version)))
		}
		_, err := cs.CoreV1().Secrets(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	}
	if payload != nil {
		body = fmt.Appendf(nil, `{"data":{"version":"%d","payload":%q}}`, version, payload)
	} else {
		body = fmt.Appendf(nil, `{"data":{"version":"%d"}}`, version)
	}
	_, err := cs.CoreV1().ConfigMaps(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// editMetadata sets a label or an annotation, and nothing else, on a
// config or a workload: an edit that must not roll anything.
func editMetadata(ctx context.Context, cs kubernetes.Interface, kind, ns, name string, label bool, n int) error {
	field := "annotations"
	if label {
		field = "labels"
	}
	body := fmt.Appendf(nil, `{"metadata":{%q:{"ripple-bench/edit":"%d"}}}`, field, n)
	var err error
	switch kind {
	case "configmap":
		_, err = cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	case "secret":
		_, err = cs.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	default:
		_, err = cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	return err
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
