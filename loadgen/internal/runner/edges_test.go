package runner

import (
	"context"
	"io"
	"math"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"proxybench/internal/cgroup/cgrouptest"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/cellmetrics"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/selfcpu"
)

// TestEdgeReadings runs a simple and an auth cell (a mix of concurrent
// variant attacks) against a real local server without Docker: each cell
// has the loadgen's CPU over its window, within what its capacity allows,
// published as a cell gauge with the drain end; no proxy CPU; the expected
// statuses of its scenario.
func TestEdgeReadings(t *testing.T) {
	t.Parallel()
	ln := listenLocal(t)
	srv := &http.Server{Handler: http.HandlerFunc(origin), ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	dir := t.TempDir()
	p, err := plan.Load(args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast", "-scenarios", "simple,auth"), time.Now(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	for i := range x.Cells {
		x.Cells[i].Warmup = plan.Duration(300 * time.Millisecond) // its own attack: must not move the edges
	}
	reg := prometheus.NewPedanticRegistry()
	self := selfcpu.New(testLog(t))
	reg.MustRegister(self)
	r := &Runner{Plan: x, Attacker: attack.New(attack.NewMetrics(reg)), Cells: cellmetrics.New(reg), Self: self,
		Target: func(string) (string, error) { return "http://" + ln.Addr().String(), nil }, Clock: &sleeper{}, Log: testLog(t)}
	out, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Manifest.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(out.Manifest.Cells))
	}
	for _, c := range out.Manifest.Cells {
		if c.Status != manifest.CellOK {
			t.Fatalf("%s: %s (%s)", c.ID, c.Status, c.Reason)
		}
		if want := scenario.Expected(c.Scenario); len(want) == 0 || !slices.Equal(c.Expected, want) {
			t.Errorf("%s: expected statuses %v, want %v", c.ID, c.Expected, want)
		}
		lg := c.Loadgen
		if lg == nil {
			t.Fatalf("%s: no loadgen CPU", c.ID)
		}
		t.Logf("%s: loadgen over the window %+v", c.ID, *lg)
		if !slices.Contains([]string{selfcpu.SourceQuota, selfcpu.SourceAffinity, selfcpu.SourceGOMAXPROCS}, lg.CapacitySource) || lg.CapacityCores <= 0 {
			t.Errorf("%s: capacity %v from %q", c.ID, lg.CapacityCores, lg.CapacitySource)
		}
		if limit := c.DurationS * lg.CapacityCores * 1.05; lg.CPUSeconds <= 0 || lg.CPUSeconds > limit {
			t.Errorf("%s: loadgen CPU %.3f s over a %.1f s window, want (0, %.3f]", c.ID, lg.CPUSeconds, c.DurationS, limit)
		}
		if lg.RunDelaySeconds < 0 || lg.Periods < 0 || lg.ThrottledSeconds < 0 {
			t.Errorf("%s: counters went back: %+v", c.ID, lg)
		}
		if c.ProxyCPUSeconds != nil {
			t.Errorf("%s: proxy CPU %v without a container", c.ID, *c.ProxyCPUSeconds)
		}
		l := r.labels(x.Cells[slices.IndexFunc(x.Cells, func(p plan.Cell) bool { return p.ID == c.ID })])
		// The series holds the later of the drain's end and the window's
		// (cellmetrics.Used): a request judged late against the planned
		// end can complete before the end the cell recorded.
		drain := c.End
		if c.DrainEnd != nil && !c.DrainEnd.Before(c.End) {
			drain = *c.DrainEnd
		}
		for name, want := range map[string]float64{
			"proxybench_cell_loadgen_cpu_seconds":         lg.CPUSeconds,
			"proxybench_cell_drain_end_timestamp_seconds": seconds(drain),
		} {
			if got := gaugeOf(t, reg, name, l); got != want {
				t.Errorf("%s: %s = %v, want %v", c.ID, name, got, want)
			}
		}
	}
	if n, err := testutil.GatherAndCount(reg, "proxybench_cell_proxy_cpu_seconds"); err != nil || n != 0 {
		t.Errorf("proxy CPU series without a container: %d %v", n, err)
	}
}

