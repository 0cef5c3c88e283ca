// Command demo shows Ripple at work on a real local cluster in about a
// minute (`make demo`):
//
//	go run ./hack/demo --ripple bin/ripple
//
// It starts kube-apiserver, etcd, kube-controller-manager, kube-scheduler and
// three kwok fake nodes (see hack/cluster), runs the given ripple binary
// against them, and creates a 3-replica Deployment that uses a ConfigMap and
// a Secret and opts in with Reloader's reloader.stakater.com/auto
// annotation. It then changes the ConfigMap and, 100 ms later, the Secret,
// follows the rollout Ripple triggers until every pod has been replaced, and
// prints a summary: one rollout for the two changes, the STAKATER_* env vars
// Ripple wrote, its Reloaded event, and how long each step took.
//
// Everything it starts is stopped on every path (success, failure, Ctrl-C,
// and the overall --timeout); the exit code is 0 only if the demo showed
// what it set out to show.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/app"
	"github.com/ripple-dev/ripple/internal/config"
)

// What the demo creates.
const (
	namespace     = "demo"
	deployment    = "web"
	container     = "web"
	configMapName = "app-config"
	secretName    = "app-secret"
	replicas      = 3
	nodes         = 3
	appLabel      = "app=" + deployment
)

// The env vars Ripple must write on the pod template: Stakater Reloader's
// names for these two configs, STAKATER_<NAME>_<KIND>. They are spelled out
// here rather than computed with Ripple's own code, so the demo also checks
// that Ripple writes exactly what Reloader would.
const (
	configMapEnv = "STAKATER_APP_CONFIG_CONFIGMAP"
	secretEnv    = "STAKATER_APP_SECRET_SECRET"
)

const (
	// pollInterval is how often the demo looks at the cluster; it bounds
	// the error of every timing it reports.
	pollInterval = 100 * time.Millisecond
	// changeGap separates the ConfigMap and Secret changes: far less than
	// Ripple's settle window (1s by default), so they form one change set.
	changeGap = 100 * time.Millisecond
)

func main() {
	// The first SIGINT or SIGTERM cancels the run, which then cleans up;
	// later ones are ignored so that a second Ctrl-C cannot cut the
	// cleanup short and leave processes behind.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "\n%s: stopping the demo and cleaning up...\n", s)
		cancel(fmt.Errorf("interrupted (%s)", s))
	}()

	err := run(ctx, os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo FAILED: %v\n", err)
		os.Exit(1)
	}
}

// run runs the demo; every process and file it creates is gone when it
// returns, except the logs of a failed run (or of any run with --keep-logs).
func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	ripplePath := fs.String("ripple", "bin/ripple", "path of the ripple binary to demonstrate")
	timeout := fs.Duration("timeout", 3*time.Minute, "give up, clean up and fail after this long")
	keepLogs := fs.Bool("keep-logs", false, "keep ripple's and the cluster components' logs after a successful run too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	bin, err := checkBinary(*ripplePath)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeoutCause(ctx, *timeout, fmt.Errorf("the demo did not finish within %s", *timeout))
	defer cancel()
	// An API call cut short by the timeout or Ctrl-C only says "context
	// canceled"; say why it was cancelled.
	defer func() {
		if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}()

	// One directory for ripple's and the cluster components' logs: removed
	// after a successful run, kept after a failure for a post-mortem.
	tmp, err := os.MkdirTemp("", "ripple-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if err == nil && !*keepLogs {
			err = os.RemoveAll(tmp)
			return
		}
		fmt.Fprintf(out, "logs kept in %s\n", tmp)
	}()
	// Registered before anything starts, so it runs after every cleanup.
	defer func() {
		if left := cluster.Descendants(); len(left) > 0 {
			err = errors.Join(err, fmt.Errorf("processes left behind after cleanup: %v", left))
		}
	}()

	fmt.Fprintf(out, "Ripple demo: change a ConfigMap and a Secret, watch Ripple roll the Deployment that uses them, once.\n\n")
	return runCluster(ctx, bin, tmp, out)
}

