package kubelet

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/fakecri/record"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/hack/kubeletnode"
)

// The container every test's Deployment runs. The fake runtime pulls no
// image: any name will do.
const (
	containerName = "app"
	image         = "registry.invalid/ripple/app:1"
)

// Bounds of the waits. A pod on an idle kubelet runs within seconds; a
// restart by resize is acted on when the kubelet sees the resize, at once.
const (
	podReadyTimeout = 90 * time.Second
	restartTimeout  = 60 * time.Second
	recordTimeout   = 10 * time.Second
)

// TestResizeRestartGetsNewEnv: a container whose cpu resizePolicy is
// RestartContainer, resized by 1m through pods/resize after its ConfigMap
// and Secret changed, is restarted in the same pod (same UID, name and
// node) and created with the new values of both.
func TestResizeRestartGetsNewEnv(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-env")
	checkLoopbackOnly(t, node)
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, "kubelet-env-", nil)
	ctx := t.Context()

	cm := createConfigMap(t, cs, ns, "settings", map[string]string{"greeting": "hello-old"})
	secret := createSecret(t, cs, ns, "credentials", map[string]string{"token": "token-old"})
	spec := podSpec(node.Name)
	spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Key: "greeting"}}},
		{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: "token"}}},
	}
	pod := deployOne(t, cs, ns, "env", spec)

	first := waitRecord(t, node, pod, 0)
	assertEnv(t, first, "GREETING", "hello-old")
	assertEnv(t, first, "TOKEN", "token-old")

	cm.Data["greeting"] = "hello-new"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret.Data["token"] = []byte("token-new")
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The resize follows the changes at once, as Ripple's would. The
	// kubelet takes env values from its watch of each ConfigMap and
	// Secret, which delivers a change in milliseconds on a local API
	// server; the restart comes later than that (the old container is
	// killed first, with its grace period).
	restarted := resizeAndWaitRestart(t, cs, pod)
	second := waitRecord(t, node, pod, 1)
	assertEnv(t, second, "GREETING", "hello-new")
	assertEnv(t, second, "TOKEN", "token-new")
	assertSamePod(t, cs, pod, restarted)
	assertCreations(t, node, pod, 2)
}

// TestSubPathFileChangesOnlyAtRestart: a file mounted from a ConfigMap
// with subPath is a bind of the file the volume held when the container
// started. After the ConfigMap changes, the plain configMap volume is
// updated and the running container's subPath file is not; a restart by
// resize made after that update re-binds it to the new file.
//
// The kubelet re-binds a subPath at every container start: its check that
// the bind is still the right file compares the bind with the volume's
// entry for the key, which for a configMap volume is a symlink, so they
// never match (pkg/volume/util/subpath, prepareSubpathTarget). A restart
// made before the kubelet has rewritten the volume (it does on the pod's
// next sync, and the resize itself makes one) races that rewrite: the
// restarted container gets the old file or the new one. This test runs
// only the order that has one outcome: the restart after the volume shows
// the change.
func TestSubPathFileChangesOnlyAtRestart(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-subpath")
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, "kubelet-subpath-", nil)
	ctx := t.Context()

	const (
		key       = "app.conf"
		subPath   = "/etc/app/app.conf"
		plainDir  = "/etc/plain"
		oldConfig = "level=old\n"
		newConfig = "level=new\n"
	)
	cm := createConfigMap(t, cs, ns, "app-config", map[string]string{key: oldConfig})
	spec := podSpec(node.Name)
	spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "config", MountPath: subPath, SubPath: key},
		{Name: "config", MountPath: plainDir},
	}
	pod := deployOne(t, cs, ns, "subpath", spec)

	first := waitRecord(t, node, pod, 0)
	subMount, plainMount := mountAt(t, first, subPath), mountAt(t, first, plainDir)
	assertFile(t, node, subMount.HostPath, oldConfig)
	assertFile(t, node, plainMount.HostPath+"/"+key, oldConfig)

	cm.Data[key] = newConfig
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The kubelet rewrites a configMap volume on the pod's sync, once its
	// watch of the ConfigMap has delivered the change; it syncs every pod
	// each SyncFrequency (5 s here, a minute by default), so the rewrite
	// comes within one period plus the watch's delivery (milliseconds on
	// a local API server). It is polled; three periods is the bound.
	plainFile := plainMount.HostPath + "/" + key
	var got string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*kubeletnode.SyncFrequency, true, func(context.Context) (bool, error) {
		b, err := node.ReadFile(plainFile)
		if err != nil {
			return false, err
		}
		got = string(b)
		return got == newConfig, nil
	})
	if err != nil {
		t.Fatalf("the plain configMap volume's %s holds %q, not %q, %v after the ConfigMap changed: %v", key, got, newConfig, 3*kubeletnode.SyncFrequency, err)
	}
	// The volume shows the change; the running container's subPath file,
	// a bind of the volume's old file, does not.
	assertFile(t, node, subMount.HostPath, oldConfig)

	restarted := resizeAndWaitRestart(t, cs, pod)
	second := waitRecord(t, node, pod, 1)
	assertSamePod(t, cs, pod, restarted)
	// The restarted container has the same bind target, re-bound at its
	// start to the file the volume holds now.
	sub := mountAt(t, second, subPath)
	if sub.HostPath != subMount.HostPath {
		t.Errorf("the restarted container's subPath mount is %s, the first one's %s: expected the same bind target", sub.HostPath, subMount.HostPath)
	}
	assertFile(t, node, sub.HostPath, newConfig)
	assertFile(t, node, mountAt(t, second, plainDir).HostPath+"/"+key, newConfig)
	assertCreations(t, node, pod, 2)
}

