package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/refs"
)

// The optional kinds' resources, served by the CRDs TestMain installs.
var (
	rolloutsGVR          = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	deploymentConfigsGVR = schema.GroupVersionResource{Group: "apps.openshift.io", Version: "v1", Resource: "deploymentconfigs"}
	spcGVR               = schema.GroupVersionResource{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Resource: "secretproviderclasses"}
	spcpsGVR             = schema.GroupVersionResource{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Resource: "secretproviderclasspodstatuses"}
)

// The names of the RBAC test's objects, in each namespace.
const (
	wlConfig     = "cfg"
	wlDeployment = "app"
	wlCronJob    = "cron"
	wlJob        = "job"
	wlRollout    = "rollout"
	wlDC         = "dc"
	wlSPC        = "spc"
	wlCSI        = "csi"
	wlSPCPS      = "csi-pod-spc"
)

// jobRecord names the ConfigMap, in Ripple's namespace, in which Ripple
// records the re-create of the Job in ns.
func jobRecord(ns string) string { return ns + "." + wlJob + ".ripple-recreate" }

// rbacWorkloads are one RBAC case's workloads, reloaded through the case's
// auto annotation, and what tells that each was reloaded.
type rbacWorkloads struct {
	t          *testing.T
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	optional   bool
	ignoreJobs bool
	// secret: the config is a Secret rather than a ConfigMap.
	secret     bool
	namespaces []string
	// prefix is the release's annotation prefix.
	prefix string
	// recordNS is Ripple's own namespace, which holds the Job re-create
	// records.
	recordNS string
	// The original Job's and the CronJob's UIDs, by namespace.
	jobUID, cronUID map[string]types.UID
	// restartPods are, with the restart methods, the UIDs of the pods of
	// the StatefulSets that are evicted and deleted, by namespace/name.
	restartPods map[string]types.UID
}

// newRBACWorkloads creates the config and the workloads in each namespace.
// In webhook mode they are created too: Ripple reads them to name the
// workloads a change concerns.
func newRBACWorkloads(t *testing.T, cs kubernetes.Interface, mode rbacMode, relNS string, namespaces []string, autoKey string) *rbacWorkloads {
	t.Helper()
	ctx := t.Context()
	w := &rbacWorkloads{
		t: t, cs: cs, dyn: dynamic.NewForConfigOrDie(api.Config), optional: mode.optional, ignoreJobs: mode.ignoreJobs,
		secret: mode.secretConfig, namespaces: namespaces, prefix: strings.TrimSuffix(autoKey, "/auto"), recordNS: relNS, jobUID: map[string]types.UID{}, cronUID: map[string]types.UID{},
	}
	auto := map[string]string{autoKey: "true"}
	for _, ns := range namespaces {
		w.writeConfig(ctx, ns, 0, true)
		w.plantCanaryRecord(ctx, ns)
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, testDeployment(autoKey, w.envFrom()), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cj, err := cs.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: wlCronJob, Annotations: auto},
			Spec: batchv1.CronJobSpec{
				// Never due while the test runs (and no controller runs it).
				Schedule:    "0 0 1 1 *",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: w.jobPodTemplate()}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.cronUID[ns] = cj.UID
		job, err := cs.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: wlJob, Annotations: auto},
			Spec:       batchv1.JobSpec{Template: w.jobPodTemplate()},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.jobUID[ns] = job.UID
		if !mode.ignoreJobs && !mode.webhook {
			w.plantJobLeftover(ctx, ns)
		}
		if mode.optional {
			w.createOptional(ctx, ns, autoKey)
		}
		if mode.restarts {
			w.createRestarted(ctx, ns, autoKey)
		}
	}
	return w
}

// createRestarted creates a StatefulSet with restart-method evict and one
// with delete, each with the one pod its controller would have made (no
// controller runs here), created before any change.
func (w *rbacWorkloads) createRestarted(ctx context.Context, ns, autoKey string) {
	w.t.Helper()
	if w.restartPods == nil {
		w.restartPods = map[string]types.UID{}
	}
	prefix := strings.TrimSuffix(autoKey, "/auto")
	for _, method := range []string{"evict", "delete"} {
		name := "restart-" + method
		labels := map[string]string{"app": name}
		sts, err := w.cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{autoKey: "true", prefix + "/restart-method": method}},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](1), ServiceName: name,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", EnvFrom: w.envFrom()}}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		pod, err := w.cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Labels: labels, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: sts.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		w.restartPods[ns+"/"+pod.Name] = pod.UID
	}
}

