// Command fakecri is the container runtime of the real-kubelet test tier
// (test/kubelet): it serves the CRI on a unix socket with the fake runtime
// of k8s.io/cri-client (the one the kubelet's own tests use, at the
// version of the pinned kubelet), so that a real kubelet runs pods without
// running a process. It adds what the tier needs to that fake:
//
//   - every CreateContainer is appended to a JSON-lines record (one
//     record.Container a line: the pod, the container, its attempt, its
//     environment and its mounts), so a test sees what the kubelet asked the runtime
//     to start, which a container runtime would have handed the process;
//   - each pod sandbox gets an address of its own in 127.0.0.0/8, so no
//     test is ever led to dial any other range;
//   - images report a size above zero: the kubelet's CRI client rejects
//     an image status without one ("Id or size of image ... is not set"),
//     and the pod never starts;
//   - the runtime reports the cgroupfs driver, the one the tier's kubelet
//     is configured with.
//
// Usage: fakecri --socket PATH --record FILE. It serves until SIGTERM or
// SIGINT.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/fake"

	"github.com/ripple-dev/ripple/hack/fakecri/record"
)

// fakeImageSize is what every image weighs: any size above zero will do.
const fakeImageSize = 1 << 20

func main() {
	socket := flag.String("socket", "", "unix socket to serve the CRI on (runtime and image service)")
	record := flag.String("record", "", "file to append one JSON line to per CreateContainer")
	flag.Parse()
	if *socket == "" || *record == "" {
		fmt.Fprintln(os.Stderr, "fakecri: --socket and --record are required")
		os.Exit(2)
	}
	if err := run(*socket, *record); err != nil {
		fmt.Fprintln(os.Stderr, "fakecri:", err)
		os.Exit(1)
	}
}

func run(socket, recordPath string) error {
	out, err := os.OpenFile(recordPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = out.Close() }() // each line was written whole; nothing buffered

	rt := &runtime{RemoteRuntime: fake.NewFakeRemoteRuntime(), record: out}
	rt.ImageService.SetFakeImageSize(fakeImageSize)
	rt.RuntimeService.FakeLinuxConfiguration = &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS}
	rt.RuntimeService.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}

	// The fake registers itself on a server of its own; ours registers the
	// wrapper, whose methods add the record and the addresses.
	server := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(server, rt)
	runtimeapi.RegisterImageServiceServer(server, rt)
	_ = os.Remove(socket) // a stale socket of a killed run
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; server.Stop() }()
	if err := server.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// runtime is the fake runtime plus the record and the sandbox addresses.
type runtime struct {
	*fake.RemoteRuntime

	mu      sync.Mutex
	record  *os.File
	sandbox uint32 // sandboxes started, for their addresses
}

// RunPodSandbox starts the sandbox in the fake, then gives it the next
// address in 127.1.0.0/16 (the fake gives every sandbox the same address,
// outside loopback).
func (r *runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	resp, err := r.RemoteRuntime.RunPodSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.sandbox++
	n := r.sandbox
	r.mu.Unlock()
	ip := fmt.Sprintf("127.1.%d.%d", (n/250)%250, n%250+1)
	rs := r.RuntimeService
	rs.Lock()
	if s, ok := rs.Sandboxes[resp.PodSandboxId]; ok {
		s.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ip}
	}
	rs.Unlock()
	return resp, nil
}

// CreateContainer creates the container in the fake and appends what the
// kubelet asked for to the record.
func (r *runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	resp, err := r.RemoteRuntime.CreateContainer(ctx, req)
	if err != nil {
		return nil, err
	}
	cfg, sb := req.GetConfig(), req.GetSandboxConfig()
	rec := record.Container{
		Time:         time.Now().UTC(),
		ContainerID:  resp.GetContainerId(),
		SandboxID:    req.GetPodSandboxId(),
		PodUID:       sb.GetMetadata().GetUid(),
		PodName:      sb.GetMetadata().GetName(),
		PodNamespace: sb.GetMetadata().GetNamespace(),
		Container:    cfg.GetMetadata().GetName(),
		Attempt:      cfg.GetMetadata().GetAttempt(),
	}
	for _, e := range cfg.GetEnvs() {
		rec.Env = append(rec.Env, record.EnvVar{Name: e.GetKey(), Value: string(e.GetValue())})
	}
	for _, m := range cfg.GetMounts() {
		rec.Mounts = append(rec.Mounts, record.Mount{ContainerPath: m.GetContainerPath(), HostPath: m.GetHostPath(), ReadOnly: m.GetReadonly()})
	}
	// The fake keeps no log path; the kubelet, when it removes a
	// container, deletes the files matching "<log path>*", which for an
	// empty one is every file of its working directory. A real runtime
	// reports the sandbox's log directory joined with the container's.
	if cfg.GetLogPath() != "" && sb.GetLogDirectory() != "" {
		rs := r.RuntimeService
		rs.Lock()
		if c, ok := rs.Containers[resp.GetContainerId()]; ok {
			c.LogPath = filepath.Join(sb.GetLogDirectory(), cfg.GetLogPath())
		}
		rs.Unlock()
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// One write a line, so a reader never sees half of one.
	if _, err := r.record.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("recording the container: %w", err)
	}
	return resp, nil
}