// podSpec is a Guaranteed pod (cpu and memory requests equal to limits)
// on node, whose container is restarted when its cpu is resized and not
// when its memory is.
func podSpec(node string) corev1.PodSpec {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	return corev1.PodSpec{
		NodeSelector:                  map[string]string{"kubernetes.io/hostname": node},
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{
			Name:            containerName,
			Image:           image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Resources:       corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
			ResizePolicy: []corev1.ContainerResizePolicy{
				{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer},
				{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
			},
		}},
	}
}

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func createConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func createSecret(t *testing.T, cs kubernetes.Interface, ns, name string, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	s, err := cs.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deployOne creates a Deployment of one replica with spec and returns its
// pod once the pod runs and is Ready.
func deployOne(t *testing.T, cs kubernetes.Interface, ns, name string, spec corev1.PodSpec) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	err = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, podReadyTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil || len(pods.Items) != 1 || !kit.PodReady(&pods.Items[0]) {
			return false, nil
		}
		pod = &pods.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("the Deployment %s/%s has no Ready pod after %v: %v", ns, name, podReadyTimeout, err)
	}
	// The pod runs on the kubelet, with an address of the fake runtime's
	// in 127.0.0.0/8: a test that dials it stays on loopback.
	if ip := net.ParseIP(pod.Status.PodIP); ip == nil || !ip.IsLoopback() {
		t.Errorf("pod %s has address %q, expected one in 127.0.0.0/8", pod.Name, pod.Status.PodIP)
	}
	return pod
}

// resizeAndWaitRestart raises the container's cpu requests and limits by
// 1m through the pods/resize subresource, and waits until the container
// has restarted once and is Ready again. It returns the pod then.
func resizeAndWaitRestart(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	cur, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := restartCount(cur)
	c := &cur.Spec.Containers[0]
	cpu := c.Resources.Requests.Cpu().DeepCopy()
	cpu.Add(resource.MustParse("1m"))
	c.Resources.Requests[corev1.ResourceCPU] = cpu
	c.Resources.Limits[corev1.ResourceCPU] = cpu
	if _, err := cs.CoreV1().Pods(pod.Namespace).UpdateResize(ctx, pod.Name, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("resizing %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	var got *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, restartTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return restartCount(p) > before && kit.PodReady(p), nil
	})
	if err != nil {
		t.Fatalf("the container of %s/%s did not restart and become Ready within %v of its resize (restarts %d, was %d): %v",
			pod.Namespace, pod.Name, restartTimeout, restartCount(got), before, err)
	}
	if n := restartCount(got); n != before+1 {
		t.Fatalf("the container restarted %d times after one resize, expected once", n-before)
	}
	if cpuNow := got.Status.ContainerStatuses[0].Resources; cpuNow != nil && !cpuNow.Requests.Cpu().Equal(cpu) {
		t.Errorf("the restarted container's cpu request is %v, expected %v", cpuNow.Requests.Cpu(), &cpu)
	}
	return got
}