// createOptional creates a Rollout and a DeploymentConfig using the
// ConfigMap, and a Deployment mounting a SecretProviderClass with the pod
// status the CSI driver would write for it.
func (w *rbacWorkloads) createOptional(ctx context.Context, ns, autoKey string) {
	w.t.Helper()
	ref := "configMapRef"
	if w.secret {
		ref = "secretRef"
	}
	container := map[string]any{
		"name": "app", "image": "registry.example/app:1",
		"envFrom": []any{map[string]any{ref: map[string]any{"name": wlConfig}}},
	}
	template := func(app string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": app}},
			"spec":     map[string]any{"containers": []any{container}},
		}
	}
	objs := []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}{
		{rolloutsGVR, map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"name": wlRollout, "annotations": map[string]any{autoKey: "true"}},
			"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": map[string]any{"app": wlRollout}},
				"template": template(wlRollout),
			},
		}},
		{deploymentConfigsGVR, map[string]any{
			"apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig",
			"metadata": map[string]any{"name": wlDC, "annotations": map[string]any{autoKey: "true"}},
			"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"app": wlDC},
				"template": template(wlDC),
			},
		}},
		{spcGVR, map[string]any{
			"apiVersion": "secrets-store.csi.x-k8s.io/v1", "kind": "SecretProviderClass",
			"metadata": map[string]any{"name": wlSPC},
			"spec":     map[string]any{"provider": "vault", "parameters": map[string]any{"objects": "secret/app"}},
		}},
		{spcpsGVR, map[string]any{
			"apiVersion": "secrets-store.csi.x-k8s.io/v1", "kind": "SecretProviderClassPodStatus",
			"metadata": map[string]any{"name": wlSPCPS},
			"status": map[string]any{
				"podName": "csi-pod", "secretProviderClassName": wlSPC, "mounted": true,
				"targetPath": "/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/secrets/mount",
				"objects":    []any{map[string]any{"id": "secret/app", "version": "0"}},
			},
		}},
	}
	for _, o := range objs {
		if _, err := w.dyn.Resource(o.gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: o.obj}, metav1.CreateOptions{}); err != nil {
			w.t.Fatalf("creating %s: %v", o.gvr.Resource, err)
		}
	}
	labels := map[string]string{"app": wlCSI}
	csi := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: wlCSI, Annotations: map[string]string{autoKey: "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "app", Image: "registry.example/app:1",
						VolumeMounts: []corev1.VolumeMount{{Name: "secrets", MountPath: "/mnt/secrets", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "secrets", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
						Driver: "secrets-store.csi.k8s.io", ReadOnly: ptr.To(true),
						VolumeAttributes: map[string]string{"secretProviderClass": wlSPC},
					}}}},
				},
			},
		},
	}
	if _, err := w.cs.AppsV1().Deployments(ns).Create(ctx, csi, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// envFrom takes the environment from the config.
func (w *rbacWorkloads) envFrom() []corev1.EnvFromSource {
	ref := corev1.LocalObjectReference{Name: wlConfig}
	if w.secret {
		return []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref}}}
	}
	return []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref}}}
}

// jobPodTemplate is a Job's pod template using the config.
func (w *rbacWorkloads) jobPodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "job", Image: "registry.example/job:1", EnvFrom: w.envFrom()}},
	}}
}

// plantCanaryRecord leaves the record an earlier Ripple kept of the
// config's canaried change in ns, of data long gone: the change controller
// reads it when the config's change needs a canary and deletes it, so the
// rules on records in Ripple's namespace are proven.
func (w *rbacWorkloads) plantCanaryRecord(ctx context.Context, ns string) {
	w.t.Helper()
	ref := refs.Ref{Kind: refs.ConfigMap, Name: wlConfig}
	if w.secret {
		ref.Kind = refs.Secret
	}
	data, err := json.Marshal(canary.State{Namespace: ns, Config: ref, Digest: "0000", Phase: canary.Halted, Since: time.Now(), Why: "before the upgrade"})
	if err != nil {
		w.t.Fatal(err)
	}
	_, err = w.cs.CoreV1().ConfigMaps(w.recordNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: canary.RecordName(ns, ref)}, Data: map[string]string{canary.RecordKey: string(data)},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
}

// plantJobLeftover leaves a ConfigMap of the Job's re-create record name
// in Ripple's namespace, as an earlier attempt can: the reload deletes it
// and records its own (the job-records Role has no update), deleted once
// the Job is re-created. Without the record label, Ripple's start does not list
// (and drop) it first.
func (w *rbacWorkloads) plantJobLeftover(ctx context.Context, ns string) {
	w.t.Helper()
	_, err := w.cs.CoreV1().ConfigMaps(w.recordNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: jobRecord(ns)}, Data: map[string]string{"left": "by an earlier attempt"},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
}

// writeConfig creates the config in ns, or updates it, with version i.
func (w *rbacWorkloads) writeConfig(ctx context.Context, ns string, i int, create bool) {
	w.t.Helper()
	// Canaried on every workload it rolls, with no bake: they all roll at
	// once (no controller completes a rollout here), and the canary record
	// is read and written, so its rules are proven.
	meta := metav1.ObjectMeta{Name: wlConfig, Namespace: ns, Annotations: map[string]string{w.prefix + "/canary": "100%", w.prefix + "/canary-bake": "0s"}}
	data := map[string]string{"v": fmt.Sprint(i)}
	var err error
	switch {
	case w.secret && create:
		_, err = w.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: data}, metav1.CreateOptions{})
	case w.secret:
		_, err = w.cs.CoreV1().Secrets(ns).Update(ctx, &corev1.Secret{ObjectMeta: meta, StringData: data}, metav1.UpdateOptions{})
	case create:
		_, err = w.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: data}, metav1.CreateOptions{})
	default:
		_, err = w.cs.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: data}, metav1.UpdateOptions{})
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

