// Package metainfo is Reloader's reloader-meta-info ConfigMap, in which
// Reloader describes itself (build and options) for tools that read it.
// Ripple's leader publishes its options there (Add), and Ripple's own
// commands (explain, approve, history, resume) read them back (Read) and
// resolve the settings they decide with: each flag given on their command
// line, else the published value, else the default (Flags.Resolve).
package metainfo

import (
	"context"
	"encoding/json"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/version"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The ConfigMap in which Reloader describes itself; tools read it.
const (
	metaInfoName       = "reloader-meta-info"
	metaInfoLabel      = "reloader.stakater.com/meta-info"
	metaInfoLabelValue = "reloader"
)

// metaInfo publishes reloader-meta-info once, on the leader only (Reloader
// writes it from every replica). A failure is logged, as in Reloader: the
// ConfigMap is informational.
type metaInfo struct {
	client client.Client
	reader client.Reader
	info   config.MetaInfo
	// log is the manager's logger: a runnable's context carries none.
	log logr.Logger
}

// buildInfo is Reloader's buildInfo document.
type buildInfo struct {
	GoVersion      string    `json:"goVersion"`
	ReleaseVersion string    `json:"releaseVersion"`
	CommitHash     string    `json:"commitHash"`
	CommitTime     time.Time `json:"commitTime"`
	Edition        string    `json:"edition"`
}

// Add publishes reloader-meta-info from the leader, in reload and in
// webhook mode, when info.Namespace is set.
func Add(mgr ctrl.Manager, info config.MetaInfo) error {
	if info.Namespace == "" {
		return nil
	}
	return mgr.Add(&metaInfo{client: mgr.GetClient(), reader: mgr.GetAPIReader(), info: info, log: mgr.GetLogger()})
}

func (m *metaInfo) Start(ctx context.Context) error {
	if err := m.publish(ctx); err != nil {
		m.log.Error(err, "publishing the meta-info ConfigMap", "namespace", m.info.Namespace, "name", metaInfoName)
	}
	return nil
}

func (m *metaInfo) publish(ctx context.Context) error {
	data := map[string]any{
		"buildInfo":       buildInfo{GoVersion: runtime.Version(), ReleaseVersion: version.Version, CommitHash: "unknown", Edition: "ripple"},
		"reloaderOptions": m.info.Options,
		"deploymentInfo":  metav1.ObjectMeta{Name: m.info.Deployment, Namespace: m.info.Namespace},
	}
	cm := &corev1.ConfigMap{}
	err := m.reader.Get(ctx, types.NamespacedName{Namespace: m.info.Namespace, Name: metaInfoName}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	exists := err == nil
	cm.Name, cm.Namespace = metaInfoName, m.info.Namespace
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[metaInfoLabel] = metaInfoLabelValue
	cm.Data = map[string]string{}
	for k, v := range data {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		cm.Data[k] = string(b)
	}
	if exists {
		return m.client.Update(ctx, cm, client.FieldOwner(workload.FieldManager))
	}
	return m.client.Create(ctx, cm, client.FieldOwner(workload.FieldManager))
}
