//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cgroup/cgrouptest"
	"proxybench/internal/cputime"
)

// TestFlagContended runs the same short cell twice, in a random order:
// once with a CPU hog (a busy loop pinned to each of the proxy's CPUs) and
// once without. With the hog the cell must be contended, the reason naming
// the proxy's CPUs' time going to other processes, and the foreign share
// the report gives its CPUs must hold at least the time the hog ran there,
// which the test reads itself (the hog's schedstat). Without it the cell is
// not contended, unless the hypervisor stole at least the threshold's share
// of the CPUs' time by the test's own reading of /proc/stat: a 2-core VM
// can lose a third of its time to steal while its host is busy, which is
// contention the lab cannot place away, and then steal must be the only
// reason. The proxy, the origin and the loadgen are placed apart as the
// 2-core plan places them (the proxy on the last CPU, the rest on the
// others) where the stack left them unplaced, and restored after.
func TestFlagContended(t *testing.T) {
	proxyCPUs, rest := placeApart(t, "proxybench-nginx", "proxybench-origin-fast")
	var wrap []string
	if self, err := cputime.Affinity(0); err == nil && slices.ContainsFunc(self, func(n int) bool { return slices.Contains(proxyCPUs, n) }) {
		if _, err := exec.LookPath("taskset"); err != nil {
			t.Skipf("the loadgen would share the proxy's CPUs and taskset is missing: %v", err)
		}
		wrap = []string{"taskset", "-c", cputime.FormatList(rest)}
	}
	results := t.TempDir()
	id := "nginx.fast.simple.3s.r1"
	args := []string{"-tier", "3s", "-proxies", "nginx", "-origins", "fast", "-concurrency", "20", "-isolate=false"}
	hogFirst := rand.IntN(2) == 0
	t.Logf("proxy on CPUs %s, the loadgen and the origin on %s; the hog's cell %s", cputime.FormatList(proxyCPUs), cputime.FormatList(rest),
		map[bool]string{true: "first", false: "second"}[hogFirst])
	var quiet, hogged contendedCell
	var hogShare, steal float64
	for _, withHog := range []bool{hogFirst, !hogFirst} {
		time.Sleep(time.Duration(rand.IntN(800)) * time.Millisecond) // the cells' phase against the scrapes differs
		if !withHog {
			// 20 ms is fine enough for 10 ms ticks, and light on the CPUs.
			st := [2]*sampler{startSamplerEvery(t, stealOf(proxyCPUs), 20*time.Millisecond), startSamplerEvery(t, stealOf(rest), 20*time.Millisecond)}
			quiet = contendedOf(t, results, "quiet", wrap, id, args...)
			for i, cpus := range [][]int{proxyCPUs, rest} {
				st[i].stop()
				a, _ := st[i].at(t, quiet.Start)
				b, _ := st[i].at(t, quiet.End)
				steal = max(steal, (b-a)/(quiet.End.Sub(quiet.Start).Seconds()*float64(len(cpus))))
			}
			continue
		}
		hogs := startHogs(t, proxyCPUs)
		hogged = contendedOf(t, results, "hog", wrap, id, args...)
		hogShare = hogs.share(t, hogged.Start, hogged.End)
	}
	mustFire(t, hogged.flagCell, "contended", "suspect", "proxy (proxybench-nginx): ",
		"% of "+cpusPhrase(proxyCPUs)+" time went to other processes")
	// The steal threshold is 20 %; /proc/stat counts in 10 ms ticks.
	if sev, why := quiet.flag("contended"); sev != "" && steal >= 0.17 {
		t.Logf("control: the hypervisor stole %.0f %% of the CPUs' time by this test's reading: %s", 100*steal, why)
		if strings.Contains(why, "went to other processes") || strings.Contains(why, "throttled") {
			t.Errorf("control contended for more than steal: %s", why)
		}
	} else {
		mustStayQuiet(t, quiet.flagCell, "contended")
	}
	px, ok := hogged.role("proxy")
	if !ok || px.ForeignShare == nil {
		t.Fatalf("hog cell: no foreign share for the proxy in %+v", hogged.Contention)
	}
	// foreign = busy - the proxy's own: all of the hog's time on those
	// CPUs is in it (a few ticks of /proc/stat's 10 ms rounding aside).
	if *px.ForeignShare < hogShare-0.05 {
		t.Errorf("proxy foreign share %.3f, but the hog alone ran %.3f of its CPUs' time", *px.ForeignShare, hogShare)
	}
	if q, ok := quiet.role("proxy"); ok && q.ForeignShare != nil {
		t.Logf("proxy foreign share %.3f with the hog (which ran %.3f of its CPUs' time), %.3f without (steal up to %.3f); flags: %s | %s",
			*px.ForeignShare, hogShare, *q.ForeignShare, steal, hogged.flags(), quiet.flags())
	}
}

// cpusPhrase is how a contended reason names a role's CPUs.
func cpusPhrase(cpus []int) string {
	if len(cpus) == 1 {
		return "its CPU " + cputime.FormatList(cpus) + "'s"
	}
	return "its CPUs " + cputime.FormatList(cpus) + "'"
}

