package cgroup_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"proxybench/internal/cgroup"
)

// TestThreadsAndCPUs reads a group's threads (its subgroups' included) and
// its effective cpuset from each kind of layout.
func TestThreadsAndCPUs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tree    string
		pid     int
		threads []int
		cpus    string // "" = ErrNoCpuset
	}{
		{tree: "v1-systemd-hybrid", pid: 4242, threads: []int{4242, 4250, 4251}, cpus: "1"}, // effective_cpus, not cpus
		{tree: "v2-systemd", pid: 4242, threads: []int{4242, 4243, 4260}, cpus: "0-1"},      // init/ holds one more
		{tree: "v1-container", threads: []int{7}},                                           // no cpuset mounted in the container
		{tree: "v2-cgroupfs", pid: 4242},                                                    // no cgroup.threads: an error, not no thread
		{tree: "v2-nocontroller", pid: 4242},                                                // the cpuset controller is not enabled
	} {
		t.Run(c.tree, func(t *testing.T) {
			root := filepath.Join("testdata", c.tree)
			g, err := cgroup.FS{Proc: filepath.Join(root, "proc"), Root: root}.Find(c.pid)
			if err != nil {
				t.Fatal(err)
			}
			tids, err := g.Threads()
			if c.threads == nil {
				if err == nil {
					t.Errorf("threads %v, want an error (no tasks file)", tids)
				}
			} else if slices.Sort(tids); err != nil || !slices.Equal(tids, c.threads) {
				t.Errorf("threads %v %v, want %v", tids, err, c.threads)
			}
			cpus, err := g.CPUs()
			switch {
			case c.cpus == "" && !errors.Is(err, cgroup.ErrNoCpuset):
				t.Errorf("cpus %q %v, want ErrNoCpuset", cpus, err)
			case c.cpus != "" && (err != nil || cpus != c.cpus):
				t.Errorf("cpus %q %v, want %q", cpus, err, c.cpus)
			}
		})
	}
}

// TestThreadsRefusesTheRoot: the root group holds every task of the host,
// which is nobody's own.
func TestThreadsRefusesTheRoot(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(tmp, "self"), 0o755))
	must(t, os.MkdirAll(filepath.Join(tmp, "cg"), 0o755))
	must(t, os.WriteFile(filepath.Join(tmp, "self", "cgroup"), []byte("0::/\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(tmp, "self", "mountinfo"), []byte("30 22 0:26 / /cg rw - cgroup2 cgroup2 rw\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(tmp, "cg", "cgroup.threads"), []byte("1\n2\n"), 0o644))
	g, err := cgroup.FS{Proc: tmp, Root: tmp}.Find(0)
	if err != nil {
		t.Fatal(err)
	}
	if tids, err := g.Threads(); err == nil {
		t.Errorf("root group: threads %v, want an error", tids)
	}
}

// TestSelfThreads: a process in a group of its own on this host finds its
// own thread among the group's.
func TestSelfThreads(t *testing.T) {
	t.Parallel()
	g, err := cgroup.Self()
	if err != nil {
		t.Skipf("no cgroup here: %v", err)
	}
	if g.Path == "/" {
		t.Skip("this test runs in the root group")
	}
	tids, err := g.Threads()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tids, os.Getpid()) { // the main thread's id is the pid
		t.Errorf("threads of the group %s: %v lack this process (%d)", g.Path, tids, os.Getpid())
	}
}
