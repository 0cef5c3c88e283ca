package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The reload-action method (docs/restart-methods.md) on the pod restart
// machinery of restart.go: the same restart time and pace
// (podrestart.Next, from reload-delay after the change), but a pod is
// "restarted" by calling its reload endpoint, and it is done once the
// endpoint answered 2xx. What was called is kept in memory only (the pod
// shows nothing of it): a Ripple restarted mid-way calls again the pods it
// had called, which a reload endpoint takes as one more reload.

// actionTries is how many times Ripple calls a pod's reload endpoint before
// it gives up on it (the fallback); actionBackoff is the wait after the
// first failure, doubled after each.
const (
	actionTries   = 3
	actionBackoff = 2 * time.Second
)

// actionTimeout bounds one call, its answer included: a reload endpoint
// answers once the app has read its files, in a second or two.
const actionTimeout = 5 * time.Second

// maxActionAnswer is how much of an answer's body Ripple reads (and
// discards: it may hold anything, and is never logged) so the connection
// ends cleanly.
const maxActionAnswer = 64 << 10

// ActionClient is the HTTP client of reload actions: no proxy (a pod's
// address is reached directly), no redirect followed (an answer is the
// pod's own), a bounded wait, and no connection kept between calls.
func ActionClient() *http.Client {
	return &http.Client{
		Timeout: actionTimeout,
		Transport: &http.Transport{
			DialContext:            (&net.Dialer{Timeout: actionTimeout}).DialContext,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: maxActionAnswer,
			ResponseHeaderTimeout:  actionTimeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// actionPod reads how pod p, of workload k reloading by its action under
// r, stands into pp, and returns the URL to call (empty: none now) or why
// it cannot be reloaded.
func (d *Deps) actionPod(r workload.Restart, k workload.Ref, p *corev1.Pod, pp *podrestart.Pod) (url, refused string) {
	c := d.Memory.Pod(k, r.At, p.UID).Call
	port, portErr := actionPort(p, r.Action.Port)
	switch {
	case !c.Answered.IsZero():
		pp.Restarted = c.Answered
	case c.Calling:
		pp.Busy = true // its answer comes beside the reconciles
	case p.Spec.HostNetwork:
		refused = "it uses the host's network, so its address is its node's, which Ripple does not call"
	case portErr != "":
		refused = portErr
	case c.Tries >= actionTries:
		refused = fmt.Sprintf("its reload endpoint failed %d times, the last: %s", c.Tries, c.Err)
	case !pp.Ready || p.Status.PodIP == "":
		pp.Busy = true // called once Ready, as an app not ready may not reload
	case c.Tries > 0 && d.Clock.Since(c.Last) < actionBackoff<<(c.Tries-1):
		pp.Busy = true
	default:
		url = "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port))) + r.Action.Path
	}
	pp.Skipped = refused != "" && r.Fallback != workload.FallbackEvict
	return url, refused
}

// actionPort resolves port on pod p: a number, or the name of one of its
// containers' ports; else why not.
func actionPort(p *corev1.Pod, port intstr.IntOrString) (int32, string) {
	if port.Type == intstr.Int {
		return port.IntVal, ""
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == port.StrVal {
				return cp.ContainerPort, ""
			}
		}
	}
	return 0, fmt.Sprintf("no container of it has a port named %q", port.StrVal)
}

// callPods starts a call of the reload endpoint of each pod named in
// urls, of workload k, and returns: each call runs beside the reconciles
// (a pod that never answers holds no worker), records its answer and
// queues the workload with the restarter, whose next step reads it.
func (r *Reconciler) callPods(ctx context.Context, rst workload.Restart, pods map[string]corev1.Pod, urls map[string]string, k workload.Ref, log logr.Logger) {
	for name, url := range urls {
		p := pods[name]
		if !r.Memory.Dial(k, rst.At, p.UID) {
			continue // in flight, or too many are: a later step calls it
		}
		go func() {
			failed := ""
			if err := r.callPod(context.WithoutCancel(ctx), rst.Action.Method, url); err != nil {
				failed = clip(err.Error(), maxRefusal)
			}
			c := r.Memory.Answer(k, rst.At, p.UID, r.Clock.Now(), failed).Call
			if failed != "" {
				log.Info("reload action failed", "pod", name, "try", c.Tries, "of", actionTries, "error", c.Err)
			} else {
				log.Info("reloaded pod", "pod", name, "uid", p.UID, "action", rst.Action.String())
			}
			r.restarts.enqueue(k, 0)
		}()
	}
}

// callPod makes one call of a reload action: nil when it answered 2xx.
// The answer's body is read in part and dropped, never kept or logged.
func (r *Reconciler) callPod(ctx context.Context, method, url string) error {
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, http.NoBody)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "ripple")
	res, err := r.Calls.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close() //nolint:errcheck // a read-only body; nothing to do on error
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxActionAnswer))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("%s %s answered %s", method, url, res.Status)
	}
	return nil
}

// reloadPods takes a step of a reload-action restart: each pod of the step
// that cannot be reloaded by its action is evicted (the fallback: a pod
// without one is never in a step), the others are called at once.
func (r *Reconciler) reloadPods(ctx context.Context, obj client.Object, rst workload.Restart, pr podRestart, log logr.Logger) (ctrl.Result, error) {
	urls := map[string]string{}
	for _, name := range pr.step.Restart {
		p := pr.pods[name]
		why, refused := pr.refused[name]
		if !refused {
			urls[name] = pr.calls[name]
			continue
		}
		r.refuse(ctx, obj, rst, &p, why, "evicting it instead (annotation "+r.Settings.Keys.InPlaceFallback+")")
		switch err := r.restartPod(ctx, workload.RestartEvict, &p); {
		case apierrors.IsTooManyRequests(err):
			log.V(1).Info("eviction refused by a PodDisruptionBudget; waiting", "pod", name)
			return ctrl.Result{RequeueAfter: pr.step.Requeue}, nil
		case apierrors.IsForbidden(err):
			r.forbidden(ctx, obj, workload.RestartEvict, verbOf(workload.RestartEvict), err)
			return ctrl.Result{RequeueAfter: forbiddenRetry}, nil
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("evicting pod %s: %w", name, err)
		default:
			log.Info("restarted pod", "pod", name, "uid", p.UID, "how", workload.RestartEvict)
		}
	}
	r.callPods(ctx, rst, pr.pods, urls, workload.RefTo(r.Kind, obj), log)
	return ctrl.Result{RequeueAfter: pr.step.Requeue}, nil
}

// actionNotice is the Warning of a pod whose reload action failed.
func actionNotice(p *corev1.Pod, rst workload.Restart, why, instead string) plan.Notice {
	return plan.Notice{Reason: reason.ReloadActionFailed, Message: fmt.Sprintf(
		"Cannot reload pod %s by its reload action (%s): %s; %s", p.Name, rst.Action, why, instead)}
}