// stealOf reads the steal time of cpus from /proc/stat, the test's own
// parse: the eighth number of each cpuN line, in 10 ms ticks.
func stealOf(cpus []int) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, err
		}
		var ticks int64
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") {
				continue
			}
			n, err := strconv.Atoi(strings.TrimPrefix(f[0], "cpu"))
			if err != nil || !slices.Contains(cpus, n) {
				continue
			}
			v, err := strconv.ParseInt(f[8], 10, 64)
			if err != nil {
				return 0, err
			}
			ticks += v
		}
		return time.Duration(ticks) * 10 * time.Millisecond, nil
	}
}

// contendedCell is a report.json cell with its contention.
type contendedCell struct {
	flagCell
	Contention []roleShares `json:"contention"`
}

type roleShares struct {
	Role         string   `json:"role"`
	CPUs         string   `json:"cpus"`
	ForeignShare *float64 `json:"foreign_share"`
	RunDelayPerS *float64 `json:"run_delay_per_second"`
}

func (c contendedCell) role(r string) (roleShares, bool) {
	for _, x := range c.Contention {
		if x.Role == r {
			return x, true
		}
	}
	return roleShares{}, false
}

// contendedOf runs the cell (runCells) and reads its report.json cell id
// with its contention.
func contendedOf(t *testing.T, results, run string, wrap []string, id string, args ...string) contendedCell {
	t.Helper()
	cell(t, runCells(t, results, run, wrap, args...), id)
	for _, c := range readCells[contendedCell](t, results, run) {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("report.json of %s has no cell %s", run, id)
	return contendedCell{}
}

// placeApart gives the proxy container the last of the host's CPUs and
// one core's quota, and the origin the others, where the stack left them
// without a cpuset (the placement plan sets them when it is applied).
// When the test ends what it set is undone: the cpuset back to every CPU
// (docker update cannot empty one; the effect is the same) and the
// proxy's quota as it was. It returns both sets.
func placeApart(t *testing.T, proxy, origin string) (proxyCPUs, rest []int) {
	t.Helper()
	all, err := cputime.Affinity(0)
	if err != nil || len(all) < 2 {
		t.Skipf("needs 2 CPUs to place the proxy apart: %v %v", all, err)
	}
	cpuset := func(ctr string) []int {
		cpus, err := cputime.ParseList(docker(t, "inspect", "-f", "{{.HostConfig.CpusetCpus}}", ctr))
		if err != nil {
			t.Fatal(err)
		}
		return cpus
	}
	if proxyCPUs = cpuset(proxy); len(proxyCPUs) == 0 || len(proxyCPUs) == len(all) {
		nano := docker(t, "inspect", "-f", "{{.HostConfig.NanoCpus}}", proxy)
		proxyCPUs = all[len(all)-1:]
		docker(t, "update", "--cpuset-cpus", cputime.FormatList(proxyCPUs), "--cpus", "1", proxy)
		t.Cleanup(func() {
			restore := []string{"update", "--cpuset-cpus", cputime.FormatList(all)}
			if n, err := strconv.ParseFloat(nano, 64); err == nil && n > 0 {
				restore = append(restore, "--cpus", strconv.FormatFloat(n/1e9, 'f', -1, 64))
			}
			_ = exec.Command("docker", append(restore, proxy)...).Run()
		})
	}
	for _, n := range all {
		if !slices.Contains(proxyCPUs, n) {
			rest = append(rest, n)
		}
	}
	if len(rest) == 0 {
		t.Skipf("the proxy has every CPU (%v): nothing is left to place the rest on", all)
	}
	if cpus := cpuset(origin); len(cpus) == 0 || slices.ContainsFunc(cpus, func(n int) bool { return slices.Contains(proxyCPUs, n) }) {
		docker(t, "update", "--cpuset-cpus", cputime.FormatList(rest), origin)
		t.Cleanup(func() { _ = exec.Command("docker", "update", "--cpuset-cpus", cputime.FormatList(all), origin).Run() })
	}
	return proxyCPUs, rest
}

// hogs are busy loops, one pinned to each CPU given, stopped when the
// test ends or by share.
type hogs struct {
	cmds []*exec.Cmd
	ran  []*sampler // each hog's on-CPU time (schedstat), every 2 ms
	n    int
}

func startHogs(t *testing.T, cpus []int) *hogs {
	t.Helper()
	h := &hogs{n: len(cpus)}
	for _, n := range cpus {
		cmd := cgrouptest.Spin(t, n)
		file := fmt.Sprintf("/proc/%d/schedstat", cmd.Process.Pid)
		h.cmds = append(h.cmds, cmd)
		h.ran = append(h.ran, startSampler(t, func() (time.Duration, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return 0, err
			}
			ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
			return time.Duration(ns), err
		}))
	}
	return h
}

// share stops the hogs and returns the share of their CPUs' time they
// ran between from and to, by their own counters.
func (h *hogs) share(t *testing.T, from, to time.Time) float64 {
	t.Helper()
	var ran float64
	for i, s := range h.ran {
		s.stop()
		_ = h.cmds[i].Process.Kill()
		a, _ := s.at(t, from)
		b, _ := s.at(t, to)
		ran += b - a
	}
	return ran / (to.Sub(from).Seconds() * float64(h.n))
}
