package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/ripple-dev/ripple/internal/metainfo"
)

// validate checks the Ripple settings given as flags before any
// connection, so that a bad one is named as the error, not hidden behind
// the cluster's; the meta-info's values are checked once read.
func (c *clusterFlags) validate() error {
	if _, err := c.ripple.Resolve(metainfo.Info{}); err != nil {
		return usageError{err}
	}
	return nil
}

// connectionError says which kubeconfig is missing when err is that no
// connection could be configured: client-go's own message ("no
// configuration has been provided, try setting KUBERNETES_MASTER") names
// neither the file nor the flag. Other errors are returned as they are.
func (c *clusterFlags) connectionError(err error) error {
	if path := c.loading.ExplicitPath; path != "" && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--kubeconfig %s: no such file", path)
	}
	if !clientcmd.IsEmptyConfig(err) {
		return err
	}
	var found, missing []string
	for _, file := range c.loading.GetLoadingPrecedence() {
		if _, statErr := os.Stat(file); statErr == nil {
			found = append(found, file)
		} else {
			missing = append(missing, file)
		}
	}
	env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	switch {
	case len(found) > 0:
		return fmt.Errorf("the kubeconfig %s names no cluster to connect to (no current context): choose one with --context, or give --kubeconfig", strings.Join(found, ", "))
	case env != "":
		return fmt.Errorf("no kubeconfig: $KUBECONFIG is %s, and no such file exists; give --kubeconfig <file>, or set $KUBECONFIG to an existing file", env)
	}
	return fmt.Errorf("no kubeconfig: $KUBECONFIG is not set and %s does not exist; give --kubeconfig <file>, or set $KUBECONFIG", strings.Join(missing, ", "))
}
