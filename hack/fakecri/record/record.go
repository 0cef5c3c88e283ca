// Package record is the format of the fake container runtime's record
// (hack/fakecri): one JSON line per container the kubelet created, which
// the fake writes and the real-kubelet tier (hack/kubeletnode,
// test/kubelet) reads back. It is a package of its own so that both sides
// share the types without the runtime importing the test harness.
package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Container is one CreateContainer call: what the kubelet asked the
// runtime to start, which a real runtime would have handed the process.
type Container struct {
	Time         time.Time `json:"time"`
	ContainerID  string    `json:"containerID"`
	SandboxID    string    `json:"sandboxID"`
	PodUID       string    `json:"podUID"`
	PodName      string    `json:"podName"`
	PodNamespace string    `json:"podNamespace"`
	Container    string    `json:"container"`
	// Attempt counts the container's restarts in its pod: 0 for the first
	// start, the restart count after that.
	Attempt uint32   `json:"attempt"`
	Env     []EnvVar `json:"env"`
	Mounts  []Mount  `json:"mounts"`
}

// EnvVar is one environment variable of a container.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Mount is one mount of a container: HostPath, a path in the kubelet's
// mount namespace, bound at ContainerPath.
type Mount struct {
	ContainerPath string `json:"containerPath"`
	HostPath      string `json:"hostPath"`
	ReadOnly      bool   `json:"readOnly"`
}

// Getenv returns the value of the environment variable name and whether the
// container has it.
func (c Container) Getenv(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// MountAt returns the mount at containerPath and whether there is one.
func (c Container) MountAt(containerPath string) (Mount, bool) {
	for _, m := range c.Mounts {
		if m.ContainerPath == containerPath {
			return m, true
		}
	}
	return Mount{}, false
}

// Read returns the containers recorded in path, oldest first. A last line
// without its newline is being written: it is left for the next read.
func Read(path string) ([]Container, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var out []Container
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var c Container
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s, line %d: %w", path, n, err)
		}
		out = append(out, c)
	}
	return out, sc.Err()
}
