package integration

import (
	"context"
	"crypto/sha1" //nolint:gosec // Reloader's digest is SHA-1: the test checks compatibility, not security
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Annotation keys of the Secrets Store CSI integration; Reloader has no
// flags to rename them.
const (
	spcAutoKey    = "secretproviderclass.reloader.stakater.com/auto"
	spcReloadKey  = "secretproviderclass.reloader.stakater.com/reload"
	spcExcludeKey = "secretproviderclasses.exclude.reloader.stakater.com/reload"
)

var (
	spcGVK   = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClass"}
	spcpsGVK = spcGVK.GroupVersion().WithKind("SecretProviderClassPodStatus")
)

// spcObjects are the objects the fake driver reports as mounted at
// version v: two secrets of a vault, as the Vault provider names them.
func spcObjects(v string) []digest.SecretProviderClassObject {
	return []digest.SecretProviderClassObject{
		{ID: "secret/data/db:password", Version: v},
		{ID: "secret/data/api:key", Version: v + "-api"},
	}
}

// newSPC creates SecretProviderClass name with annotations.
func (e *env) newSPC(t *testing.T, name string, annotations map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"provider": "vault", "parameters": map[string]any{"roleName": "app"}},
	}}
	u.SetGroupVersionKind(spcGVK)
	u.SetNamespace(e.ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	if err := e.c.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
}

// setPodStatuses does what the CSI driver does when it mounts SPC spc at
// version v into pods: it creates or updates one SecretProviderClassPodStatus
// per pod. It returns Reloader's digest of that state.
func (e *env) setPodStatuses(t *testing.T, spc, v string, pods ...string) string {
	t.Helper()
	ctx := t.Context()
	var objects []any
	for _, o := range spcObjects(v) {
		objects = append(objects, map[string]any{"id": o.ID, "version": o.Version})
	}
	for _, pod := range pods {
		status := map[string]any{
			"podName": pod, "secretProviderClassName": spc, "mounted": true,
			"targetPath": "/var/lib/kubelet/pods/" + pod + "/volumes/kubernetes.io~csi/secrets/mount",
			"objects":    objects,
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(spcpsGVK)
		key := client.ObjectKey{Namespace: e.ns, Name: pod + "-" + e.ns + "-" + spc} // the driver's naming
		err := e.c.Get(ctx, key, u)
		switch {
		case apierrors.IsNotFound(err):
			u.SetNamespace(key.Namespace)
			u.SetName(key.Name)
			u.Object["status"] = status
			if err = e.c.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			if _, found, _ := unstructured.NestedSlice(u.Object, "status", "objects"); !found {
				// A status subresource drops status on create.
				u.Object["status"] = status
				err = e.c.Status().Update(ctx, u)
			}
		case err == nil:
			u.Object["status"] = status
			err = e.c.Update(ctx, u)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return digest.SecretProviderClassPodStatus(spc, spcObjects(v))
}

// csiWorkload creates a Deployment of 3 replicas, with annotations meta
// and pod template annotations tpl, whose container "app" mounts
// SecretProviderClass spc through the CSI driver and uses configs as
// listed.
func (e *env) csiWorkload(t *testing.T, name string, meta, tpl map[string]string, spc string, uses ...use) client.Object {
	t.Helper()
	spec := podSpec(uses...)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "secrets", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: "secrets-store.csi.k8s.io", ReadOnly: ptr.To(true),
		VolumeAttributes: map[string]string{"secretProviderClass": spc},
	}}})
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "secrets", MountPath: "/mnt/secrets", ReadOnly: true})
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: meta},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: tpl}, Spec: spec},
		},
	}
	if err := e.c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// startCSIRipple starts Ripple with the CSI integration and waits until it
// watches the driver's objects.
func startCSIRipple(t *testing.T, args ...string) *env {
	t.Helper()
	e := startRipple(t, append([]string{"--enable-csi-integration"}, args...)...)
	e.waitWatching(t, "SecretProviderClassPodStatus")
	return e
}

