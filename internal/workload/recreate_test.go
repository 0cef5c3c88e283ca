package workload

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func jobKind(c client.Reader) Kind {
	return NewJob(JobOptions{Reader: c, Namespace: "ripple", RecordLabel: "ripple.dev/recreate", ReplacesKey: "ripple.dev/replaces"})
}

func migrate() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "migrate", UID: "old-uid",
			Labels: map[string]string{"app": "migrate", "controller-uid": "old-uid", "job-name": "migrate"}},
		Spec: batchv1.JobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"controller-uid": "old-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"controller-uid": "old-uid", "job-name": "migrate"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "m", Image: "v1"}}},
			},
		},
	}
}

func records(t *testing.T, c client.Client) []corev1.ConfigMap {
	t.Helper()
	l := &corev1.ConfigMapList{}
	if err := c.List(t.Context(), l, client.InNamespace("ripple")); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// A Job takes a reload by being re-created with the new template, as
// Reloader does: without the labels and selector derived from the old
// UID; the record that carried it across the delete is gone after.
func TestJobRecreate(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(migrate()).Build()
	kind := jobKind(c)
	old := &batchv1.Job{}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(migrate()), old)
	tpl := old.Spec.Template.DeepCopy()
	tpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_CFG_CONFIGMAP", Value: "v2"}}
	if _, err := kind.Write(t.Context(), c, old, Update{Template: tpl, Annotations: map[string]*string{"applied": ptr.To("1")}}); err != nil {
		t.Fatal(err)
	}
	got := &batchv1.Job{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatal(err)
	}
	if got.UID == "old-uid" || !equality.Semantic.DeepEqual(got.Spec.Template.Spec.Containers[0].Env, tpl.Spec.Containers[0].Env) || got.Annotations["applied"] != "1" ||
		got.Labels["app"] != "migrate" || got.Labels["controller-uid"] != "" || got.Spec.Selector != nil || got.Spec.Template.Labels["job-name"] != "" {
		t.Errorf("re-created Job: %+v", got)
	}
	if rs := records(t, c); len(rs) != 0 {
		t.Errorf("records left: %v", rs)
	}
	// A write without a template patches the metadata only.
	if _, err := kind.Write(t.Context(), c, got, Update{Annotations: map[string]*string{"applied": ptr.To("2")}}); err != nil {
		t.Fatal(err)
	}
	again := &batchv1.Job{}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(old), again)
	if again.UID != got.UID || again.Annotations["applied"] != "2" {
		t.Errorf("metadata write re-created the Job or lost the annotation: %+v", again.ObjectMeta)
	}
}

// A record an earlier attempt left (sealed, of the same Job, or one that
// does not open) is deleted and the reload's own created in its place,
// never updated: the job-records Role grants ConfigMaps create and delete
// only, as their names cannot be listed in it.
func TestJobRecreateOverALeftover(t *testing.T) {
	for _, sealed := range []bool{true, false} {
		updates := 0
		c := fake.NewClientBuilder().WithObjects(migrate()).WithInterceptorFuncs(interceptor.Funcs{
			Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if _, ok := obj.(*corev1.ConfigMap); ok {
					updates++
					return apierrors.NewForbidden(corev1.Resource("configmaps"), obj.GetName(), errors.New("the job-records Role grants no update"))
				}
				return cl.Update(ctx, obj, opts...)
			},
		}).Build()
		kind := jobKind(c).(job)
		old := &batchv1.Job{}
		_ = c.Get(t.Context(), client.ObjectKeyFromObject(migrate()), old)
		leftover := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ripple", Name: recordName(client.ObjectKeyFromObject(old))},
			Data: map[string]string{"left": "by an earlier attempt"}}
		if sealed {
			var err error
			if leftover, err = kind.record(t.Context(), c, old, recreatedAsIs(t, old)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Create(t.Context(), leftover); err != nil {
			t.Fatal(err)
		}
		tpl := old.Spec.Template.DeepCopy()
		tpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_CFG_CONFIGMAP", Value: "v2"}}
		if _, err := kind.Write(t.Context(), c, old, Update{Template: tpl}); err != nil {
			t.Fatalf("sealed leftover %t: %v", sealed, err)
		}
		got := &batchv1.Job{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), got); err != nil {
			t.Fatal(err)
		}
		if got.UID == "old-uid" || !equality.Semantic.DeepEqual(got.Spec.Template.Spec.Containers[0].Env, tpl.Spec.Containers[0].Env) {
			t.Errorf("sealed leftover %t: the Job re-created %s with env %v, want the reload's", sealed, got.UID, got.Spec.Template.Spec.Containers[0].Env)
		}
		if rs := records(t, c); len(rs) != 0 || updates != 0 {
			t.Errorf("sealed leftover %t: %d records left, %d ConfigMap updates; want none", sealed, len(rs), updates)
		}
	}
}

