// Command caroots writes the CA certificates Ripple's image ships, as PEM,
// to standard output: the roots of golang.org/x/crypto/x509roots/fallback
// (Mozilla's NSS trust store), at the version this module pins. Taking them
// from a pinned Go module rather than the build machine's trust store
// keeps `make image` free of any distribution's packages and gives every
// machine the same bytes.
//
// A root that NSS constrains (a distrust-after date) is left out: a PEM
// bundle cannot carry the constraint, and trusting such a root without it
// would trust what NSS distrusts.
package main

import (
	"bufio"
	"encoding/pem"
	"fmt"
	"os"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

func main() {
	w := bufio.NewWriter(os.Stdout)
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(w, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			fail(err)
		}
		n++
	}
	if n == 0 {
		fail(fmt.Errorf("the bundle holds no unconstrained roots"))
	}
	if err := w.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "caroots:", err)
	os.Exit(1)
}
