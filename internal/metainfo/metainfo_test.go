package metainfo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/config"
)

func get(t *testing.T, c client.Client) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "ops", Name: "reloader-meta-info"}, cm); err != nil {
		t.Fatalf("reloader-meta-info: %v", err)
	}
	return cm
}

// The ConfigMap has Reloader's name, label and documents, each JSON, with
// Reloader's keys; a second start updates it in place, keeping labels
// others added.
func TestPublish(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	info := config.MetaInfo{Namespace: "ops", Deployment: "reloader-reloader",
		Options: config.ReloaderOptions{ReloadStrategy: "annotations", ReloadOnCreate: true, NamespacesToIgnore: []string{}}}
	m := &metaInfo{client: c, reader: c, info: info}
	if err := m.publish(t.Context()); err != nil {
		t.Fatal(err)
	}
	cm := get(t, c)
	if cm.Labels["reloader.stakater.com/meta-info"] != "reloader" {
		t.Errorf("labels %v, want reloader.stakater.com/meta-info=reloader", cm.Labels)
	}
	var opts map[string]any
	if err := json.Unmarshal([]byte(cm.Data["reloaderOptions"]), &opts); err != nil {
		t.Fatalf("reloaderOptions: %v", err)
	}
	if opts["reloadStrategy"] != "annotations" || opts["reloadOnCreate"] != true || opts["autoReloadAll"] != false {
		t.Errorf("reloaderOptions %v, want Reloader's keys with the options' values", opts)
	}
	if ns, ok := opts["namespacesToIgnore"].([]any); !ok || len(ns) != 0 {
		t.Errorf("namespacesToIgnore %v, want [] as Reloader shows it", opts["namespacesToIgnore"])
	}
	var dep metav1.ObjectMeta
	if err := json.Unmarshal([]byte(cm.Data["deploymentInfo"]), &dep); err != nil || dep.Name != "reloader-reloader" || dep.Namespace != "ops" {
		t.Errorf("deploymentInfo %s (%v), want the Deployment reloader-reloader in ops", cm.Data["deploymentInfo"], err)
	}
	var build map[string]any
	if err := json.Unmarshal([]byte(cm.Data["buildInfo"]), &build); err != nil {
		t.Fatalf("buildInfo: %v", err)
	}
	for _, k := range []string{"goVersion", "releaseVersion", "commitHash", "commitTime", "edition"} {
		if _, ok := build[k]; !ok {
			t.Errorf("buildInfo %v has no %s", build, k)
		}
	}

	cm.Labels["team"] = "platform"
	if err := c.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	m.info.Options.ReloadStrategy = "env-vars"
	if err := m.publish(t.Context()); err != nil {
		t.Fatalf("publishing over an existing ConfigMap: %v", err)
	}
	cm = get(t, c)
	if err := json.Unmarshal([]byte(cm.Data["reloaderOptions"]), &opts); err != nil || opts["reloadStrategy"] != "env-vars" {
		t.Errorf("after the second start reloaderOptions %s, want the new options", cm.Data["reloaderOptions"])
	}
	if cm.Labels["team"] != "platform" || cm.Labels["reloader.stakater.com/meta-info"] != "reloader" {
		t.Errorf("labels %v, want both its own and Reloader's kept", cm.Labels)
	}
}

// Without a namespace ($RELOADER_NAMESPACE unset) nothing is published, as
// in Reloader.
func TestAddWithoutNamespace(t *testing.T) {
	if err := Add(nil, config.MetaInfo{}); err != nil {
		t.Fatalf("Add without a namespace: %v", err)
	}
}

// A failure is logged on the manager's logger, naming the ConfigMap, and
// does not stop Ripple.
func TestFailureIsLogged(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "reloader-meta-info", errors.New("no"))
		},
	}).Build()
	m := &metaInfo{client: c, reader: c, info: config.MetaInfo{Namespace: "ops"}, log: log}
	if err := m.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v, want nil: the ConfigMap is informational", err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "forbidden") || !strings.Contains(logged[0], "reloader-meta-info") {
		t.Errorf("logged %q, want one forbidden error naming reloader-meta-info", logged)
	}
}