// templateChanges counts the changes of a Deployment's pod template from
// now on, from a watch: every write shows, however quickly they follow
// each other. (Its generation would not do: a Deployment's counts
// metadata annotation changes too.) stop returns the count.
func (e *env) templateChanges(t *testing.T, d client.Object) (stop func() int) {
	t.Helper()
	cur := &appsv1.Deployment{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), cur); err != nil {
		t.Fatal(err)
	}
	w, err := e.cs.AppsV1().Deployments(e.ns).Watch(t.Context(), metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", d.GetName()).String(),
		ResourceVersion: cur.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		changes  int
		done     = make(chan struct{})
		progress = kit.NewWatchProgress(cur.ResourceVersion)
	)
	go func() {
		defer close(done)
		last := cur.Spec.Template
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			if next := d.Spec.Template; !equality.Semantic.DeepEqual(last, next) {
				mu.Lock()
				changes++
				mu.Unlock()
				last = next
			}
			progress.Saw(d.ResourceVersion)
		}
		progress.Fail(errors.New("the watch ended"))
	}()
	return func() int {
		time.Sleep(negativeWindow) // a late extra rollout would show
		// The watch runs behind the API server: count once it has
		// delivered the Deployment as the server has it now.
		now := &appsv1.Deployment{}
		if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), now); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := progress.Reached(ctx, now.ResourceVersion); err != nil {
			t.Fatalf("the template watch of %s: %v", d.GetName(), err)
		}
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return changes
	}
}

// A rotation reaches the pods of a Deployment one SecretProviderClassPodStatus
// at a time; the Deployment must roll once per rotation, with both
// strategies, not once per pod.
func TestCSIRotationRollsOncePerRotation(t *testing.T) {
	for _, name := range []string{"env-vars", "annotations"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startCSIRipple(t, "--reload-strategy="+name)
			st, _ := strategy.New(name)
			deploy := kit.Deployment
			spc := refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}
			pods := []string{"pod-1", "pod-2", "pod-3"}
			e.newSPC(t, spc.Name, nil)
			e.setPodStatuses(t, spc.Name, "1", pods...)
			d := e.csiWorkload(t, "app", ann(autoKey, "true"), nil, spc.Name)
			e.waitFor(t, d, "the baseline record", hasBaseline)

			count := e.templateChanges(t, d)
			for i, v := range []string{"2", "3"} {
				var sum string
				for _, pod := range pods {
					sum = e.setPodStatuses(t, spc.Name, v, pod)
				}
				e.waitFor(t, d, "rotation "+v, func(o client.Object) bool {
					got, ok := st.Applied(deploy.Template(o), spc)
					return ok && got == sum
				})
				if i == 0 {
					// Let the first rotation's events all be handled before
					// the next one starts.
					time.Sleep(time.Second)
				}
			}
			if got := count(); got != 2 {
				t.Fatalf("%d pod template changes for 2 rotations of 3 pods each, want 2", got)
			}
		})
	}
}

// csiScenario is a workload mounting one SecretProviderClass, whose pods'
// statuses move to a new version.
type csiScenario struct {
	name   string
	meta   map[string]string // "{spc}" is the SecretProviderClass's name
	tpl    map[string]string // pod template annotations
	spcAnn map[string]string
	reload bool
}