// recreatedAsIs is the new Job that replaces j with no template change.
func recreatedAsIs(t *testing.T, j *batchv1.Job) *unstructured.Unstructured {
	t.Helper()
	next, err := recreatedFrom(jobAsStored(t, j, nil), &j.Spec.Template, Update{Template: &j.Spec.Template})
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// jobAsStored is j as the API server would serve it as JSON, with extra
// set at each of its paths: fields Ripple's types do not know.
func jobAsStored(t *testing.T, j *batchv1.Job, extra map[string][]any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(j)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("Job"))
	for field, path := range extra {
		parent, ok := at(u.Object, path)
		if !ok {
			t.Fatalf("no %v in the Job", path)
		}
		switch p := parent.(type) {
		case map[string]any:
			p[field] = map[string]any{"kept": true, "n": int64(7)}
		default:
			t.Fatalf("%v is not an object", path)
		}
	}
	return u
}

// jobUnknownFields are fields a newer cluster's Job could hold that
// Ripple's copy of the Kubernetes types does not know, by the path of the
// object that holds them: on the Job's spec, the pod's spec, a container
// and an env entry.
var jobUnknownFields = map[string][]any{
	"futureJobField": {"spec"},
	"futurePodField": {"spec", "template", "spec"},
	"futureField":    {"spec", "template", "spec", "containers", 0},
	"futureEnv":      {"spec", "template", "spec", "containers", 0, "env", 0},
}

// envJob is migrate with an env var of its own, where jobUnknownFields
// puts a field.
func envJob() *batchv1.Job {
	j := migrate()
	j.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}
	return j
}

