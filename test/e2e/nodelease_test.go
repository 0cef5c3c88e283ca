package e2e

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// leaseHolder marks the node leases that keepNodesAlive owns.
const leaseHolder = "ripple-e2e"

// keepNodesAlive renews a node lease for every fake node until ctx ends.
//
// The local cluster's kwok posts node status only about once a minute and
// keeps no node leases, while kube-controller-manager runs with a 60s
// node-monitor-grace-period: so every minute or so the node lifecycle
// controller finds the nodes silent and marks every pod on them NotReady
// for good (kwok does not make them Ready again). Tests that run longer than
// a few seconds then wait forever for Ready pods. A lease renewed every few
// seconds is a heartbeat the node lifecycle controller accepts.
//
// A lease that someone else holds (kwok started with
// --node-lease-duration-seconds) is left alone.
func keepNodesAlive(ctx context.Context, cs kubernetes.Interface, nodes []string) <-chan struct{} {
	done := make(chan struct{})
	renew := func() {
		for _, name := range nodes {
			_ = renewLease(ctx, cs, name)
		}
	}
	renew()
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				renew()
			}
		}
	}()
	return done
}

func renewLease(ctx context.Context, cs kubernetes.Interface, node string) error {
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(leaseHolder),
				LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != leaseHolder {
		return nil
	}
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}
