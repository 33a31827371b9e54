package cgroup_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cgroup"
	"proxybench/internal/cgroup/cgrouptest"
)

// TestFixtures reads every kind of layout from a fixture tree: what the
// group is and each of its readings.
func TestFixtures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tree    string
		pid     int
		version int
		path    string
		usage   time.Duration
		thr     cgroup.Throttling
		quota   float64  // 0 = none
		own     [2]int64 // OwnQuota's quota and period (µs); {0, 0}: no files
		ws      int64    // WorkingSet, bytes; 0: no memory files
		psi     time.Duration
		noPSI   bool
	}{
		{tree: "v2-systemd", pid: 4242, version: 2, path: "/system.slice/docker-0123abcd.scope",
			usage: 123456789 * time.Microsecond, thr: cgroup.Throttling{Periods: 500, Throttled: 25, ThrottledTime: 1500 * time.Millisecond},
			quota: 1.5, own: [2]int64{150000, 100000}, ws: 52428800 - 10428800, psi: 4200 * time.Microsecond},
		{tree: "v2-cgroupfs", pid: 4242, version: 2, path: "/docker/abc123",
			usage: 2 * time.Second, quota: 0.5, own: [2]int64{-1, 100000}, psi: 777 * time.Microsecond}, // quota from the parent, PSI system-wide
		{tree: "v2-nocontroller", pid: 4242, version: 2, path: "/user.slice/user-1000.slice/session-1.scope",
			usage: 5 * time.Millisecond, noPSI: true},
		{tree: "v1-container", version: 1, path: "/docker/abc123",
			usage: 987654321, thr: cgroup.Throttling{Periods: 10, Throttled: 3, ThrottledTime: 4500 * time.Microsecond},
			quota: 0.5, own: [2]int64{50000, 100000}, ws: 12378112 - 8192, noPSI: true},
		{tree: "v1-systemd-hybrid", pid: 4242, version: 1, path: "/system.slice/docker-0123abcd.scope",
			usage: 1500 * time.Millisecond, quota: 2, own: [2]int64{-1, 100000}, psi: 31337 * time.Microsecond}, // quota from system.slice
	} {
		t.Run(c.tree, func(t *testing.T) {
			root := filepath.Join("testdata", c.tree)
			g, err := cgroup.FS{Proc: filepath.Join(root, "proc"), Root: root}.Find(c.pid)
			if err != nil {
				t.Fatal(err)
			}
			if g.Version != c.version || g.Path != c.path {
				t.Errorf("group v%d %s, want v%d %s", g.Version, g.Path, c.version, c.path)
			}
			if u, err := g.Usage(); err != nil || u != c.usage {
				t.Errorf("usage %v %v, want %v", u, err, c.usage)
			}
			if thr, err := g.Throttling(); err != nil || thr != c.thr {
				t.Errorf("throttling %+v %v, want %+v", thr, err, c.thr)
			}
			q, limited, err := g.Quota()
			if err != nil || limited != (c.quota > 0) || q != c.quota {
				t.Errorf("quota %v limited %v %v, want %v", q, limited, err, c.quota)
			}
			oq, op, err := g.OwnQuota()
			switch {
			case c.own == [2]int64{} && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("own quota %d/%d %v, want no file", oq, op, err)
			case c.own != [2]int64{} && (err != nil || [2]int64{oq, op} != c.own):
				t.Errorf("own quota %d/%d %v, want %v", oq, op, err, c.own)
			}
			ws, err := g.WorkingSet()
			switch {
			case c.ws == 0 && err == nil:
				t.Errorf("working set %d without memory files", ws)
			case c.ws != 0 && (err != nil || ws != c.ws):
				t.Errorf("working set %d %v, want %d", ws, err, c.ws)
			}
			p, err := g.Pressure()
			switch {
			case c.noPSI && !errors.Is(err, cgroup.ErrNoPSI):
				t.Errorf("pressure %v %v, want ErrNoPSI", p, err)
			case !c.noPSI && (err != nil || p != c.psi):
				t.Errorf("pressure %v %v, want %v", p, err, c.psi)
			}
		})
	}
}