// runCluster runs the demo on a local cluster it starts, with its logs in
// logDir, and stops the cluster.
func runCluster(ctx context.Context, bin, logDir string, out io.Writer) (err error) {
	fmt.Fprintf(out, "starting local cluster (kube-apiserver, etcd, controller-manager, scheduler, %d kwok nodes)...\n", nodes)
	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Nodes: nodes, LogDir: logDir})
	if err != nil {
		return fmt.Errorf("starting the local cluster: %w", err)
	}
	defer func() {
		fmt.Fprintln(out, "stopping the local cluster...")
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the local cluster: %w", stopErr))
		}
	}()
	fmt.Fprintf(out, "  cluster ready in %s\n", since(start))
	return runRipple(ctx, c, bin, logDir, out)
}

// runRipple runs the demo with ripple (bin) running against c, its log in
// logDir, and stops ripple.
func runRipple(ctx context.Context, c *cluster.Cluster, bin, logDir string, out io.Writer) (err error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	logPath := filepath.Join(logDir, "ripple.log")
	fmt.Fprintf(out, "starting ripple %s\n  log: %s\n", bin, logPath)
	start := time.Now()
	rp, err := startRipple(bin, c.Kubeconfig, logPath)
	if err != nil {
		return err
	}
	// Deferred after the cluster's stop, so it runs before it: ripple
	// should see its API server until it has shut down.
	defer func() {
		fmt.Fprintln(out, "stopping ripple...")
		err = errors.Join(err, rp.stop())
	}()
	cfg, err := config.NewOptions().Config()
	if err != nil {
		return err
	}
	if err := rp.waitStarted(ctx, len(app.Kinds(cfg, nil))); err != nil {
		return err
	}
	fmt.Fprintf(out, "  ripple running in %s (%s)\n", since(start), startupSummary(rp))
	return demonstrate(ctx, cs, rp, out)
}

// demonstrate creates the workload, changes its configs and follows and
// checks the rollout Ripple makes.
func demonstrate(ctx context.Context, cs kubernetes.Interface, rp *rippleProc, out io.Writer) error {
	start := time.Now()
	dep, err := createWorkload(ctx, cs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "created namespace %s: ConfigMap %s, Secret %s, Deployment %s (%d replicas, envFrom both, reloader.stakater.com/auto: \"true\")\n",
		namespace, configMapName, secretName, deployment, replicas)
	base, err := waitSteady(ctx, cs, rp, dep.UID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  %d pods Ready in %s: %s\n\n", replicas, since(start), joinComma(base.pods))

	changedAt, err := changeConfigs(ctx, cs, out)
	if err != nil {
		return err
	}
	ro, err := followRollout(ctx, cs, rp, base, changedAt, out)
	if err != nil {
		return err
	}
	if err := collectEvidence(ctx, cs, rp, base, ro); err != nil {
		return err
	}
	fmt.Fprintln(out)
	printSummary(out, ro, rp)
	fmt.Fprintln(out)
	return ro.verify()
}

// createWorkload creates the namespace, the two configs, and the Deployment
// that uses both through envFrom and opts in to reloads on both.
func createWorkload(ctx context.Context, cs kubernetes.Interface) (*appsv1.Deployment, error) {
	create := func(what string, f func() error) error {
		if err := f(); err != nil {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		return nil
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: namespace} }
	if err := create("namespace "+namespace, func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	if err := create("ConfigMap "+configMapName, func() error {
		_, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: meta(configMapName),
			Data:       map[string]string{"GREETING": "hello"},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	if err := create("Secret "+secretName, func() error {
		_, err := cs.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
			ObjectMeta: meta(secretName),
			Data:       map[string][]byte{"PASSWORD": []byte("s3cret")},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}

	d := demoDeployment()
	err := create("Deployment "+deployment, func() (err error) {
		d, err = cs.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
	return d, err
}

// demoDeployment is the Deployment the demo creates: it uses both configs
// through envFrom and opts in to reloads on both.
func demoDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": deployment}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:        deployment,
			Namespace:   namespace,
			Annotations: map[string]string{"reloader.stakater.com/auto": "true"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: container,
						// kwok runs no container, so the image is never pulled.
						Image: "registry.invalid/web:1",
						EnvFrom: []corev1.EnvFromSource{
							{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMapName}}},
							{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}}},
						},
					}},
					Tolerations: []corev1.Toleration{kit.KwokToleration},
				},
			},
		},
	}
}

