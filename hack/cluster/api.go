package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// API is a running etcd and kube-apiserver with RBAC authorization on.
type API struct {
	// Config is the admin (system:masters) client config.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for the admin user, usable by kubectl.
	Kubeconfig string

	env *envtest.Environment
	dir string
	// killed holds the command lines of the components Kill ended, for
	// Restart; restarted are the processes Restart started, for Stop.
	killed    map[Component][]string
	restarted []*proc
}

// APIOptions tunes StartAPI.
type APIOptions struct {
	// CRDDirectoryPaths are installed before StartAPI returns.
	CRDDirectoryPaths []string
	// APIServerArgs are extra kube-apiserver flags, for example to set a
	// shorter event TTL.
	APIServerArgs map[string]string
}

// StartAPI starts etcd and kube-apiserver from the built binaries.
func StartAPI(opts APIOptions) (*API, error) {
	tools, err := ToolsDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ripple-api-")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    tools,
		CRDDirectoryPaths:        opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	apiArgs := env.ControlPlane.GetAPIServer().Configure()
	// RBAC only: envtest defaults to it, but tests rely on it, so say so.
	apiArgs.Set("authorization-mode", "RBAC")
	for k, v := range opts.APIServerArgs {
		apiArgs.Set(k, v)
	}
	// Loopback only, and etcd without fsync: data is thrown away anyway.
	env.ControlPlane.GetAPIServer().Address = "127.0.0.1"

	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", tools, err)
	}
	a := &API{Config: cfg, env: env, dir: dir, killed: map[Component][]string{}}
	admin, err := env.AddUser(envtest.User{Name: "ripple-admin", Groups: []string{"system:masters"}}, nil)
	if err == nil {
		var kc []byte
		if kc, err = admin.KubeConfig(); err == nil {
			a.Kubeconfig = filepath.Join(dir, "kubeconfig")
			err = os.WriteFile(a.Kubeconfig, kc, 0o600)
		}
	}
	if err != nil {
		_ = a.Stop()
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	return a, nil
}

// Stop ends etcd and kube-apiserver, restarted ones too, and removes their
// directories. The API server stops before etcd, which it needs to shut
// down cleanly; envtest's Stop skips a process that was killed.
func (a *API) Stop() error {
	errs := []error{a.stopRestarted(APIServer), a.env.Stop(), a.stopRestarted(Etcd), os.RemoveAll(a.dir)}
	return errors.Join(errs...)
}

// Dir is a scratch directory that Stop removes.
func (a *API) Dir() string { return a.dir }

// ServiceAccountConfig returns a client config that authenticates as the
// admin but acts as the ServiceAccount namespace/name through impersonation,
// so a test sees exactly the permissions RBAC grants that ServiceAccount.
func (a *API) ServiceAccountConfig(namespace, name string) *rest.Config {
	cfg := rest.CopyConfig(a.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	return cfg
}

// UserKubeconfig writes a kubeconfig for the user name in groups (a client
// certificate the API server trusts, as a node's would be) into Dir and
// returns its path. RBAC grants the user nothing until a binding does.
func (a *API) UserKubeconfig(name string, groups ...string) (string, error) {
	user, err := a.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(a.dir, "user-*.kubeconfig")
	if err != nil {
		return "", err
	}
	_, err = f.Write(kc)
	return f.Name(), errors.Join(err, f.Close())
}
