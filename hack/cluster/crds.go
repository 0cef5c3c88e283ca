package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The CRDs of the optional kinds: the real ones, which hack/build-tools.sh
// copies into the tools directory, and OpenShift's DeploymentConfig, which
// has no CRD of its own and is stood in for by one under crds/ here.
const (
	RolloutCRD                      = "rollout-crd.yaml"
	SecretProviderClassCRD          = "secrets-store.csi.x-k8s.io_secretproviderclasses.yaml"
	SecretProviderClassPodStatusCRD = "secrets-store.csi.x-k8s.io_secretproviderclasspodstatuses.yaml"
	DeploymentConfigCRD             = "deploymentconfig.yaml"
)

// The CRDs of the declared kinds' presets (internal/declared), from each
// project's own module, which hack/build-tools.sh copies too.
const (
	CloneSetCRD            = "apps.kruise.io_clonesets.yaml"
	AdvancedStatefulSetCRD = "apps.kruise.io_statefulsets.yaml"
	AdvancedDaemonSetCRD   = "apps.kruise.io_daemonsets.yaml"
	KnativeServiceCRD      = "serving.knative.dev_services.yaml"
	ScaledJobCRD           = "keda.sh_scaledjobs.yaml"
	ExternalSecretCRD      = "external-secrets.io_externalsecrets.yaml"
	// WidgetCRD is a made-up kind under crds/ here, declared only in a
	// kinds file.
	WidgetCRD = "widget.yaml"
)

// ConfigRolloutCRD is Ripple's own CRD, as the Helm chart ships it.
const ConfigRolloutCRD = "ripple.dev_configrollouts.yaml"

// crdTimeout bounds the wait for a CRD to be served, or to be gone.
const crdTimeout = 30 * time.Second

// CRDFile returns the path of a CRD file named above: the tools
// directory's crds/ first, then this package's crds/.
func CRDFile(name string) (string, error) {
	var dirs []string
	if tools, err := ToolsDir(); err == nil {
		dirs = append(dirs, filepath.Join(tools, "crds"))
	}
	// This source file's directory: the repository is checked out wherever
	// the tests run.
	if _, self, _, ok := runtime.Caller(0); ok {
		dirs = append(dirs, filepath.Join(filepath.Dir(self), "crds"),
			filepath.Join(filepath.Dir(self), "..", "..", "deploy", "helm", "ripple", "files", "crds"))
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("CRD %s is in none of %v: run 'make tools' first", name, dirs)
}

// InstallCRDs installs the CRDs named (see CRDFile) and waits until each
// is Established and its versions are served by discovery.
func (a *API) InstallCRDs(ctx context.Context, names ...string) error {
	paths, err := crdFiles(names)
	if err != nil {
		return err
	}
	crds, err := envtest.InstallCRDs(a.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true, MaxTime: crdTimeout})
	if err != nil {
		return fmt.Errorf("installing %v: %w", names, err)
	}
	c, err := client.New(a.Config, client.Options{})
	if err != nil {
		return err
	}
	return poll(ctx, func(ctx context.Context) (bool, error) {
		for _, crd := range crds {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, err
			}
			if !established(got) {
				return false, nil
			}
		}
		return true, nil
	}, "CRDs %v to be Established", names)
}

// UninstallCRDs deletes the CRDs named and waits until they are gone and
// discovery no longer serves their kinds.
func (a *API) UninstallCRDs(ctx context.Context, names ...string) error {
	paths, err := crdFiles(names)
	if err != nil {
		return err
	}
	opts := envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}
	if err := envtest.ReadCRDFiles(&opts); err != nil {
		return err
	}
	if err := envtest.UninstallCRDs(a.Config, opts); err != nil {
		return fmt.Errorf("deleting %v: %w", names, err)
	}
	c, err := client.New(a.Config, client.Options{})
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(a.Config)
	if err != nil {
		return err
	}
	return poll(ctx, func(ctx context.Context) (bool, error) {
		for _, crd := range opts.CRDs {
			err := c.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
			if !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
			for _, v := range crd.Spec.Versions {
				list, err := dc.ServerResourcesForGroupVersion(crd.Spec.Group + "/" + v.Name)
				if err != nil && !apierrors.IsNotFound(err) {
					return false, err
				}
				if list == nil {
					continue
				}
				for _, r := range list.APIResources {
					if r.Name == crd.Spec.Names.Plural {
						return false, nil
					}
				}
			}
		}
		return true, nil
	}, "CRDs %v to be gone", names)
}

func poll(ctx context.Context, cond wait.ConditionWithContextFunc, what string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, crdTimeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		return fmt.Errorf("waiting for "+what+": %w", append(args, err)...)
	}
	return nil
}

func crdFiles(names []string) ([]string, error) {
	paths := make([]string, len(names))
	for i, name := range names {
		p, err := CRDFile(name)
		if err != nil {
			return nil, err
		}
		paths[i] = p
	}
	return paths, nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
