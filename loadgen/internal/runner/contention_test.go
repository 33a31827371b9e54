package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cgroup"
	"proxybench/internal/cgroup/cgrouptest"
	"proxybench/internal/cputime"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/selfcpu"
)

// TestContentionRecord: the account of hand-made readings on a 2-CPU host
// placed as the lab places it (the proxy alone on CPU 1, the loadgen and
// the origin sharing CPU 0): each role's foreign time is its CPUs' busy
// time minus its own and its co-tenants' CPU, never below zero; steal and
// the container counters are differenced; what could not be read is said.
func TestContentionRecord(t *testing.T) {
	t.Parallel()
	s := time.Second
	c := &contention{loadgenCPUs: []int{0}, at: [2]time.Time{time.Unix(100, 0), time.Unix(104, 0)}}
	c.stat[0] = cputime.Stat{0: {User: 10 * s, Steal: s}, 1: {User: 20 * s, Idle: s}}
	// CPU 0: 3.6 s busy over 4 s (user, system, softirq), 0.2 s stolen;
	// CPU 1: 3.9 s busy, 0.1 s idle.
	c.stat[1] = cputime.Stat{0: {User: 12 * s, System: 1 * s, SoftIRQ: 600 * time.Millisecond, Steal: 1200 * time.Millisecond},
		1: {User: 23 * s, Nice: 900 * time.Millisecond, Idle: 1100 * time.Millisecond}}
	proxy := &ctrRole{role: manifest.RoleProxy, name: "proxybench-nginx", cpus: []int{1}, g: &cgroup.Group{}}
	proxy.read = [2]ctrRead{
		{usage: 50 * s, thr: cgroup.Throttling{Periods: 10, Throttled: 1, ThrottledTime: 100 * time.Millisecond}, wait: 7 * s, threads: 3, psi: s},
		{usage: 52 * s, thr: cgroup.Throttling{Periods: 50, Throttled: 3, ThrottledTime: 300 * time.Millisecond}, wait: 9 * s, threads: 2, exited: 1, psi: 2500 * time.Millisecond}}
	origin := &ctrRole{role: manifest.RoleOrigin, name: "proxybench-origin-fast", cpus: []int{0}, g: &cgroup.Group{}, notes: []string{"cpus: from affinity"}}
	origin.read = [2]ctrRead{
		{usage: 10 * s, waitErr: errors.New("permission denied"), psiErr: cgroup.ErrNoPSI},
		{usage: 11 * s, psiErr: cgroup.ErrNoPSI}}
	gone := &ctrRole{role: "origin", name: "stopped", cpus: []int{0}, g: &cgroup.Group{}}
	gone.read[1].usageErr = errors.New("the cgroup is gone")
	c.ctrs = []*ctrRole{proxy, origin, gone}
	self := [2]selfcpu.Snapshot{{CPU: s, RunDelay: s, HasPressure: true, Pressure: s, PressureScope: manifest.PressureHost},
		{CPU: 3 * s, RunDelay: 1500 * time.Millisecond, HasPressure: true, Pressure: 1800 * time.Millisecond, PressureScope: manifest.PressureHost}}

	got := c.record(self)
	if got.WindowSeconds != 4 || len(got.Roles) != 3 {
		t.Fatalf("window %v s, %d roles (%+v), want 4 s and 3 (the stopped origin left out)", got.WindowSeconds, len(got.Roles), got.Roles)
	}
	lg, px, or := got.Roles[0], got.Roles[1], got.Roles[2]
	near := func(what string, p *float64, want float64) {
		t.Helper()
		if p == nil || *p < want-1e-9 || *p > want+1e-9 {
			t.Errorf("%s = %v, want %v", what, deref(p), want)
		}
	}
	// CPU 0: 3.6 s busy - 2 s the loadgen's - 1 s the origin's.
	if lg.Role != manifest.RoleLoadgen || lg.CPUs != "0" || lg.CPUSeconds != 2 || !slices.Equal(lg.CoTenants, []string{manifest.RoleOrigin}) || lg.CoTenantSeconds != 1 {
		t.Errorf("loadgen %+v", lg)
	}
	near("loadgen busy", lg.BusySeconds, 3.6)
	near("loadgen foreign", lg.ForeignSeconds, 0.6)
	near("loadgen steal", lg.StealSeconds, 0.2)
	near("loadgen run delay", lg.RunDelaySeconds, 0.5)
	near("loadgen pressure", lg.PressureSeconds, 0.8)
	if lg.PressureScope != manifest.PressureHost {
		t.Errorf("loadgen pressure scope %q", lg.PressureScope)
	}
	// CPU 1: 3.9 s busy - 2 s the proxy's; nobody else is confined to it.
	if px.Container != "proxybench-nginx" || px.CPUs != "1" || px.CPUSeconds != 2 || px.CoTenants != nil || px.Threads != 2 || px.ThreadsExited != 1 {
		t.Errorf("proxy %+v", px)
	}
	near("proxy foreign", px.ForeignSeconds, 1.9)
	near("proxy steal", px.StealSeconds, 0)
	near("proxy run delay", px.RunDelaySeconds, 2)
	near("proxy pressure", px.PressureSeconds, 1.5)
	if px.Throttling == nil || *px.Throttling != (manifest.Throttling{Periods: 40, ThrottledPeriods: 2, ThrottledSeconds: 0.2}) {
		t.Errorf("proxy throttling %+v", px.Throttling)
	}
	if px.PressureScope != manifest.PressureHost { // a Group without its own cpu.pressure
		t.Errorf("proxy pressure scope %q", px.PressureScope)
	}
	// The origin: 3.6 - 1 - the loadgen's 2; its run delay unread, no PSI.
	near("origin foreign", or.ForeignSeconds, 0.6)
	if or.RunDelaySeconds != nil || or.PressureSeconds != nil || len(or.Unread) != 2 ||
		!strings.Contains(or.Unread[1], "run delay: permission denied") || or.Unread[0] != "cpus: from affinity" {
		t.Errorf("origin %+v: want no run delay nor pressure, the two reasons in unread", or)
	}

	// /proc/stat unreadable: no busy, foreign or steal, and said so; a
	// foreign time below zero (tick rounding) is zero.
	c.statErr[1] = errors.New("read /proc/stat: no such file")
	for _, r := range c.record(self).Roles {
		if r.BusySeconds != nil || r.ForeignSeconds != nil || !slices.ContainsFunc(r.Unread, func(s string) bool { return strings.HasPrefix(s, "busy and steal: ") }) {
			t.Errorf("%s without /proc/stat: %+v", r.Role, r)
		}
	}
	c.statErr[1] = nil
	c.stat[1][1] = cputime.CPU{User: 21 * s}
	near("proxy foreign under its own CPU", c.record(self).Roles[1].ForeignSeconds, 0)
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestContentionHog reads real groups: a "proxy" of two busy threads
// pinned to one CPU waits for itself (run delay) and none of that is
// foreign; the same proxy with one thread beside a hog outside its group
// waits too, and the CPU's foreign time holds all the hog ran, by the
// hog's own schedstat. That is what tells contention from a proxy busy
// with itself. The checks hold whatever else the host runs on that CPU
// (which is foreign in both cases).
func TestContentionHog(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs: one to pin to, one for the rest")
	}
	cpus, err := cputime.Affinity(0)
	if err != nil || len(cpus) < 2 {
		t.Skipf("affinity %v %v", cpus, err)
	}
	cpu := cpus[len(cpus)-1]
	// Each case in a subtest of its own, so its busy loops are gone before
	// the next one starts.
	var lost float64
	measure := func(inGroup int, hog bool) (px manifest.RoleContention, window, hogRan float64) {
		if !t.Run(fmt.Sprintf("%d_in_the_group_hog_%v", inGroup, hog), func(t *testing.T) {
			px, window, hogRan, lost = measureOn(t, cpu, inGroup, hog)
		}) {
			t.FailNow()
		}
		if px.ForeignSeconds == nil {
			t.Skip("the subtest skipped: it needs to make a cgroup v1 group")
		}
		return px, window, hogRan
	}
	self, w1, _ := measure(2, false)
	hog, w2, hogRan := measure(1, true)
	// Each of two threads sharing one CPU waits about half the time; a
	// thread that is always runnable waits whenever the hog runs.
	if *self.RunDelaySeconds < 0.25*w1 {
		t.Errorf("run delay %.3f s of two threads sharing one CPU for %.3f s, want >= %.3f", *self.RunDelaySeconds, w1, 0.25*w1)
	}
	// schedstat adds a wait when the thread gets the CPU back, so a wait
	// still under way at the end edge is missing: up to a scheduler slice,
	// which under a loaded host (other tests beside this one) reached 50 ms.
	if *hog.RunDelaySeconds < 0.75*hogRan {
		t.Errorf("run delay %.3f s of a busy thread beside a hog that ran %.3f s, want >= 75 %% of it", *hog.RunDelaySeconds, hogRan)
	}
	// The group's own threads waiting for each other are not foreign: at
	// most what the CPU did beside them is (/proc/stat's 10 ms ticks aside).
	if *self.ForeignSeconds > w1-self.CPUSeconds+0.05*w1 {
		t.Errorf("foreign %.3f s of a group that ran %.3f s of %.3f s by itself", *self.ForeignSeconds, self.CPUSeconds, w1)
	}
	// foreign = busy - own: all the hog ran is in it, except what the
	// hypervisor stole while it ran: /proc/stat counts a stolen tick as
	// steal, not busy, while the hog's schedstat may count it as run time
	// (a kernel without steal-aware task clocks). A hypervisor that does
	// not tell the guest (steal 0 here) loses those ticks from /proc/stat
	// altogether, while the task clocks run on: the CPU's states then add
	// up to less than the window, and that much of the hog's time is in no
	// state at all.
	stolen := 0.0
	if hog.StealSeconds != nil {
		stolen = *hog.StealSeconds
	}
	if *hog.ForeignSeconds < hogRan-stolen-lost-0.05*w2 {
		t.Errorf("foreign %.3f s beside a hog that ran %.3f s (steal on its CPU %.3f s, %.3f s of the window in no state of /proc/stat)",
			*hog.ForeignSeconds, hogRan, stolen, lost)
	}
	if hogRan < 0.05*w2 {
		t.Errorf("the hog ran %.3f s of %.3f s: nothing was measured", hogRan, w2)
	}
}