// storedJobClient holds objs, serves a Job as the API server stores it,
// with the fields of jobUnknownFields, to a read as an unstructured object
// (the fake client keeps only what the types know), and records the JSON
// of each Job created, as it is sent.
func storedJobClient(t *testing.T, created *[]map[string]any, objs ...client.Object) client.WithWatch {
	t.Helper()
	return fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok || u.GetKind() != "Job" {
				return c.Get(ctx, key, obj, opts...)
			}
			typed := &batchv1.Job{}
			if err := c.Get(ctx, key, typed, opts...); err != nil {
				return err
			}
			jobAsStored(t, typed, jobUnknownFields).DeepCopyInto(u)
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, isJob := obj.(*batchv1.Job); isJob || obj.GetObjectKind().GroupVersionKind().Kind == "Job" {
				b, err := json.Marshal(obj)
				if err != nil {
					return err
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					return err
				}
				*created = append(*created, m)
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
}

// wantUnknownFields fails t unless the created Job holds every field of
// jobUnknownFields.
func wantUnknownFields(t *testing.T, created []map[string]any) {
	t.Helper()
	if len(created) != 1 {
		t.Fatalf("%d Jobs created, want 1", len(created))
	}
	for field, path := range jobUnknownFields {
		parent, _ := at(created[0], path)
		if m, _ := parent.(map[string]any); m == nil || m[field] == nil {
			t.Errorf("the re-created Job lost %v.%s; it holds:\n%v", path, field, created[0])
		}
	}
}

// A Job re-created for a reload keeps every field of the Job as stored,
// those Ripple's types do not know included (a newer cluster's), with the
// reload written: the Job is built from the API server's JSON, not from
// the typed copy of the cache. So is one re-created from its record after
// an interruption.
func TestJobRecreateKeepsEveryField(t *testing.T) {
	old := envJob()
	var created []map[string]any
	c := storedJobClient(t, &created, old)
	kind := jobKind(c)
	cached := &batchv1.Job{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), cached); err != nil {
		t.Fatal(err)
	}
	tpl := cached.Spec.Template.DeepCopy()
	tpl.Spec.Containers[0].Env = append(tpl.Spec.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_CFG_CONFIGMAP", Value: "h2"})
	if _, err := kind.Write(t.Context(), c, cached, Update{Template: tpl}); err != nil {
		t.Fatal(err)
	}
	wantUnknownFields(t, created)
	got := &batchv1.Job{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got.Spec.Template.Spec.Containers[0].Env, tpl.Spec.Containers[0].Env) || got.Spec.Selector != nil {
		t.Errorf("re-created Job: env %v, selector %v; want the reload's env and no selector", got.Spec.Template.Spec.Containers[0].Env, got.Spec.Selector)
	}

	// From the record, after a stop between the delete and the create.
	stored := storedJobClient(t, new([]map[string]any), old)
	recorder := jobKind(stored).(job)
	if err := stored.Get(t.Context(), client.ObjectKeyFromObject(old), cached); err != nil {
		t.Fatal(err)
	}
	next, err := recorder.recreated(t.Context(), cached, Update{Template: tpl})
	if err != nil {
		t.Fatal(err)
	}
	record, err := recorder.record(t.Context(), stored, cached, next)
	if err != nil {
		t.Fatal(err)
	}
	created = nil
	c = storedJobClient(t, &created, record)
	recorder.o.Reader = c
	if did, err := recorder.Finish(t.Context(), c, client.ObjectKeyFromObject(old), nil); !did || err != nil {
		t.Fatalf("Finish = %v, %v", did, err)
	}
	wantUnknownFields(t, created)
}

// A re-create that cannot be written on the Job as stored does nothing: a
// template change other than the strategies' (env vars, annotations)
// could not be carried without the types' reading of the rest, and a
// cached copy older than the stored Job is a conflict, retried on the
// next copy. The Job stays and no record is left.
func TestJobRecreateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(cached *batchv1.Job, tpl *corev1.PodTemplateSpec)
		check func(error) bool
	}{
		{"an image change", func(_ *batchv1.Job, tpl *corev1.PodTemplateSpec) { tpl.Spec.Containers[0].Image = "v2" },
			func(err error) bool { return err != nil && !apierrors.IsConflict(err) }},
		{"a stale cached copy", func(cached *batchv1.Job, _ *corev1.PodTemplateSpec) { cached.ResourceVersion = "1" },
			apierrors.IsConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := storedJobClient(t, new([]map[string]any), envJob())
			cached := &batchv1.Job{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(migrate()), cached); err != nil {
				t.Fatal(err)
			}
			tpl := cached.Spec.Template.DeepCopy()
			tpl.Spec.Containers[0].Env = append(tpl.Spec.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_CFG_CONFIGMAP", Value: "h2"})
			tc.edit(cached, tpl)
			_, err := jobKind(c).Write(t.Context(), c, cached, Update{Template: tpl})
			if !tc.check(err) {
				t.Errorf("Write = %v", err)
			}
			got := &batchv1.Job{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(migrate()), got); err != nil || got.UID != "old-uid" {
				t.Errorf("the Job was replaced (%v, UID %s)", err, got.UID)
			}
			if rs := records(t, c); len(rs) != 0 {
				t.Errorf("records left: %v", rs)
			}
		})
	}
}

// A re-create interrupted after the delete (the record left, the Job
// gone) is finished by Finish, and by the recovery at start; a record of a
// Job that still runs (stopped before the delete) is dropped.
func TestJobFinishAndRecover(t *testing.T) {
	keys := fake.NewClientBuilder().Build() // the record key, kept by the kind once read
	kind := jobKind(keys).(job)
	next := recreatedAsIs(t, migrate())
	record, err := kind.record(t.Context(), keys, migrate(), next)
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithObjects(record).Build()
	kind.o.Reader = c
	key := client.ObjectKeyFromObject(migrate())
	if did, err := kind.Finish(t.Context(), c, key, migrate()); did || err != nil {
		t.Errorf("Finish of an existing Job = %v, %v; want nothing", did, err)
	}
	if did, err := kind.Finish(t.Context(), c, key, nil); !did || err != nil {
		t.Fatalf("Finish = %v, %v", did, err)
	}
	if err := c.Get(t.Context(), key, &batchv1.Job{}); err != nil || len(records(t, c)) != 0 {
		t.Errorf("after Finish: Job %v, %d records", err, len(records(t, c)))
	}

	// The recovery: one record whose Job is gone, one whose Job still runs.
	running := migrate()
	running.Name = "still-running"
	runningNext := recreatedAsIs(t, running)
	r1, _ := kind.record(t.Context(), keys, running, runningNext)
	other := migrate()
	other.Namespace = "elsewhere"
	r2, _ := kind.record(t.Context(), keys, other, recreatedAsIs(t, other))
	c = fake.NewClientBuilder().WithObjects(r1, r2, running).Build()
	kind.o.Reader = c
	if err := kind.Recover(t.Context(), c, []string{"shop"}); err != nil {
		t.Fatal(err)
	}
	rs := records(t, c)
	if len(rs) != 1 || rs[0].Name != r2.Name {
		t.Errorf("records after the recovery: %v; want only the other namespace's", rs)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(other), &batchv1.Job{}); err == nil {
		t.Error("the recovery acted outside its namespaces")
	}
}