// TestErrorsNameTheFile: a missing process, a missing mount and a group
// that went away each say which file and what to do.
func TestErrorsNameTheFile(t *testing.T) {
	t.Parallel()
	root := filepath.Join("testdata", "v2-systemd")
	fs := cgroup.FS{Proc: filepath.Join(root, "proc"), Root: root}
	if _, err := fs.Find(999); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "proc", "999", "cgroup")) {
		t.Errorf("missing pid: %v", err)
	}
	// A process whose v1 cpu group no mount covers.
	tmp := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(tmp, "self"), 0o755))
	must(t, os.WriteFile(filepath.Join(tmp, "self", "cgroup"), []byte("2:cpu,cpuacct:/x\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(tmp, "self", "mountinfo"), []byte("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"), 0o644))
	if _, err := (cgroup.FS{Proc: tmp}).Find(0); err == nil || !strings.Contains(err.Error(), "mount /sys/fs/cgroup") {
		t.Errorf("no mount: %v", err)
	}
	// The group disappears after Find (its container stopped).
	must(t, os.WriteFile(filepath.Join(tmp, "self", "cgroup"), []byte("0::/gone\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(tmp, "self", "mountinfo"), []byte("30 22 0:26 / /cg rw - cgroup2 cgroup2 rw\n"), 0o644))
	g, err := cgroup.FS{Proc: tmp, Root: tmp}.Find(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Usage(); err == nil || !strings.Contains(err.Error(), filepath.Join(tmp, "cg", "gone", "cpu.stat")) || !strings.Contains(err.Error(), "the cgroup is gone") {
		t.Errorf("gone: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSelf reads the test process's own group on this host.
func TestSelf(t *testing.T) {
	t.Parallel()
	g, err := cgroup.Self()
	if err != nil {
		t.Skipf("no cgroup here: %v", err)
	}
	u0, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Throttling(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Quota(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Pressure(); err != nil && !errors.Is(err, cgroup.ErrNoPSI) {
		t.Fatal(err)
	}
	if u0 <= 0 {
		t.Errorf("usage of the group this test runs in = %v", u0)
	}
}

// TestV1QuotaThrottles puts a CPU-burning sub-process in a real v1 group
// limited to 0.2 cores: its usage moves at about the quota, never above it,
// and the kernel counts throttled periods.
func TestV1QuotaThrottles(t *testing.T) {
	cg := cgrouptest.NewV1(t, 0.2)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBurn$")
	cmd.Env = append(os.Environ(), "CGROUP_TEST_BURN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	cg.Add(t, cmd.Process.Pid)

	g, err := cgroup.Of(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != 1 || filepath.Base(g.Path) != cg.Name {
		t.Fatalf("group of the sub-process: v%d %s, want v1 .../%s", g.Version, g.Path, cg.Name)
	}
	if q, limited, err := g.Quota(); err != nil || !limited || q != 0.2 {
		t.Fatalf("quota %v %v %v, want 0.2 cores", q, limited, err)
	}
	u0, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	th0, err := g.Throttling()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(800 * time.Millisecond)
	u1, _ := g.Usage()
	th1, err := g.Throttling()
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	used := u1 - u0
	// 0.2 cores over the wall time, plus one period of slack each side.
	if max := time.Duration(0.2*float64(wall)) + 2*20*time.Millisecond; used <= 50*time.Millisecond || used > max {
		t.Errorf("used %v over %v, want (50ms, %v]", used, wall, max)
	}
	if p := th1.Periods - th0.Periods; p < 5 {
		t.Errorf("%d periods over %v, want >= 5 (100 ms each)", p, wall)
	}
	if n := th1.Throttled - th0.Throttled; n < 3 || th1.ThrottledTime <= th0.ThrottledTime {
		t.Errorf("throttled %d periods, time %v -> %v: a busy loop over a 0.2-core quota must be throttled", n, th0.ThrottledTime, th1.ThrottledTime)
	}
}

// TestHelperBurn is the sub-process of TestV1QuotaThrottles: it spins for
// at most 10 s.
func TestHelperBurn(t *testing.T) {
	if os.Getenv("CGROUP_TEST_BURN") != "1" {
		t.Skip("sub-process of TestV1QuotaThrottles")
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
	}
}
