package podrestart

import "time"

// Selected is the restart of the pods a config's restart-pods selector
// selects (package configpods): pods no workload of Ripple's owns, so no
// workload says how many it wants. Every pod read is wanted, a pod being
// deleted included: it counts as unavailable until it is gone, so
// max-unavailable bounds the pods evicted and not yet gone or not yet
// Ready, and the next pod is evicted only once the one before is gone and
// every selected pod is Ready. A pod that no controller recreates is not
// waited for once it is gone: nobody would bring it back.
//
// at is when the config's data was last written: the pods created up to
// it are left to restart; delay is the settle window, after which the
// first pod is evicted.
func Selected(at time.Time, delay time.Duration, maxUnavailable int, pods []Pod) Restart {
	return Restart{At: at, Want: len(pods), MaxUnavailable: maxUnavailable, Delay: delay, Pods: pods}
}