// A record that holds no Job is dropped with an error.
func TestJobBadRecord(t *testing.T) {
	kind := jobKind(nil).(job)
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ripple", Name: recordName(client.ObjectKeyFromObject(migrate())),
		Labels: map[string]string{"ripple.dev/recreate": "true"}}, Data: map[string]string{recordKey: "{}"}}
	c := fake.NewClientBuilder().WithObjects(bad).Build()
	kind.o.Reader = c
	if err := kind.Recover(t.Context(), c, nil); err == nil || len(records(t, c)) != 0 {
		t.Errorf("Recover = %v with %d records; want an error and the record dropped", err, len(records(t, c)))
	}
}

func customScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypeWithName(DeploymentConfigGVK, &unstructured.Unstructured{})
	s.AddKnownTypeWithName(RolloutGVK, &unstructured.Unstructured{})
	return s
}

func customObj(u *unstructured.Unstructured, ann map[string]string) *unstructured.Unstructured {
	u.SetNamespace("shop")
	u.SetName("app")
	u.SetAnnotations(ann)
	_ = unstructured.SetNestedMap(u.Object, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"version": "old"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app"}}},
	}, "spec", "template")
	return u
}

// A DeploymentConfig and a Rollout take a reload as a JSON merge patch of
// their template; a Rollout with the restart strategy is restarted
// instead, its template left alone.
func TestCustomWrite(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tc := range []struct {
		kind    Kind
		ann     map[string]string
		restart bool
	}{
		{DeploymentConfig, nil, false},
		{NewRollout(RolloutOptions{StrategyKey: "strategy", Now: func() time.Time { return now }}), nil, false},
		{NewRollout(RolloutOptions{StrategyKey: "strategy", Now: func() time.Time { return now }}), map[string]string{"strategy": RolloutRestart}, true},
	} {
		u, ok := tc.kind.New().(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("%s.New is not unstructured", tc.kind.Name())
		}
		obj := customObj(u, tc.ann)
		c := fake.NewClientBuilder().WithScheme(customScheme(t)).WithObjects(obj).Build()
		got := tc.kind.New()
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		if tc.kind.KeepsTemplate(got) != tc.restart {
			t.Errorf("%s: KeepsTemplate = %v", tc.kind.Name(), !tc.restart)
		}
		tpl, err := tc.kind.PodTemplate(got)
		if err != nil || tpl.Annotations["version"] != "old" {
			t.Fatalf("%s: PodTemplate = %v, %v", tc.kind.Name(), tpl, err)
		}
		tpl.Annotations["version"] = "new"
		if _, err := tc.kind.Write(t.Context(), c, got, Update{Template: tpl, Annotations: map[string]*string{"applied": ptr.To("1")}}); err != nil {
			t.Fatalf("%s: Write: %v", tc.kind.Name(), err)
		}
		after := tc.kind.New()
		_ = c.Get(t.Context(), client.ObjectKeyFromObject(obj), after)
		v, _, _ := unstructured.NestedString(after.(*unstructured.Unstructured).Object, "spec", "template", "metadata", "annotations", "version")
		restartAt, _, _ := unstructured.NestedString(after.(*unstructured.Unstructured).Object, "spec", "restartAt")
		wantV, wantRestart := "new", ""
		if tc.restart {
			wantV, wantRestart = "old", now.Format(time.RFC3339)
		}
		if v != wantV || restartAt != wantRestart || after.GetAnnotations()["applied"] != "1" {
			t.Errorf("%s (restart %v): template version %q, restartAt %q, annotations %v", tc.kind.Name(), tc.restart, v, restartAt, after.GetAnnotations())
		}
		if _, ok := tc.kind.NewList().(*unstructured.UnstructuredList); !ok {
			t.Errorf("%s.NewList is not unstructured", tc.kind.Name())
		}
	}
	if _, err := DeploymentConfig.PodTemplate(&batchv1.Job{}); err == nil {
		t.Error("DeploymentConfig.PodTemplate(Job) did not fail")
	}
}