func restartCount(p *corev1.Pod) int32 {
	if p == nil {
		return -1
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == containerName {
			return s.RestartCount
		}
	}
	return -1
}

// waitRecord returns the fake runtime's record of the container's creation
// in pod with attempt (0: the first start): the kubelet creates a
// container before it reports it, so the record is there by then; the
// wait covers the file's write.
func waitRecord(t *testing.T, node *kubeletnode.Node, pod *corev1.Pod, attempt uint32) record.Container {
	t.Helper()
	var found *record.Container
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, recordTimeout, true, func(context.Context) (bool, error) {
		all, err := node.Containers()
		if err != nil {
			return false, err
		}
		for i := range all {
			c := all[i]
			if c.PodUID == string(pod.UID) && c.Container == containerName && c.Attempt == attempt {
				found = &c
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no record of container %s's attempt %d in pod %s (%s): %v", containerName, attempt, pod.Name, pod.UID, err)
	}
	return *found
}

// assertCreations checks that the kubelet created the pod's container
// exactly want times: the first start and one restart, none more.
func assertCreations(t *testing.T, node *kubeletnode.Node, pod *corev1.Pod, want int) {
	t.Helper()
	all, err := node.Containers()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range all {
		if c.PodUID == string(pod.UID) && c.Container == containerName {
			n++
		}
	}
	if n != want {
		t.Errorf("the kubelet created container %s of pod %s %d times, expected %d", containerName, pod.Name, n, want)
	}
}

func assertEnv(t *testing.T, c record.Container, name, want string) {
	t.Helper()
	got, ok := c.Getenv(name)
	if !ok {
		t.Errorf("attempt %d of %s has no %s", c.Attempt, c.Container, name)
	} else if got != want {
		t.Errorf("attempt %d of %s has %s=%q, expected %q", c.Attempt, c.Container, name, got, want)
	}
}

// assertSamePod checks that the restart happened in the pod the test
// started with: same name, UID and node, and the Deployment has no other.
func assertSamePod(t *testing.T, cs kubernetes.Interface, before, after *corev1.Pod) {
	t.Helper()
	if after.UID != before.UID || after.Name != before.Name || after.Spec.NodeName != before.Spec.NodeName {
		t.Errorf("the pod changed: %s %s on %s before, %s %s on %s after", before.Name, before.UID, before.Spec.NodeName, after.Name, after.UID, after.Spec.NodeName)
	}
	pods, err := cs.CoreV1().Pods(before.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		var names []string
		for _, p := range pods.Items {
			names = append(names, fmt.Sprintf("%s (%s)", p.Name, p.UID))
		}
		t.Errorf("the namespace has %d pods, expected the one: %v", len(pods.Items), names)
	}
}

func mountAt(t *testing.T, c record.Container, containerPath string) record.Mount {
	t.Helper()
	m, ok := c.MountAt(containerPath)
	if !ok {
		t.Fatalf("attempt %d of %s has no mount at %s: %+v", c.Attempt, c.Container, containerPath, c.Mounts)
	}
	return m
}

func assertFile(t *testing.T, node *kubeletnode.Node, path, want string) {
	t.Helper()
	b, err := node.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s holds %q, expected %q", path, b, want)
	}
}

// checkLoopbackOnly checks that the node's processes listen on no address
// but loopback: the kubelet runs no server, and the fake runtime serves a
// unix socket.
func checkLoopbackOnly(t *testing.T, node *kubeletnode.Node) {
	t.Helper()
	bad, err := cluster.NonLoopbackListeners(node.Pids())
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("the kubelet node listens beyond loopback: %v", bad)
	}
}
