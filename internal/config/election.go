package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ElectionOptions configure leader election among replicas.
type ElectionOptions struct {
	EnableHA                bool
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	// ReleaseOnCancel is Reloader 2's --leader-election-release-on-cancel.
	ReleaseOnCancel bool
	// PodNamespace is $POD_NAMESPACE. ($POD_NAME, which Reloader needs
	// with --enable-ha, is not read: a Lease holder's identity is its
	// host name and a unique suffix.)
	PodNamespace string
}

// Election is the validated leader election: only the holder of the
// Lease acts.
type Election struct {
	LeaderElection          bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	// ReleaseOnCancel releases the Lease on shutdown, so that a standby
	// takes over at once rather than when it expires.
	ReleaseOnCancel bool
}

func defaultElectionOptions() ElectionOptions {
	return ElectionOptions{
		LeaderElectionID: "stakater-reloader-lock",
		LeaseDuration:    15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		ReleaseOnCancel: true,
	}
}

func (o *ElectionOptions) readEnv(lookup func(string) string) {
	o.PodNamespace = lookup("POD_NAMESPACE")
}

// BindFlags registers the leader election flags.
func (o *ElectionOptions) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.EnableHA, "enable-ha", o.EnableHA, "Run as one of several replicas: only the holder of the Lease stakater-reloader-lock acts (with --shard-count, the Lease stakater-reloader-lock-shard-<index>-of-<count>), in --leader-election-namespace, else $POD_NAMESPACE, else the pod's own. Unlike Reloader, $POD_NAME is not needed.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "The same as --enable-ha.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the Lease. Reloader's name, so Reloader and Ripple replicas never act at once. With --shard-count, each shard's Lease is this name followed by -shard-<index>-of-<count>.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the Lease; default $POD_NAMESPACE.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "How long standbys wait before taking over a Lease that is not renewed.")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before it gives up leading; less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the Lease.")
	fs.BoolVar(&o.ReleaseOnCancel, "leader-election-release-on-cancel", o.ReleaseOnCancel, "On SIGTERM, release the Lease at once, so that a standby takes over in moments (Reloader 2's flag). false keeps it until it expires (--leader-election-lease-duration), so that no standby acts while this replica finishes its in-flight reloads (--graceful-shutdown-timeout).")
}

// validate resolves the election; a shard's Lease is its own, named
// <id>-shard-<index>-of-<count>, so HA works inside each shard as without
// shards and a changed count never waits on the old shards' Leases.
func (o *ElectionOptions) validate(errs *problems, shard Shard) Election {
	id := o.LeaderElectionID
	if shard.Sharded() {
		id = fmt.Sprintf("%s-shard-%d-of-%d", id, shard.Index, shard.Count)
	}
	e := Election{
		LeaderElection: o.EnableHA || o.LeaderElect, LeaderElectionID: id, LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod, ReleaseOnCancel: o.ReleaseOnCancel,
	}
	if e.LeaderElectionNamespace == "" {
		e.LeaderElectionNamespace = o.PodNamespace
	}
	if !e.LeaderElection {
		return e
	}
	if msgs := validation.IsDNS1123Subdomain(id); len(msgs) > 0 {
		errs.bad("leader-election-id", "%q is not a Lease name: %s", id, strings.Join(msgs, "; "))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"leader-election-lease-duration", o.LeaseDuration}, {"leader-election-renew-deadline", o.RenewDeadline}, {"leader-election-retry-period", o.RetryPeriod}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			errs.bad(d.flag, "%s must be a whole number of seconds, at least 1s", d.v)
		}
	}
	if o.RenewDeadline >= o.LeaseDuration {
		errs.bad("leader-election-renew-deadline", "%s must be less than --leader-election-lease-duration %s", o.RenewDeadline, o.LeaseDuration)
	}
	// client-go's own rule: retries are jittered by up to 1.2 times the
	// period, and each must fit in the renew deadline.
	if float64(o.RenewDeadline) <= 1.2*float64(o.RetryPeriod) {
		errs.bad("leader-election-retry-period", "%s times 1.2 (client-go's jitter) must be less than --leader-election-renew-deadline %s", o.RetryPeriod, o.RenewDeadline)
	}
	return e
}
