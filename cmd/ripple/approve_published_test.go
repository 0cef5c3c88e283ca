package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Without Ripple's digest key, approve takes what waits from the
// ConfigRollouts Ripple publishes: each config whose newest change lists
// the workload waiting for approval, at the config's resourceVersion;
// not a config whose newest change it does not wait for, nor an older
// change it waited for.
func TestPublishedWaiting(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "db-uid", ResourceVersion: "41"}}
	app := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", UID: "app-uid", ResourceVersion: "40"}}
	w := workload.Ref{Kind: "Deployment", Namespace: "shop", Name: "web"}
	waits := []v1alpha1.Consumer{{Kind: "Deployment", Name: "web", State: v1alpha1.ConsumerPending, Reason: "ReloadPending"}}
	done := []v1alpha1.Consumer{{Kind: "Deployment", Name: "web", State: v1alpha1.ConsumerComplete}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(db, app,
		rollout("db-1", "Secret", "db", "db-uid", "r-db-new", "41", time.Minute, waits),
		rollout("db-0", "Secret", "db", "db-uid", "r-db-old", "30", time.Hour, done),
		rollout("app-1", "ConfigMap", "app", "app-uid", "r-app-new", "40", time.Minute, done),
		rollout("app-0", "ConfigMap", "app", "app-uid", "r-app-old", "20", time.Hour, waits),
	).Build()
	sources := []plan.SourcePlan{{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "app"}}, {Ref: refs.Ref{Kind: refs.Secret, Name: "db"}}}
	got, revisions, err := published(t.Context(), c, w, sources)
	if err != nil {
		t.Fatal(err)
	}
	var stored corev1.Secret
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(db), &stored); err != nil {
		t.Fatal(err)
	}
	dbRef := refs.Ref{Kind: refs.Secret, Name: "db"}
	if len(got.Changes) != 1 || got.Changes[0].Ref != dbRef || got.Changes[0].Hash != "" ||
		got.Versions[dbRef] != stored.ResourceVersion || stored.ResourceVersion == "" || len(revisions) != 1 || revisions[0] != "r-db-new" {
		t.Fatalf("published %+v, revisions %v: want Secret db alone at resourceVersion %q, revision r-db-new", got, revisions, stored.ResourceVersion)
	}
	a := plan.ApprovalOf(got, "alice", time.Now(), false)
	if a.Changes[0].Digest != "" || a.Changes[0].Version != stored.ResourceVersion {
		t.Errorf("approval %+v: want no digest and the resourceVersion", a)
	}
	_, _, err = published(t.Context(), c, w, sources[:1])
	if err == nil || !strings.Contains(err.Error(), "no ConfigRollout of its configs says it waits for an approval") {
		t.Errorf("nothing waits: error %v", err)
	}
}

// rollout is a ConfigRollout of config (kind, name, uid) in namespace shop
// at data revision, which Ripple saw at the config's resourceVersion
// version, made age ago; consumers is its status's.
func rollout(name, kind, config, uid, revision, version string, age time.Duration, consumers []v1alpha1.Consumer) *v1alpha1.ConfigRollout {
	return &v1alpha1.ConfigRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, CreationTimestamp: metav1.NewTime(time.Now().Add(-age)),
			Labels: map[string]string{v1alpha1.LabelConfigKind: strings.ToLower(kind), v1alpha1.LabelConfigName: config}},
		Spec: v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: kind, Name: config, UID: k8stypes.UID(uid), ResourceVersion: version},
			Revision: revision},
		Status: v1alpha1.ConfigRolloutStatus{Consumers: consumers, ObservedConfigVersion: version},
	}
}

// An approval made from a ConfigRollout approves the data that change
// carries, the one approve prints, and nothing newer: when the config was
// written after the resourceVersion at which Ripple saw that change's
// data (Ripple has not looked at the write yet), approve refuses rather
// than approve the config's current resourceVersion, whose data no one
// showed.
func TestPublishedRefusesAConfigWrittenSince(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	w := workload.Ref{Kind: "Deployment", Namespace: "shop", Name: "web"}
	waits := []v1alpha1.Consumer{{Kind: "Deployment", Name: "web", State: v1alpha1.ConsumerPending, Reason: "ReloadPending"}}
	sources := []plan.SourcePlan{{Ref: refs.Ref{Kind: refs.Secret, Name: "db"}}}
	for name, tc := range map[string]struct{ seen, now, want string }{
		"written since":   {"41", "57", `Secret "db" was written (resourceVersion 57) after the change approve would approve (revision r-db-new, seen at resourceVersion 41)`},
		"seen at its own": {"57", "57", ""},
	} {
		t.Run(name, func(t *testing.T) {
			db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "db-uid", ResourceVersion: tc.now}}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(db,
				rollout("db-1", "Secret", "db", "db-uid", "r-db-new", tc.seen, time.Minute, waits)).Build()
			got, _, err := published(t.Context(), c, w, sources)
			if tc.want == "" {
				if err != nil || got.Versions[sources[0].Ref] != tc.now {
					t.Fatalf("published %+v, %v: want Secret db at resourceVersion %s", got, err, tc.now)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("published %+v, error %v: want an error saying %q", got, err, tc.want)
			}
		})
	}
}
