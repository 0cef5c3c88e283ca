package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/internal/digest"
)

// soakLabel marks the soak's namespaces and workloads.
const soakLabel = "soak.ripple.dev/run"

// recordKey is Ripple's applied record on a workload's metadata.
const recordKey = "ripple.dev/applied"

// historyLimit keeps every ReplicaSet of a Deployment for the whole run:
// the ReplicaSets are the durable record of its revisions that the
// verdict reads.
const historyLimit = 10000

// configRef names one config: a ConfigMap in a soak namespace.
type configRef struct{ Namespace, Name string }

func (c configRef) String() string { return c.Namespace + "/" + c.Name }

// workloadRef names one Deployment and the config it reads.
type workloadRef struct {
	Namespace, Name string
	Config          configRef
}

func (w workloadRef) String() string { return w.Namespace + "/" + w.Name }

// world is the soak's objects: configs, each read by the same number of
// Deployments, spread over namespaces.
type world struct {
	configs   []configRef
	workloads []workloadRef
	readers   map[configRef][]workloadRef
}

// newWorld lays out workloads Deployments over configs ConfigMaps in
// namespaces namespaces (configs and workloads divisible by it).
func newWorld(workloads, configs, namespaces int) (*world, error) {
	if namespaces <= 0 || configs%namespaces != 0 || workloads%configs != 0 {
		return nil, fmt.Errorf("%d workloads over %d configs in %d namespaces: configs must divide by namespaces, workloads by configs", workloads, configs, namespaces)
	}
	w := &world{readers: map[configRef][]workloadRef{}}
	perNS := configs / namespaces
	for c := range configs {
		w.configs = append(w.configs, configRef{Namespace: "soak-" + strconv.Itoa(c/perNS), Name: "cfg-" + strconv.Itoa(c%perNS)})
	}
	for i := range workloads {
		cfg := w.configs[i%configs]
		wr := workloadRef{Namespace: cfg.Namespace, Name: "w-" + strconv.Itoa(i), Config: cfg}
		w.workloads = append(w.workloads, wr)
		w.readers[cfg] = append(w.readers[cfg], wr)
	}
	return w, nil
}

// namespaces returns the world's namespaces in order.
func (w *world) namespaces() []string {
	var out []string
	for _, c := range w.configs {
		if len(out) == 0 || out[len(out)-1] != c.Namespace {
			out = append(out, c.Namespace)
		}
	}
	return out
}

// create creates the namespaces, the configs with value "0" and the
// Deployments (no replicas: the Deployment controller still makes one
// ReplicaSet per revision, which is what is counted), and returns each
// config's digest.
func (w *world) create(ctx context.Context, cs kubernetes.Interface) (map[configRef]string, error) {
	for _, ns := range w.namespaces() {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{soakLabel: "true"}}}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
	}
	sums := map[configRef]string{}
	for _, c := range w.configs {
		cm, err := cs.CoreV1().ConfigMaps(c.Namespace).Create(ctx, configMap(c, "0"), metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		sums[c] = digest.ConfigMap(cm)
	}
	errs := make(chan error, len(w.workloads))
	sem := make(chan struct{}, 16)
	for _, wr := range w.workloads {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := cs.AppsV1().Deployments(wr.Namespace).Create(ctx, deployment(wr), metav1.CreateOptions{})
			errs <- err
		}()
	}
	for range w.workloads {
		if err := <-errs; err != nil {
			return nil, fmt.Errorf("creating the Deployments: %w", err)
		}
	}
	return sums, nil
}

// configMap is config c with VALUE=value.
func configMap(c configRef, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace}, Data: map[string]string{"VALUE": value}}
}

func deployment(w workloadRef) *appsv1.Deployment {
	labels := map[string]string{"app": w.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: map[string]string{soakLabel: "true"},
			Annotations: map[string]string{"reloader.stakater.com/auto": "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To[int32](0),
			RevisionHistoryLimit: ptr.To[int32](historyLimit),
			Selector:             &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/app:1",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: w.Config.Name}}}},
				}}},
			},
		},
	}
}

// applied returns the digest Ripple's env var shows on tpl ("" when it has
// none): each soak workload reads one ConfigMap.
func applied(tpl *corev1.PodTemplateSpec) string {
	for _, c := range tpl.Spec.Containers {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "STAKATER_") && strings.HasSuffix(e.Name, "_CONFIGMAP") {
				return e.Value
			}
		}
	}
	return ""
}

// aliasKey is where Ripple notes that the value a template shows stands
// for other data: after a rollback, or another writer's change of the pod
// template made after the config's (the new pods read the new data).
const aliasKey = "ripple.dev/applied-alias"

// effective returns the digest of the config a Deployment's pods read, as
// Ripple records it: the alias's when it names the value applied (the
// template's, or the record's while the template shows none: a workload
// never rolled), else that value.
func effective(d *appsv1.Deployment) string {
	aliases := map[string]struct {
		Shown string `json:"shown"`
		Means string `json:"means"`
	}{}
	shown := applied(&d.Spec.Template)
	if shown == "" {
		shown = recorded(d.Annotations)
	}
	if json.Unmarshal([]byte(d.Annotations[aliasKey]), &aliases) == nil {
		for _, a := range aliases { // one config per workload
			if a.Shown == shown {
				return a.Means
			}
		}
	}
	return shown
}

// recorded returns the digest of the config in Ripple's applied record of
// annotations ("" when it has none).
func recorded(annotations map[string]string) string {
	rec := map[string]string{}
	if json.Unmarshal([]byte(annotations[recordKey]), &rec) != nil {
		return ""
	}
	for _, sum := range rec { // one config per workload
		return sum
	}
	return ""
}