// change changes the config in every namespace to version i, and with the
// optional kinds the versions the CSI driver reports mounted.
func (w *rbacWorkloads) change(ctx context.Context, i int) {
	w.t.Helper()
	for _, ns := range w.namespaces {
		w.writeConfig(ctx, ns, i, false)
		if !w.optional {
			continue
		}
		ri := w.dyn.Resource(spcpsGVR).Namespace(ns)
		st, err := ri.Get(ctx, wlSPCPS, metav1.GetOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		objects := []any{map[string]any{"id": "secret/app", "version": fmt.Sprint(i)}}
		if err := unstructured.SetNestedSlice(st.Object, objects, "status", "objects"); err != nil {
			w.t.Fatal(err)
		}
		if _, err := ri.Update(ctx, st, metav1.UpdateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// pending returns the workloads not (yet) reloaded, as the API server shows
// them: a Deployment, Rollout or DeploymentConfig without Ripple's env var
// in its pod template; a CronJob that has not started a Job carrying it;
// a Job not replaced by a new one (another UID) carrying it, or whose
// re-create record is left in Ripple's namespace. With Jobs ignored, a Job replaced is reported
// (it never goes away, so the case fails).
func (w *rbacWorkloads) pending(ctx context.Context) []string {
	var out []string
	for _, ns := range w.namespaces {
		deployments := []string{wlDeployment}
		if w.optional {
			deployments = append(deployments, wlCSI)
		}
		for _, name := range deployments {
			d, err := w.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || !reloaded(d.Spec.Template.Spec.Containers) {
				out = append(out, fmt.Sprintf("Deployment %s/%s not rolled", ns, name))
			}
		}

		jobs, err := w.cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			out = append(out, fmt.Sprintf("listing Jobs in %s: %v", ns, err))
			continue
		}
		started, recreated := false, false
		for _, j := range jobs.Items {
			owner := metav1.GetControllerOf(&j)
			switch {
			case owner != nil && owner.UID == w.cronUID[ns] && owner.Kind == "CronJob":
				started = started || reloaded(j.Spec.Template.Spec.Containers)
			case j.Name == wlJob:
				recreated = j.UID != w.jobUID[ns] && reloaded(j.Spec.Template.Spec.Containers)
				if w.ignoreJobs && j.UID != w.jobUID[ns] {
					out = append(out, fmt.Sprintf("Job %s/%s re-created although Jobs are ignored", ns, wlJob))
				}
			}
		}
		if !started {
			out = append(out, fmt.Sprintf("CronJob %s/%s started no Job with the change", ns, wlCronJob))
		}
		if !recreated && !w.ignoreJobs {
			out = append(out, fmt.Sprintf("Job %s/%s not re-created with the change", ns, wlJob))
		}
		if _, err := w.cs.CoreV1().ConfigMaps(w.recordNS).Get(ctx, jobRecord(ns), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			out = append(out, fmt.Sprintf("the re-create record %s/%s is left (%v)", w.recordNS, jobRecord(ns), err))
		}

		for key, uid := range w.restartPods {
			nsName := strings.SplitN(key, "/", 2)
			if nsName[0] != ns {
				continue
			}
			if p, err := w.cs.CoreV1().Pods(ns).Get(ctx, nsName[1], metav1.GetOptions{}); err == nil && p.UID == uid && p.DeletionTimestamp == nil {
				out = append(out, fmt.Sprintf("pod %s not restarted", key))
			}
		}
		if !w.optional {
			continue
		}
		for _, x := range []struct {
			gvr  schema.GroupVersionResource
			kind string
			name string
		}{{rolloutsGVR, "Rollout", wlRollout}, {deploymentConfigsGVR, "DeploymentConfig", wlDC}} {
			u, err := w.dyn.Resource(x.gvr).Namespace(ns).Get(ctx, x.name, metav1.GetOptions{})
			if err != nil || !reloadedUnstructured(u) {
				out = append(out, fmt.Sprintf("%s %s/%s not rolled", x.kind, ns, x.name))
			}
		}
	}
	return out
}

// reloaded reports whether Ripple's env var is in a container.
func reloaded(containers []corev1.Container) bool {
	return slices.ContainsFunc(containers, func(c corev1.Container) bool {
		return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return strings.HasPrefix(e.Name, "STAKATER_") })
	})
}

// reloadedUnstructured is reloaded for spec.template of a custom resource.
func reloadedUnstructured(u *unstructured.Unstructured) bool {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		env, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
		for _, e := range env {
			if name, _ := e.(map[string]any)["name"].(string); strings.HasPrefix(name, "STAKATER_") {
				return true
			}
		}
	}
	return false
}
