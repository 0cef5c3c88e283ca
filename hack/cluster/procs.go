package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Descendants returns the pids of the live processes descended from this
// one. Test suites call it after Stop to prove they left nothing behind.
func Descendants() []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name may hold spaces; fields after its ')' are fixed.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			parent[pid] = ppid
		}
	}
	self := os.Getpid()
	var out []int
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == self {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// NonLoopbackListeners returns the TCP sockets that the given processes
// listen on at an address other than 127.0.0.1 or ::1.
func NonLoopbackListeners(pids []int) ([]string, error) {
	inodes := map[string]int{}
	for _, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err == nil && strings.HasPrefix(target, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = pid
			}
		}
	}
	var bad []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A = LISTEN
				continue
			}
			pid, ours := inodes[fields[9]]
			if !ours {
				continue
			}
			addr := strings.Split(fields[1], ":")[0]
			// 127.0.0.1 is 0100007F in /proc's little-endian hex; ::1 is below.
			if addr != "0100007F" && addr != "00000000000000000000000001000000" {
				bad = append(bad, fmt.Sprintf("pid %d listens on %s", pid, fields[1]))
			}
		}
		_ = f.Close() // read-only: nothing to flush
	}
	return bad, nil
}
