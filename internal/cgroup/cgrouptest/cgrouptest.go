// Package cgrouptest owns throwaway cgroup v1 groups for tests that need a
// real CPU quota: a child of the test process's own cpu and cpuacct groups,
// removed when the test ends. It skips the test where it cannot be made
// (not root, not a cgroup v1 host). Spin starts the busy loops such tests
// put inside a group or beside it.
package cgrouptest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"proxybench/internal/cgroup"
)

// Period is the CFS period every group gets, in microseconds.
const Period = 100000

// V1 is one throwaway group, present in the cpu and the cpuacct hierarchy
// (one directory when they are mounted together).
type V1 struct {
	Name string   // the directory name, unique per process
	Dirs []string // cpu first, then cpuacct when apart
}

var seq atomic.Int64

// NewV1 makes the group with a quota of cores (0 = none) and removes it at
// the end of the test, first moving any process left in it back to the
// parent. It skips t unless the host is cgroup v1 and writable.
func NewV1(t testing.TB, cores float64) *V1 {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a cgroup")
	}
	self, err := cgroup.Self()
	if err != nil {
		t.Skipf("no cgroup: %v", err)
	}
	if self.Version != 1 {
		t.Skipf("the host is cgroup v%d; these tests make v1 groups", self.Version)
	}
	cpu, acct := self.Dirs()
	g := &V1{Name: fmt.Sprintf("proxybench-test-%d-%d", os.Getpid(), seq.Add(1))}
	parents := []string{cpu}
	if acct != cpu {
		parents = append(parents, acct)
	}
	for _, p := range parents {
		d := filepath.Join(p, g.Name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Skipf("cannot create a cgroup: %v", err)
		}
		g.Dirs = append(g.Dirs, d)
	}
	t.Cleanup(func() { g.remove(t) })
	if cores > 0 {
		write(t, filepath.Join(g.Dirs[0], "cpu.cfs_period_us"), strconv.Itoa(Period))
		write(t, filepath.Join(g.Dirs[0], "cpu.cfs_quota_us"), strconv.Itoa(int(cores*Period)))
	}
	return g
}

// Add moves process pid into the group.
func (g *V1) Add(t testing.TB, pid int) {
	t.Helper()
	for _, d := range g.Dirs {
		write(t, filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid))
	}
}

// remove empties the group into its parent and deletes it; a process that
// is still exiting can hold it for a moment, so it retries briefly.
func (g *V1) remove(t testing.TB) {
	for _, d := range g.Dirs {
		var err error
		for try := 0; try < 50; try++ {
			if b, rerr := os.ReadFile(filepath.Join(d, "cgroup.procs")); rerr == nil {
				for _, pid := range strings.Fields(string(b)) {
					_ = os.WriteFile(filepath.Join(filepath.Dir(d), "cgroup.procs"), []byte(pid), 0)
				}
			}
			if err = os.Remove(d); err == nil || os.IsNotExist(err) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("remove test cgroup %s: %v (remove it by hand with rmdir)", d, err)
		}
	}
}

func write(t testing.TB, file, v string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(v), 0); err != nil {
		t.Fatalf("write %s: %v", file, err)
	}
}
