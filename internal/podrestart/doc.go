// Package podrestart is the pure part of the pod restarter: the restart
// methods that restart or signal a workload's pods without new pods from
// its controller (evict, delete, in-place, reload-action;
// docs/restart-methods.md). It decides the next step of a restart from the
// pods as read (Next), how a pod stands in an in-place restart and the
// resize that restarts it (InPlaceOf, Nudge), and what Ripple remembers of
// each pod while a restart lasts (Memory), changed only by its pure
// transitions. It reads nothing and writes nothing: package controller's
// pod restarter does, and keeps the Memory in its Store.
package podrestart