// TestCSIReloadRules runs the reload rules for SecretProviderClasses:
// named (A7), auto, typed auto (A4), search and match, exclude (A13) and
// ignore on the SecretProviderClass itself.
func TestCSIReloadRules(t *testing.T) {
	scenarios := []csiScenario{
		{name: "named", meta: ann(spcReloadKey, "{spc}"), reload: true},
		{name: "named pattern", meta: ann(spcReloadKey, "other, {spc}.*"), reload: true},
		{name: "auto", meta: ann(autoKey, "true"), reload: true},
		{name: "typed auto", meta: ann(spcAutoKey, "true"), reload: true},
		{name: "search and match on the SecretProviderClass", meta: ann(searchKey, "true"), spcAnn: ann(matchKey, "true"), reload: true},
		{name: "typed auto on the pod template", tpl: ann(spcAutoKey, "true"), reload: true},
		{name: "no annotation"},
		{name: "search without match", meta: ann(searchKey, "true")},
		{name: "typed auto of ConfigMaps", meta: ann(cmAutoKey, "true")},
		{name: "auto false", meta: ann(autoKey, "false")},
		{name: "exclude beats auto", meta: ann(autoKey, "true", spcExcludeKey, "{spc}")},
		{name: "exclude beats named", meta: ann(spcReloadKey, "{spc}", spcExcludeKey, "other,{spc}")},
		{name: "ignore on the SecretProviderClass", meta: ann(autoKey, "true"), spcAnn: ann(ignoreKey, "true")},
	}
	for _, name := range []string{"env-vars", "annotations"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startCSIRipple(t, "--reload-strategy="+name)
			st, _ := strategy.New(name)
			for i, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					e.runCSIScenario(t, fmt.Sprintf("c%d-", i), sc, st)
				})
			}
		})
	}
}

func (e *env) runCSIScenario(t *testing.T, p string, sc csiScenario, st strategy.Strategy) {
	deploy := kit.Deployment
	spc := refs.Ref{Kind: refs.SecretProviderClass, Name: p + "spc"}
	meta := map[string]string{}
	for k, v := range sc.meta {
		meta[k] = strings.ReplaceAll(v, "{spc}", spc.Name)
	}
	e.newSPC(t, spc.Name, sc.spcAnn)
	e.setPodStatuses(t, spc.Name, "1", "pod-1", "pod-2")
	d := e.csiWorkload(t, p+"app", meta, sc.tpl, spc.Name)
	if sc.reload {
		e.waitFor(t, d, "the baseline record", hasBaseline)
	}
	before := deploy.Template(d).DeepCopy()
	sum := e.setPodStatuses(t, spc.Name, "2", "pod-1", "pod-2")
	if !sc.reload {
		e.expectNoRollout(t, d, deploy, before)
		return
	}
	e.waitFor(t, d, fmt.Sprintf("the %s strategy to record %s = %s", st.Name(), spc, sum), func(o client.Object) bool {
		got, ok := st.Applied(deploy.Template(o), spc)
		return ok && got == sum
	})
}

// Reloader's e2e S3e and S4e: typed SecretProviderClass auto reloads on the
// SecretProviderClass and not on a ConfigMap the workload uses; plain auto
// reloads on both.
func TestCSITypedAutoIgnoresConfigMaps(t *testing.T) {
	e := startCSIRipple(t)
	deploy := kit.Deployment
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "settings"}
	spc := refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}
	e.newConfig(t, cm)
	e.newSPC(t, spc.Name, nil)
	e.setPodStatuses(t, spc.Name, "1", "pod-1")
	typed := e.csiWorkload(t, "typed", ann(spcAutoKey, "true"), nil, spc.Name, envFrom(cm.Kind, cm.Name))
	both := e.csiWorkload(t, "both", ann(autoKey, "true"), nil, spc.Name, envFrom(cm.Kind, cm.Name))
	e.waitFor(t, typed, "the baseline record", hasBaseline)
	e.waitFor(t, both, "the baseline record", hasBaseline)
	before := deploy.Template(typed).DeepCopy()

	e.waitApplied(t, deploy, both, cm, e.setConfig(t, cm, "v2"))
	e.expectNoRollout(t, typed, deploy, before)

	sum := e.setPodStatuses(t, spc.Name, "2", "pod-1")
	e.waitApplied(t, deploy, typed, spc, sum)
	e.waitApplied(t, deploy, both, spc, sum)
	if _, ok := (strategy.EnvVars{}).Applied(deploy.Template(typed), cm); ok {
		t.Fatal("the typed SecretProviderClass workload carries the ConfigMap's env var")
	}
}

