// Command docgen writes docs/reference.md from the code (`make docs`).
package main

import (
	"fmt"
	"os"

	"github.com/ripple-dev/ripple/internal/config"
)

func main() {
	f, err := os.Create("docs/reference.md")
	if err == nil {
		err = config.WriteReference(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}
