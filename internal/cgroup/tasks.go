package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Threads lists the thread ids of every task in the group and its
// descendant groups: v1's tasks files under the cpu controller's
// directory, v2's cgroup.threads. The root group holds every task of the
// host, so it is refused.
func (g *Group) Threads() ([]int, error) {
	if g.Path == "/" {
		return nil, fmt.Errorf("%s is the root cgroup, which holds every task of the host", g.cpu)
	}
	name := "tasks"
	if g.Version == 2 {
		name = "cgroup.threads"
	}
	var out []int
	found := false
	err := filepath.WalkDir(g.cpu, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && p != g.cpu && errors.Is(err, fs.ErrNotExist):
			return nil // a subgroup removed while walking
		case err != nil:
			return err
		case d.IsDir() || d.Name() != name:
			return nil
		}
		s, err := read(p)
		if err != nil {
			return err
		}
		found = true
		for _, l := range strings.Fields(s) {
			tid, err := strconv.Atoi(l)
			if err != nil {
				return fmt.Errorf("parse %s: %q is not a thread id", p, l)
			}
			out = append(out, tid)
		}
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("no %s file under %s", name, g.cpu)
	}
	if err != nil {
		return nil, fmt.Errorf("list the threads of cgroup %s: %w", g.Path, err)
	}
	return out, nil
}

// ErrNoCpuset says the group's cpuset cannot be read: no cpuset controller
// is mounted for it (v1), or the v2 group has none enabled.
var ErrNoCpuset = errors.New("no cpuset controller for the group")

// CPUs is the group's effective cpuset as the kernel writes it ("0-1"):
// v1 cpuset.effective_cpus (cpuset.cpus on kernels without it), v2
// cpuset.cpus.effective. ErrNoCpuset when there is no cpuset controller.
func (g *Group) CPUs() (string, error) {
	if g.cpuset == "" {
		return "", ErrNoCpuset
	}
	names := []string{"cpuset.effective_cpus", "cpuset.cpus"}
	if g.cpuset == g.unified {
		names = []string{"cpuset.cpus.effective"}
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(g.cpuset, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", filepath.Join(g.cpuset, n), err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", fmt.Errorf("%w: %s has no %s", ErrNoCpuset, g.cpuset, strings.Join(names, " or "))
}