// Reloader bug 10: its --resource-label-selector also filters the pod
// statuses, which carry no user labels, so CSI reloads stop. Ripple
// applies the selector to ConfigMaps and Secrets only.
func TestCSIResourceLabelSelectorKeepsPodStatuses(t *testing.T) {
	e := startCSIRipple(t, "--resource-label-selector=team=payments")
	deploy := kit.Deployment
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "unlabelled"}
	spc := refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}
	e.newConfig(t, cm)
	e.newSPC(t, spc.Name, nil)
	e.setPodStatuses(t, spc.Name, "1", "pod-1")
	d := e.csiWorkload(t, "app", ann(autoKey, "true"), nil, spc.Name, envFrom(cm.Kind, cm.Name))
	e.waitFor(t, d, "the baseline record", hasBaseline)

	// The selector is in force: a ConfigMap without the label is not seen.
	before := deploy.Template(d).DeepCopy()
	e.setConfig(t, cm, "v2")
	e.expectNoRollout(t, d, deploy, before)

	e.waitApplied(t, deploy, d, spc, e.setPodStatuses(t, spc.Name, "2", "pod-1"))
}

// The env var Ripple writes for a SecretProviderClass is Reloader's, name
// and value, so a cluster switching from Reloader does not roll again: the
// value is the SHA1 of the sorted "id=version" entries plus
// "SecretProviderClassName=<name>", joined by ";".
func TestCSIDigestIsReloaders(t *testing.T) {
	e := startCSIRipple(t)
	spc := "vault-db.prod"
	e.newSPC(t, spc, nil)
	e.setPodStatuses(t, spc, "1", "pod-1")
	d := e.csiWorkload(t, "app", ann(spcReloadKey, spc), nil, spc)
	e.waitFor(t, d, "the baseline record", hasBaseline)
	sum := e.setPodStatuses(t, spc, "7", "pod-1")

	entries := []string{"SecretProviderClassName=" + spc}
	for _, o := range spcObjects("7") {
		entries = append(entries, o.ID+"="+o.Version)
	}
	slices.Sort(entries)
	h := sha1.Sum([]byte(strings.Join(entries, ";"))) //nolint:gosec // as Reloader computes it, see the import
	want := hex.EncodeToString(h[:])
	if sum != want {
		t.Fatalf("digest.SecretProviderClassPodStatus = %s, want Reloader's %s", sum, want)
	}
	const name = "STAKATER_VAULT_DB_PROD_SECRETPROVIDERCLASS"
	e.waitFor(t, d, name+" = "+want, func(o client.Object) bool {
		for _, env := range o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env {
			if env.Name == name {
				return env.Value == want
			}
		}
		return false
	})
}

// After a restart Ripple has seen no rotation: it takes the state the pods
// show. An unchanged state rolls nothing; a rotation made while it was down
// rolls once.
func TestCSIRestart(t *testing.T) {
	e := newEnv(t)
	deploy := kit.Deployment
	spc := refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}
	pods := []string{"pod-1", "pod-2", "pod-3"}
	stop := e.run(t, "--enable-csi-integration")
	e.waitWatching(t, "SecretProviderClassPodStatus")
	e.newSPC(t, spc.Name, nil)
	e.setPodStatuses(t, spc.Name, "1", pods...)
	d := e.csiWorkload(t, "app", ann(autoKey, "true"), nil, spc.Name)
	e.waitFor(t, d, "the baseline record", hasBaseline)
	stop()

	count := e.templateChanges(t, d)
	stop = e.run(t, "--enable-csi-integration")
	e.waitWatching(t, "SecretProviderClassPodStatus")
	if got := count(); got != 0 {
		t.Fatalf("a restart without a rotation changed the pod template %d times", got)
	}
	stop()

	sum := e.setPodStatuses(t, spc.Name, "2", pods...)
	count = e.templateChanges(t, d)
	e.run(t, "--enable-csi-integration")
	e.waitApplied(t, deploy, d, spc, sum)
	if got := count(); got != 1 {
		t.Fatalf("a rotation made while Ripple was down changed the pod template %d times, want 1", got)
	}
}
