package helmchart

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// Version is what the chart says of the release: the chart's own version,
// the release version (appVersion, the one place it is written), and the
// image the chart installs by default.
type Version struct {
	Chart, App string
	// Repository and Tag are values.yaml's image.repository and image.tag
	// (empty, or a number if someone wrote one).
	Repository string
	Tag        any
}

// ReadVersion reads Chart.yaml and values.yaml.
func ReadVersion() (Version, error) {
	dir, err := Dir()
	if err != nil {
		return Version{}, err
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        any    `json:"tag"`
		} `json:"image"`
	}
	for file, into := range map[string]any{"Chart.yaml": &chart, "values.yaml": &values} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return Version{}, err
		}
		if err := yaml.Unmarshal(b, into); err != nil {
			return Version{}, fmt.Errorf("%s: %w", file, err)
		}
	}
	return Version{Chart: chart.Version, App: chart.AppVersion, Repository: values.Image.Repository, Tag: values.Image.Tag}, nil
}
