//go:build e2e

package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/interp"
)

// cgroupCPU is the test's own reading of a container's CPU counter:
// resolved from /proc/<pid>/cgroup, read from cgroupfs (v1 cpuacct.usage
// or v2 cpu.stat usage_usec), independent of the loadgen's and the
// exporter's code.
func cgroupCPU(t *testing.T, container string) func() (time.Duration, error) {
	t.Helper()
	pid := docker(t, "inspect", "-f", "{{.State.Pid}}", container)
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" { // v2
			path := filepath.Join("/sys/fs/cgroup", f[2], "cpu.stat")
			return func() (time.Duration, error) {
				b, err := os.ReadFile(path)
				if err != nil {
					return 0, err
				}
				for _, l := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
						us, err := strconv.ParseInt(v, 10, 64)
						return time.Duration(us) * time.Microsecond, err
					}
				}
				return 0, fmt.Errorf("%s: no usage_usec", path)
			}
		}
		for _, ctl := range strings.Split(f[1], ",") {
			if ctl != "cpuacct" {
				continue
			}
			var path string
			for _, mnt := range []string{"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct"} {
				if p := filepath.Join(mnt, f[2], "cpuacct.usage"); fileExists(p) {
					path = p
				}
			}
			if path == "" {
				t.Fatalf("no cpuacct.usage for %s (cgroup %s)", container, f[2])
			}
			return func() (time.Duration, error) {
				b, err := os.ReadFile(path)
				if err != nil {
					return 0, err
				}
				ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				return time.Duration(ns), err
			}
		}
	}
	t.Fatalf("no cpu cgroup for %s in /proc/%s/cgroup", container, pid)
	return nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// sampler reads fn every period (startSampler: 2 ms) until stop is called,
// and interpolates.
type sampler struct {
	s    interp.Series
	stop func()
}

func startSampler(t *testing.T, fn func() (time.Duration, error)) *sampler {
	t.Helper()
	return startSamplerEvery(t, fn, 2*time.Millisecond)
}

// startSamplerEvery reads fn every period until stop is called.
func startSamplerEvery(t *testing.T, fn func() (time.Duration, error), period time.Duration) *sampler {
	t.Helper()
	sm := &sampler{}
	stop := interp.Sample(func() (float64, error) { v, err := fn(); return v.Seconds(), err }, period)
	sm.stop = func() { sm.s = stop() }
	return sm
}

// at interpolates the counter linearly between the readings around ts;
// ok is false when the readings there are more than 50 ms apart (the test
// process was descheduled): too coarse to judge 3 %.
func (sm *sampler) at(t *testing.T, ts time.Time) (v float64, ok bool) {
	t.Helper()
	v, gap, found := sm.s.At(ts)
	if !found {
		t.Fatalf("no readings around %s", ts)
	}
	return v, gap <= 50*time.Millisecond
}

// TestProxyCPUMatchesCgroup checks the reported proxy CPU against the
// proxy container's cgroup counter read by this test every 2 ms, on cells
// of 5 s and 7 s at different loads and phases (idle before the window, a
// warm-up and its quiet gap right before it, open and closed loop): within
// 3 % or 0.02 cores.
func TestProxyCPUMatchesCgroup(t *testing.T) {
	results := t.TempDir()
	sm := startSampler(t, cgroupCPU(t, "proxybench-nginx"))
	type run struct {
		id   string
		args []string
	}
	runs := []run{
		{"cpu5a", []string{"-tier", "5s", "-concurrency", "5", "-repeats", "2", "-control=false"}},
		{"cpu5b", []string{"-tier", "5s", "-concurrency", "40", "-settle", "4s"}},
		{"cpu7", []string{"-tier", "7s", "-rate", "3000", "-concurrency", "50", "-warmup", "2s"}},
	}
	all := map[string]flagCell{}
	for i, r := range runs {
		time.Sleep(time.Duration(200+400*i) * time.Millisecond) // idle time differs between runs
		args := append([]string{"-proxies", "nginx", "-origins", "fast", "-isolate=false"}, r.args...)
		for id, c := range runCells(t, results, r.id, nil, args...) {
			all[r.id+"/"+id] = c
		}
	}
	sm.stop()
	coarse := 0
	for id, c := range all {
		s0, ok0 := sm.at(t, c.Start)
		s1, ok1 := sm.at(t, c.End)
		if !ok0 || !ok1 {
			t.Logf("%s: the test's own readings were more than 50 ms apart at an edge: not judged", id)
			if coarse++; coarse > 1 {
				t.Errorf("more than one cell without a fine enough independent reading")
			}
			continue
		}
		indep := s1 - s0
		d := c.End.Sub(c.Start).Seconds()
		if c.ProxyRes.CPUMean == nil {
			t.Errorf("%s: no proxy CPU in the report", id)
			continue
		}
		got := *c.ProxyRes.CPUMean * d
		tol := math.Max(0.03*indep, 0.02*d)
		if math.Abs(got-indep) > tol {
			t.Errorf("%s: proxy CPU %.4f s over the window, the cgroup counter says %.4f s (%.1f %% apart, tolerance %.4f s)", id, got, indep, 100*(got-indep)/indep, tol)
		} else {
			t.Logf("%s: proxy CPU %.4f s, cgroup %.4f s (%+.2f %%) over %.1f s", id, got, indep, 100*(got-indep)/indep, d)
		}
	}
}