// measureOn spins inGroup busy loops in a throwaway group, and a hog
// beside it when asked, all pinned to cpu, and reads the group's
// contention over 1 s; hogRan is the hog's own time on the CPU, lost the
// part of the window /proc/stat put in no state of the CPU (ticks a
// hypervisor took without saying so).
func measureOn(t *testing.T, cpu, inGroup int, hog bool) (px manifest.RoleContention, window, hogRan, lost float64) {
	cg := cgrouptest.NewV1(t, 0)
	var main int
	for i := range inGroup {
		p := cgrouptest.Spin(t, cpu).Process.Pid
		cg.Add(t, p)
		if i == 0 {
			main = p
		}
	}
	ran := func() time.Duration { return 0 }
	if hog {
		h := cgrouptest.Spin(t, cpu).Process.Pid
		ran = func() time.Duration { return onCPU(t, h) }
	}
	c := newContention(&dockerx.Container{Name: "burner", Pid: main}, nil, testLog(t))
	if len(c.ctrs) != 1 {
		t.Fatal("the burner's cgroup was not found")
	}
	c.ctrs[0].cpus = []int{cpu} // its cpuset is the host's: pinned by affinity instead
	time.Sleep(100 * time.Millisecond)
	s0, t0 := readStat(t), time.Now()
	c.read(0)
	r0 := ran()
	time.Sleep(time.Second)
	c.read(1)
	r1 := ran()
	s1, t1 := readStat(t), time.Now()
	if d, err := s1.Since(s0, []int{cpu}); err == nil {
		all := d.Busy() + d.Idle + d.IOWait + d.Steal
		lost = max(0, (t1.Sub(t0) - all).Seconds())
	}
	r := c.record([2]selfcpu.Snapshot{})
	if len(r.Roles) != 2 {
		t.Fatalf("roles %+v", r.Roles)
	}
	px = r.Roles[1]
	if px.ForeignSeconds == nil || px.RunDelaySeconds == nil || px.Threads != inGroup {
		t.Fatalf("burner %+v", px)
	}
	t.Logf("%d in the group, hog %v, on CPU %d: own %.3f s, foreign %.3f s (the hog ran %.3f s), run delay %.3f s over %.3f s, %.3f s in no state (unread %q)",
		inGroup, hog, cpu, px.CPUSeconds, *px.ForeignSeconds, (r1 - r0).Seconds(), *px.RunDelaySeconds, r.WindowSeconds, lost, px.Unread)
	return px, r.WindowSeconds, (r1 - r0).Seconds(), lost
}

func readStat(t *testing.T) cputime.Stat {
	t.Helper()
	s, err := cputime.ReadStat("/proc")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// onCPU is process pid's time on a CPU: the first field of its schedstat.
func onCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns)
}

// BenchmarkContentionEdge: the start edge holds up the first requests,
// so reading every role must stay cheap. Two sleeping processes in a
// throwaway group stand in for the proxy's and the origin's containers.
func BenchmarkContentionEdge(b *testing.B) {
	var ctrs []*dockerx.Container
	for range 2 {
		cg := cgrouptest.NewV1(b, 0)
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		cg.Add(b, cmd.Process.Pid)
		ctrs = append(ctrs, &dockerx.Container{Name: "sleeper", Pid: cmd.Process.Pid})
	}
	c := newContention(ctrs[0], ctrs[1], slog.New(slog.DiscardHandler))
	if len(c.ctrs) != 2 {
		b.Fatal("the sleepers' groups were not found")
	}
	for b.Loop() {
		c.read(0)
	}
}