// baseline is the Deployment before the config change.
type baseline struct {
	uid         types.UID
	generation  int64
	replicaSets []string // the Deployment's ReplicaSets
	pods        []string // its Ready pods, sorted
}

// waitSteady waits until the Deployment has replicas Ready pods of a single
// ReplicaSet, and until Ripple has recorded the digests of both configs on
// it. That record is Ripple's baseline: a config change made before Ripple
// has seen the workload would be taken as the starting point, not a change.
func waitSteady(ctx context.Context, cs kubernetes.Interface, rp *rippleProc, uid types.UID) (baseline, error) {
	applied := annotation.DefaultKeys(annotation.DefaultPrefix).Applied
	var b baseline
	var pending string
	err := poll(ctx, func() (bool, error) {
		if err := rp.exited(); err != nil {
			return false, err
		}
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, deployment, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rss, err := kit.ReplicaSets(ctx, cs, namespace, uid)
		if err != nil {
			return false, err
		}
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: appLabel})
		if err != nil {
			return false, err
		}
		var ready []string
		for i := range pods.Items {
			if kit.PodReady(&pods.Items[i]) {
				ready = append(ready, pods.Items[i].Name)
			}
		}
		switch {
		case len(rss) != 1 || len(ready) != replicas || len(pods.Items) != replicas:
			pending = fmt.Sprintf("%d Ready pods of one ReplicaSet (have %d of %d pods, %d ReplicaSets)", replicas, len(ready), len(pods.Items), len(rss))
			return false, nil
		case d.Annotations[applied] == "":
			pending = fmt.Sprintf("Ripple to record the configs' digests in the %s annotation", applied)
			return false, nil
		}
		slices.Sort(ready)
		b = baseline{uid: uid, generation: d.Generation, replicaSets: []string{rss[0].Name}, pods: ready}
		return true, nil
	})
	if err != nil {
		return b, fmt.Errorf("waiting for %s: %w", pending, err)
	}
	return b, nil
}

// changeConfigs changes the ConfigMap and, changeGap later, the Secret, and
// returns when the first change was made.
func changeConfigs(ctx context.Context, cs kubernetes.Interface, out io.Writer) (time.Time, error) {
	fmt.Fprintf(out, "changing ConfigMap %s and, %s later, Secret %s:\n", configMapName, changeGap, secretName)
	_, err := cs.CoreV1().ConfigMaps(namespace).Patch(ctx, configMapName, types.MergePatchType,
		[]byte(`{"data":{"GREETING":"hello, ripple"}}`), metav1.PatchOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("changing ConfigMap %s: %w", configMapName, err)
	}
	// The change exists from the moment the API server accepted it.
	changedAt := time.Now()
	fmt.Fprintf(out, "  %s  ConfigMap %s changed: GREETING=hello -> hello, ripple\n", stamp(changedAt), configMapName)

	select {
	case <-ctx.Done():
		return time.Time{}, context.Cause(ctx)
	case <-time.After(changeGap):
	}
	// "bjN3LXMzY3JldA==" is base64 for "n3w-s3cret".
	_, err = cs.CoreV1().Secrets(namespace).Patch(ctx, secretName, types.MergePatchType,
		[]byte(`{"data":{"PASSWORD":"bjN3LXMzY3JldA=="}}`), metav1.PatchOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("changing Secret %s: %w", secretName, err)
	}
	fmt.Fprintf(out, "  %s  Secret %s changed: PASSWORD rotated\n", stamp(changedAt), secretName)
	return changedAt, nil
}

// poll calls cond every pollInterval until it returns true or an error, or
// ctx ends. Unlike wait.Poll*, it returns the context's cause (timeout or
// Ctrl-C) rather than a bare "context deadline exceeded".
func poll(ctx context.Context, cond func() (bool, error)) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		done, err := cond()
		if err != nil || done {
			if err != nil && ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}

// since formats the time since start for progress lines.
func since(start time.Time) string {
	return time.Since(start).Round(10 * time.Millisecond).String()
}

// stamp formats the time since the first change, e.g. "+1.25s".
func stamp(changedAt time.Time) string {
	return fmt.Sprintf("%+6.2fs", time.Since(changedAt).Seconds())
}
