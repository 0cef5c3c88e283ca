package workload

import (
	"encoding/json"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// privileged is the Job an attacker wants Ripple to create: hostPID and
// privileged, in kube-system.
func privileged() *batchv1.Job {
	j := migrate()
	j.Namespace, j.Name = "kube-system", "pwn"
	j.Spec.Template.Spec.HostPID = true
	j.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	j.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
	return j
}

// A genuine interrupted re-create still completes after a restart: a new
// Job kind (a new Ripple) reads the key Secret the first one created, and
// the record is sealed, holding no readable Job.
func TestSealedRecordSurvivesRestart(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	first := jobKind(c).(job)
	record, err := first.record(t.Context(), c, migrate(), recreatedAsIs(t, migrate()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(record.BinaryData[recordKey]), "migrate") || len(record.Data) > 0 {
		t.Errorf("the record shows the Job in clear: %+v", record)
	}
	key := &corev1.Secret{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "ripple", Name: RecordKeySecret}, key); err != nil {
		t.Fatalf("no key Secret: %v", err)
	}
	if key.Immutable == nil || !*key.Immutable || len(key.Data[recordKeyData]) != 32 {
		t.Errorf("key Secret: immutable %v, %d key bytes", key.Immutable, len(key.Data[recordKeyData]))
	}
	if err := c.Create(t.Context(), record); err != nil {
		t.Fatal(err)
	}
	if err := jobKind(c).(job).Recover(t.Context(), c, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(migrate()), &batchv1.Job{}); err != nil {
		t.Errorf("the recorded Job was not created after the restart: %v", err)
	}
	if rs := records(t, c); len(rs) != 0 {
		t.Errorf("records left: %d", len(rs))
	}
}

// A record Ripple did not write, or one it wrote but altered or copied
// under another name, creates no Job, at the recovery nor in Finish: it
// is dropped with an error that names it and says why.
func TestForgedRecordCreatesNothing(t *testing.T) {
	plain, err := json.Marshal(privileged())
	if err != nil {
		t.Fatal(err)
	}
	victim := migrate() // a genuine record of shop/migrate, to tamper with
	for _, tc := range []struct {
		name  string
		forge func(t *testing.T, genuine func(*batchv1.Job) *corev1.ConfigMap) *corev1.ConfigMap
		job   types.NamespacedName // where the forged Job would be created
	}{
		{"unsealed privileged Job in kube-system", func(_ *testing.T, _ func(*batchv1.Job) *corev1.ConfigMap) *corev1.ConfigMap {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ripple", Name: "kube-system.pwn" + recordSuffix,
					Labels: map[string]string{"ripple.dev/recreate": "true"}, Annotations: map[string]string{"ripple.dev/replaces": "x"}},
				Data: map[string]string{"job.json": string(plain)}, BinaryData: map[string][]byte{recordKey: plain},
			}
		}, client.ObjectKeyFromObject(privileged())},
		{"sealed with another key", func(t *testing.T, _ func(*batchv1.Job) *corev1.ConfigMap) *corev1.ConfigMap {
			other := jobKind(fake.NewClientBuilder().Build()).(job)
			r, err := other.record(t.Context(), fake.NewClientBuilder().Build(), privileged(), recreatedAsIs(t, privileged()))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, client.ObjectKeyFromObject(privileged())},
		{"genuine record under another Job's name", func(_ *testing.T, genuine func(*batchv1.Job) *corev1.ConfigMap) *corev1.ConfigMap {
			r := genuine(victim)
			r.Name = recordName(types.NamespacedName{Namespace: "shop", Name: "other"})
			return r
		}, client.ObjectKeyFromObject(victim)},
		{"genuine record moved to another namespace's name", func(_ *testing.T, genuine func(*batchv1.Job) *corev1.ConfigMap) *corev1.ConfigMap {
			r := genuine(victim)
			r.Name = recordName(types.NamespacedName{Namespace: "kube-system", Name: "migrate"})
			return r
		}, client.ObjectKeyFromObject(victim)},
		{"genuine record with its spec altered", func(_ *testing.T, genuine func(*batchv1.Job) *corev1.ConfigMap) *corev1.ConfigMap {
			r := genuine(victim)
			r.BinaryData[recordKey][len(r.BinaryData[recordKey])-20] ^= 1
			return r
		}, client.ObjectKeyFromObject(victim)},
		{"genuine record replacing another UID", func(_ *testing.T, genuine func(*batchv1.Job) *corev1.ConfigMap) *corev1.ConfigMap {
			r := genuine(victim)
			r.Annotations["ripple.dev/replaces"] = "another-uid"
			return r
		}, client.ObjectKeyFromObject(victim)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range []string{"Recover", "Finish"} {
				c := fake.NewClientBuilder().Build()
				kind := jobKind(c).(job)
				genuine := func(j *batchv1.Job) *corev1.ConfigMap {
					r, err := kind.record(t.Context(), c, j, recreatedAsIs(t, j))
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				forged := tc.forge(t, genuine)
				if err := c.Create(t.Context(), forged); err != nil {
					t.Fatal(err)
				}
				restarted := jobKind(c).(job)
				if via == "Recover" {
					err = restarted.Recover(t.Context(), c, nil)
				} else {
					_, err = restarted.Finish(t.Context(), c, forgedKey(forged), nil)
				}
				if err == nil || !strings.Contains(err.Error(), forged.Name) {
					t.Errorf("%s: error %v does not name the record %s", via, err, forged.Name)
				}
				var jobs batchv1.JobList
				if err := c.List(t.Context(), &jobs); err != nil || len(jobs.Items) > 0 {
					t.Errorf("%s created %d Jobs (%v) from a forged record", via, len(jobs.Items), err)
				}
				if rs := records(t, c); len(rs) != 0 {
					t.Errorf("%s left the forged record", via)
				}
			}
		})
	}
}

// forgedKey is the Job a record's name claims, for Finish.
func forgedKey(record *corev1.ConfigMap) types.NamespacedName {
	ns, name, _ := strings.Cut(strings.TrimSuffix(record.Name, recordSuffix), ".")
	return types.NamespacedName{Namespace: ns, Name: name}
}
