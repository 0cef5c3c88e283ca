package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// connect builds a client on the user's credentials from kubectl's
// connection flags, as explain and history read the cluster, and returns
// the namespace the flags or the kubeconfig name.
func connect(loading *clientcmd.ClientConfigLoadingRules, overrides *clientcmd.ConfigOverrides, userAgent string) (client.Client, string, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, overrides)
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", err
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	rc.UserAgent = userAgent
	c, err := client.New(rc, client.Options{})
	return c, ns, err
}

// exitCode prints a command's error, each line prefixed with the command,
// and returns its exit code: 0 without an error, 2 for a bad argument,
// else 1.
func exitCode(err error, stderr io.Writer, command string) int {
	if err == nil {
		return 0
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "%s: %s\n", command, line)
	}
	if errors.As(err, &usageError{}) {
		return 2
	}
	return 1
}
