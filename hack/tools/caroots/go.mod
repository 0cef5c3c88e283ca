// Module caroots pins the CA certificates Ripple's image ships: `make
// image` runs this module's command, and records the version of
// golang.org/x/crypto/x509roots/fallback below in the image and its SBOM.
module github.com/ripple-dev/ripple/hack/tools/caroots

go 1.26.0

require golang.org/x/crypto/x509roots/fallback v0.0.0-20261030153154-30a33513ff6d
