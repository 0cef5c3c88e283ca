// Package annotation names the annotation keys Ripple reads and writes and
// parses a workload's reload policy from them.
//
// Ripple is a drop-in replacement for Stakater Reloader, so the keys, their
// defaults and the way a workload's annotations are read follow Reloader
// exactly: users already have these annotations in their manifests. The one
// deliberate difference is in how named-reload items are matched; see
// [Matcher].
//
// Everything here is pure: no API calls, no logging, and no package state
// but a bounded cache of compiled patterns, which changes no result.
package annotation
