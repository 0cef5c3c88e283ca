package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/uuid"
)

// writeSBOM writes a CycloneDX SBOM of the image: the ripple application,
// every Go module linked into any of the binaries (read from their build
// info, as `go version -m` does), the Go standard library and the Go
// module the CA certificates come from.
func writeSBOM(path string, o imageOptions, ca caRoots, binaries []string) error {
	l, err := readBinaries(binaries)
	if err != nil {
		return err
	}
	ref := purl(ca.module, ca.version)
	l.comps[ref] = cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeData, Name: ca.module, Version: ca.version, PackageURL: ref,
		Description: "/" + caBundlePath + ": the unconstrained roots of " + ca.module + " (Mozilla's NSS trust store)"}
	return encodeBOM(path, newBOM(o, l))
}

// linked is what the binaries are made of.
type linked struct {
	// comps holds the components by BOM reference.
	comps map[string]cdx.Component
	// settings are the build settings every binary shares.
	settings map[string]string
	// digest is the SHA-256 of the binaries' bytes, in order.
	digest []byte
}

// readBinaries reads the modules and build settings of each binary from
// its build info.
func readBinaries(binaries []string) (linked, error) {
	l := linked{comps: map[string]cdx.Component{}, settings: map[string]string{}}
	ids := sha256.New()
	for i, bin := range binaries {
		b, err := os.ReadFile(bin)
		if err != nil {
			return linked{}, err
		}
		ids.Write(b)
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			return linked{}, fmt.Errorf("reading the build info of %s: %w", bin, err)
		}
		std := cdx.Component{BOMRef: purl("stdlib", bi.GoVersion), Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: bi.GoVersion, PackageURL: purl("stdlib", bi.GoVersion)}
		l.comps[std.BOMRef] = std
		for _, m := range bi.Deps {
			c := moduleComponent(m)
			l.comps[c.BOMRef] = c
		}
		// Keep the build settings every binary shares (not GOOS, GOARCH).
		for _, s := range bi.Settings {
			if i == 0 {
				l.settings[s.Key] = s.Value
			}
		}
		for k, v := range l.settings {
			if !slices.Contains(bi.Settings, debug.BuildSetting{Key: k, Value: v}) {
				delete(l.settings, k)
			}
		}
	}
	l.digest = ids.Sum(nil)
	return l, nil
}

// newBOM describes ripple o.version made of l, every list sorted so that
// the same build gives the same SBOM.
func newBOM(o imageOptions, l linked) *cdx.BOM {
	mainRef := purl(modulePath, o.version)
	refs := slices.Sorted(maps.Keys(l.comps))
	components := make([]cdx.Component, 0, len(refs))
	for _, ref := range refs {
		components = append(components, l.comps[ref])
	}
	var props []cdx.Property
	for _, k := range slices.Sorted(maps.Keys(l.settings)) {
		props = append(props, cdx.Property{Name: "go.build." + k, Value: l.settings[k]})
	}
	props = append(props, cdx.Property{Name: "ripple.platforms", Value: strings.Join(o.platforms, ",")})

	bom := cdx.NewBOM()
	// Derived from the binaries, so that the same build gives the same SBOM.
	bom.SerialNumber = "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "%s@%s#%x", sourceURL, o.version, l.digest)).String()
	bom.Metadata = &cdx.Metadata{
		Timestamp: o.epoch.Format("2006-01-02T15:04:05Z"),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "ripple hack/release", Version: o.version,
		}}},
		Component: &cdx.Component{
			BOMRef: mainRef, Type: cdx.ComponentTypeApplication, Name: "ripple", Version: o.version,
			Description: description, PackageURL: mainRef, Properties: &props,
			ExternalReferences: &[]cdx.ExternalReference{{Type: cdx.ERTypeVCS, URL: sourceURL}},
		},
	}
	bom.Components = &components
	bom.Dependencies = &[]cdx.Dependency{{Ref: mainRef, Dependencies: &refs}}
	return bom
}

// encodeBOM writes bom to path as CycloneDX 1.6 JSON.
func encodeBOM(path string, bom *cdx.BOM) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// A failed Close can lose written bytes: its error is the function's.
	defer func() { err = errors.Join(err, f.Close()) }()
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	// 1.6 is what today's scanners read.
	return enc.EncodeVersion(bom, cdx.SpecVersion1_6)
}

// moduleComponent describes a module as linked: a replacement names the
// module actually used.
func moduleComponent(m *debug.Module) cdx.Component {
	used := m
	if m.Replace != nil {
		used = m.Replace
	}
	ref := purl(used.Path, used.Version)
	c := cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeLibrary, Name: used.Path, Version: used.Version, PackageURL: ref}
	var props []cdx.Property
	if used.Sum != "" {
		props = append(props, cdx.Property{Name: "go.sum", Value: used.Sum})
	}
	if m.Replace != nil {
		props = append(props, cdx.Property{Name: "go.replaces", Value: m.Path + "@" + m.Version})
	}
	if len(props) > 0 {
		c.Properties = &props
	}
	return c
}

// purl is a Go package URL; "+" in a version (+incompatible) is escaped as
// the purl spec requires.
func purl(path, version string) string {
	return "pkg:golang/" + path + "@" + strings.ReplaceAll(version, "+", "%2B")
}