// gaugeOf is the value of the cell series name for cell l.
func gaugeOf(t *testing.T, reg prometheus.Gatherer, name string, l cellmetrics.Cell) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "cell" && lp.GetValue() == l.ID {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s for cell %s", name, l.ID)
	return 0
}

// TestProxyCPUEdges reads a real cgroup (a CPU-burning shell in a v1
// group limited to half a core stands in for the proxy's container) at the
// edges, which several variant attacks all report: only the first start
// and the first end count.
func TestProxyCPUEdges(t *testing.T) {
	cg := cgrouptest.NewV1(t, 0.5)
	burn := exec.Command("sh", "-c", "while :; do :; done")
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = burn.Process.Kill(); _ = burn.Wait() })
	cg.Add(t, burn.Process.Pid)

	e := newEdges(selfcpu.New(nil), &dockerx.Container{Name: "burner", Pid: burn.Process.Pid}, nil, testLog(t))
	if e.proxy == nil {
		t.Fatal("the burner's cgroup was not found")
	}
	all := func(end bool) { // three variants reach the edge at once
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() { defer wg.Done(); e.on(end, time.Now()) }()
		}
		wg.Wait()
	}
	all(false)
	startRead := time.Now()
	time.Sleep(500 * time.Millisecond)
	e.on(false, time.Now()) // a late variant's start: ignored
	all(true)
	endRead := time.Now()
	time.Sleep(100 * time.Millisecond)
	e.on(true, time.Now()) // a late variant's end: ignored
	var mc manifest.Cell
	e.record(&mc)
	if e.read[0].self.At.After(startRead) || e.read[1].self.At.After(endRead) {
		t.Errorf("edges re-read: start %v (first at %v), end %v (first at %v)", e.read[0].self.At, startRead, e.read[1].self.At, endRead)
	}
	window := e.read[1].self.At.Sub(e.read[0].self.At).Seconds()
	// The quota is granted per CFS period, and a window cuts periods at
	// both ends: a full quota can fall in each partial one (0.302 s was
	// seen over 0.501 s), so the most the group can use is the quota over
	// window + one period, and a few ms of the scheduler's slack.
	period := float64(cgrouptest.Period) / 1e6
	if mc.ProxyCPUSeconds == nil || *mc.ProxyCPUSeconds <= 0.01 || *mc.ProxyCPUSeconds > 0.5*(window+period)+0.01 {
		t.Errorf("proxy CPU %v over %.3f s under a 0.5-core quota", mc.ProxyCPUSeconds, window)
	}
	if mc.Loadgen == nil {
		t.Error("no loadgen CPU")
	}
	t.Logf("proxy CPU %.3f s over %.3f s", *mc.ProxyCPUSeconds, window)
	// The contention readings see the same group and window.
	if ct := mc.Contention; ct == nil || len(ct.Roles) != 2 || ct.Roles[1].Container != "burner" ||
		math.Abs(ct.Roles[1].CPUSeconds-*mc.ProxyCPUSeconds) > 0.05 || math.Abs(ct.WindowSeconds-window) > 0.05 {
		t.Errorf("contention %+v, want the loadgen and the burner with its %.3f s over %.3f s", mc.Contention, *mc.ProxyCPUSeconds, window)
	}

	// No container, no main process, a process gone: no proxy CPU, silently.
	for _, ctr := range []*dockerx.Container{nil, {Name: "stopped"}, {Name: "gone", Pid: 1 << 30}} {
		e := newEdges(selfcpu.New(nil), ctr, nil, testLog(t))
		e.on(false, time.Now())
		e.on(true, time.Now())
		var mc manifest.Cell
		e.record(&mc)
		if mc.ProxyCPUSeconds != nil || mc.Loadgen == nil {
			t.Errorf("container %+v: proxy CPU %v, loadgen %v", ctr, mc.ProxyCPUSeconds, mc.Loadgen)
		}
	}
}
