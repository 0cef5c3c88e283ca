package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/pin"
)

// clusterFlags are the flag groups explain, history and approve share: kubectl's
// connection flags and the Ripple settings that override its meta-info.
type clusterFlags struct {
	connection, rippleFlags *pflag.FlagSet
	loading                 *clientcmd.ClientConfigLoadingRules
	overrides               clientcmd.ConfigOverrides
	ripple                  *metainfo.Flags
	// rest is the configuration connect built, for what a client.Client
	// cannot ask (discovery).
	rest *rest.Config
}

// readWorkload connects as userAgent and reads the settings of the Ripple
// to explain (settings: its meta-info in rippleNamespace, or the only one
// found) and the workload of kind (as Kind.Name() names it) called name,
// in the context's namespace.
func (c *clusterFlags) readWorkload(ctx context.Context, userAgent, rippleNamespace string, unread onUnread, kind, name string) (workloadRead, error) {
	cl, ns, err := c.connect(userAgent)
	if err != nil {
		return workloadRead{}, err
	}
	meta, settings, err := c.settings(ctx, cl, rippleNamespace, unread)
	if err != nil {
		return workloadRead{}, err
	}
	k, _ := explain.Find(explain.Kinds(settings, cl), kind)
	obj := k.New()
	if err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return workloadRead{}, fmt.Errorf("%s %s/%s not found", k.Name(), ns, name)
		}
		return workloadRead{}, err
	}
	return workloadRead{client: cl, settings: settings, meta: meta, kind: k, obj: obj}, nil
}

// onUnread is what a command does when the user may not read Ripple's
// settings: warn on a writer and go on with the defaults and the flags
// given, or (nil) fail.
type onUnread io.Writer

// settings reads Ripple's meta-info in rippleNamespace (or the only one
// found) and resolves the settings from it and the flags. When the user
// may not read it and unread is set, one line there says so and what to
// pass instead, and the command goes on with the defaults and the flags:
// a namespace tenant (the built-in view role) has no right in Ripple's
// namespace but a Role the chart may grant.
func (c *clusterFlags) settings(ctx context.Context, cl client.Reader, rippleNamespace string, unread onUnread) (metainfo.Info, metainfo.Settings, error) {
	meta, err := metainfo.Read(ctx, cl, rippleNamespace)
	var u *metainfo.Unreadable
	switch {
	case errors.As(err, &u) && unread != nil:
		fmt.Fprintln(unread, u.Warning())
	case err != nil:
		return meta, metainfo.Settings{}, err
	}
	settings, err := c.ripple.Resolve(meta)
	if err != nil {
		return meta, settings, usageError{err}
	}
	return meta, settings, nil
}

// refusePinning turns the settings' pinning off where the API server does
// not serve what it needs, as Ripple does at start, so that explain says
// why a workload is not pinned (pin.Refusal). Call it after connect.
func (c *clusterFlags) refusePinning(s *metainfo.Settings) error {
	if !s.Plan.Pinning {
		return nil
	}
	why, err := pin.RefusalAt(c.rest)
	if err != nil {
		return err
	}
	if why != "" {
		s.Plan.Pinning, s.Plan.PinRefusal = false, why
	}
	return nil
}

// workloadRead is a workload as readWorkload read it, with the settings
// of its Ripple.
type workloadRead struct {
	client   client.Client
	settings metainfo.Settings
	// meta is the reloader-meta-info read; its Origin is empty when none
	// was found, and the settings are then the command's own.
	meta metainfo.Info
	kind explain.Kind
	obj  client.Object
}

// bind registers the flags on c in place: they point into c, so c must
// not be copied afterwards.
func (c *clusterFlags) bind() {
	c.loading = clientcmd.NewDefaultClientConfigLoadingRules()
	c.connection = pflag.NewFlagSet("connection", pflag.ContinueOnError)
	c.connection.StringVar(&c.loading.ExplicitPath, "kubeconfig", "", "Path to the kubeconfig file; default: $KUBECONFIG, then $HOME/.kube/config.")
	clientcmd.BindOverrideFlags(&c.overrides, c.connection, clientcmd.RecommendedConfigOverrideFlags(""))
	c.rippleFlags = pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	c.ripple = metainfo.BindFlags(c.rippleFlags)
	// Bound with its group, it changes no decision.
	_ = c.rippleFlags.MarkHidden("cronjob-reload")
}

// join returns the command's whole flag set: its own flags first.
func (c *clusterFlags) join(command string, own *pflag.FlagSet) *pflag.FlagSet {
	all := pflag.NewFlagSet(command, pflag.ContinueOnError)
	all.SortFlags = false
	for _, fs := range []*pflag.FlagSet{own, c.connection, c.rippleFlags} {
		all.AddFlagSet(fs)
	}
	return all
}

// connect builds a client on the user's credentials from kubectl's
// connection flags, as explain and history read the cluster, and returns
// the namespace the flags or the kubeconfig name.
func (c *clusterFlags) connect(userAgent string) (client.Client, string, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(c.loading, &c.overrides)
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", c.connectionError(err)
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", c.connectionError(err)
	}
	rc.UserAgent = userAgent
	kubectlRates(rc)
	c.rest = rc
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	cl, err := client.New(rc, client.Options{Scheme: scheme})
	return cl, ns, err
}

// kubectlRates gives rc kubectl's client-side rate limits where the
// kubeconfig sets none: client-go's own (5 requests a second) made
// `explain --all -A` wait minutes on a cluster of a few hundred opted-in
// workloads, each read with a few GETs. The API server's priority and
// fairness still bounds what the user gets.
func kubectlRates(rc *rest.Config) {
	if rc.QPS == 0 {
		rc.QPS = 50
	}
	if rc.Burst == 0 {
		rc.Burst = 300
	}
}

// exitCode prints a command's error, each line prefixed with the command,
// and returns its exit code: 0 without an error, 2 for a bad argument,
// exitOverLimit for a change above `plan --max-rollouts`, else 1.
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
	if errors.As(err, &overLimit{}) {
		return exitOverLimit
	}
	return 1
}
