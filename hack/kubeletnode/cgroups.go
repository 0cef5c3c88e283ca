package kubeletnode

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// stalePrefix begins the names of the cgroup roots and the scratch
// directories Start makes, followed by the test binary's pid: a later run
// tells what a killed test binary left (its pid gone) from what is in use.
const stalePrefix = "ripple-kubelet-"

// hierarchies returns the mount points of the host's cgroup v1
// hierarchies (v1) and of its cgroup v2 one (v2): on cgroup v1 the
// kubelet's cgroupfs driver makes cgroups in every v1 hierarchy, and in
// the v2 one too when the host mounts both (a hybrid host, like the
// "unified" mount of systemd's).
func hierarchies() (v1, v2 []string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mount-point options... - type source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, typ := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(typ) < 1 {
			continue
		}
		switch typ[0] {
		case "cgroup":
			v1 = append(v1, fields[4])
		case "cgroup2":
			v2 = append(v2, fields[4])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(v1) == 0 && len(v2) == 0 {
		return nil, nil, errors.New("no cgroup hierarchy is mounted")
	}
	return v1, v2, nil
}

// cgroupPaths returns the path of the cgroup name in every hierarchy.
func cgroupPaths(name string) ([]string, error) {
	v1, v2, err := hierarchies()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range append(v1, v2...) {
		out = append(out, filepath.Join(h, name))
	}
	return out, nil
}

// makeCgroups makes the cgroup root name in every cgroup v1 hierarchy, or
// in the v2 one on a cgroup v2 host (the kubelet refuses a cgroupRoot that
// does not exist). Stop removes them, in every hierarchy.
// A new cpuset cgroup has no CPUs nor memory nodes: it gets its parent's,
// as the kubelet's cgroups below it need.
func makeCgroups(name string) error {
	roots, v2, err := hierarchies()
	if err != nil {
		return err
	}
	if len(roots) == 0 {
		roots = v2 // a cgroup v2 host
	}
	for _, h := range roots {
		dir := filepath.Join(h, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(h, file))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, file), v, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeCgroups removes each cgroup and the ones the kubelet made below
// it, deepest first (a cgroup is removed with rmdir, its files with it).
// The fake runtime runs no process, so none holds a cgroup.
func removeCgroups(roots []string) error {
	var errs []error
	for _, root := range roots {
		var dirs []string
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeStale removes the cgroup roots and the scratch directories of
// test binaries that are gone (killed before their cleanup ran: the
// kubelet and the fake runtime died with them, and the kubelet's mounts
// with its mount namespace), best effort.
func removeStale() {
	var stale []string
	if v1, v2, err := hierarchies(); err == nil {
		for _, h := range append(v1, v2...) {
			dirs, _ := filepath.Glob(filepath.Join(h, stalePrefix+"*"))
			stale = append(stale, dirs...)
		}
	}
	scratch, _ := filepath.Glob(filepath.Join(os.TempDir(), stalePrefix+"*"))
	for _, dir := range append(stale, scratch...) {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), stalePrefix), "-")
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", pid)); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if strings.HasPrefix(dir, os.TempDir()) {
			_ = os.RemoveAll(dir)
		} else {
			_ = removeCgroups([]string{dir})
		}
	}
}
