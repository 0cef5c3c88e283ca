// Package version holds the build version, set by the linker
// (-X github.com/ripple-dev/ripple/internal/version.Version=...).
package version

// Version is the release, or "dev" for a local build. It is a variable only
// because the linker can set nothing else.
var Version = "dev"
