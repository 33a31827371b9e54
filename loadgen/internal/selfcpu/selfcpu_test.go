//go:build linux

package selfcpu

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"golang.org/x/sys/unix"

	"proxybench/internal/cgroup"
	"proxybench/internal/cgroup/cgrouptest"
	"proxybench/internal/metricslint"
)

// child re-executes the test binary as TestHelperChild, lets prepare act
// on its PID while it waits, and returns what it reported: its capacity
// and its cpu_limit gauge.
func child(t *testing.T, prepare func(pid int)) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChild$")
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "SELFCPU_CHILD=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(cmd.Process.Pid)
	}
	in.Write([]byte("go\n"))
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if r, ok := strings.CutPrefix(l, "RESULT "); ok {
			return r
		}
	}
	t.Fatalf("child said no RESULT:\n%s", out.String())
	return ""
}

// TestHelperChild is the sub-process of the capacity tests: once told to
// (so its parent can move it first) it prints its capacity and gauge.
func TestHelperChild(t *testing.T) {
	if os.Getenv("SELFCPU_CHILD") != "1" {
		t.Skip("sub-process of the capacity tests")
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	c := New(nil)
	cores, src := c.Capacity()
	fmt.Printf("RESULT %g %s | gauge %g\n", cores, src, testutil.ToFloat64(onlyLimit{c}))
}

// onlyLimit exposes the one gauge for testutil.ToFloat64.
type onlyLimit struct{ c *Collector }

func (o onlyLimit) Describe(ch chan<- *prometheus.Desc) { ch <- o.c.limit }
func (o onlyLimit) Collect(ch chan<- prometheus.Metric) {
	cores, _ := o.c.Capacity()
	ch <- prometheus.MustNewConstMetric(o.c.limit, prometheus.GaugeValue, cores)
}

// TestCapacityFromQuota: a process in a v1 group limited to 0.2 cores says
// so, and publishes it.
func TestCapacityFromQuota(t *testing.T) {
	cg := cgrouptest.NewV1(t, 0.2)
	got := child(t, func(pid int) { cg.Add(t, pid) })
	if want := "0.2 cgroup quota | gauge 0.2"; got != want {
		t.Errorf("child in a 0.2-core group: %q, want %q", got, want)
	}
}

// TestCapacityFromAffinity: a process started from a thread pinned to one
// CPU inherits the mask; GOMAXPROCS follows it and the tie names affinity.
func TestCapacityFromAffinity(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs to narrow the mask")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var orig, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	one.Set(firstCPU(orig))
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	got := child(t, nil)
	if err := unix.SchedSetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	if self, err := cgroup.Self(); err == nil {
		if q, limited, _ := self.Quota(); limited && q < 1 {
			t.Skipf("this test runs under a %.2f-core quota", q)
		}
	}
	if want := "1 affinity | gauge 1"; got != want {
		t.Errorf("child pinned to one CPU: %q, want %q", got, want)
	}
}

func firstCPU(s unix.CPUSet) int {
	for i := 0; i < 1024; i++ {
		if s.IsSet(i) {
			return i
		}
	}
	return 0
}

// TestRunDelayGrows: two busy threads pinned to one CPU wait for each
// other, so the run delay grows by a good share of the time they spin.
func TestRunDelayGrows(t *testing.T) {
	c := New(nil)
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	cpu := firstCPU(orig)
	before := c.Snapshot()
	const spin = 400 * time.Millisecond
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var one unix.CPUSet
			one.Set(cpu)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				t.Error(err)
				return
			}
			defer unix.SchedSetaffinity(0, &orig) // the thread goes back to the pool
			for end := time.Now().Add(spin); time.Now().Before(end); {
			}
		}()
	}
	wg.Wait()
	after := c.Snapshot()
	d := after.Since(before)
	// Sharing one CPU, each thread waits about half of the spin.
	if d.RunDelaySeconds < 0.25*spin.Seconds() {
		t.Errorf("run delay grew %.3f s while two threads shared one CPU for %v, want >= %.2f s", d.RunDelaySeconds, spin, 0.25*spin.Seconds())
	}
	// At most the one CPU (plus the rest of the process); other load on
	// the host may leave it much less.
	if d.CPUSeconds <= 0 || d.CPUSeconds > 2.5*spin.Seconds() {
		t.Errorf("process CPU %.3f s for two threads on one CPU for %v", d.CPUSeconds, spin)
	}
}

// TestExposition: the series are there, named and typed as Prometheus
// wants, and pressure only where the kernel has PSI.
func TestExposition(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	c := New(nil)
	reg.MustRegister(c)
	var buf bytes.Buffer
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	metricslint.Check(t, buf.Bytes())
	for _, n := range []string{"proxybench_loadgen_cpu_limit_cores", "proxybench_loadgen_cpu_periods_total",
		"proxybench_loadgen_cpu_throttled_periods_total", "proxybench_loadgen_cpu_throttled_seconds_total",
		"proxybench_loadgen_run_delay_seconds_total"} {
		if !got[n] {
			t.Errorf("missing %s in\n%s", n, buf.String())
		}
	}
	_, psiErr := cgroup.FS{}.SystemPressure()
	if want := psiErr == nil; got["proxybench_loadgen_cpu_pressure_seconds_total"] != want {
		t.Errorf("pressure exported %v, PSI here %v (%v)", !want, want, psiErr)
	}
	if cores, _ := c.Capacity(); testutil.ToFloat64(onlyLimit{c}) != cores || cores <= 0 || cores > float64(runtime.NumCPU()) {
		t.Errorf("capacity %v of %d CPUs", cores, runtime.NumCPU())
	}
}

// BenchmarkSnapshot: the edges call Snapshot synchronously in the engine,
// so it must stay cheap.
func BenchmarkSnapshot(b *testing.B) {
	c := New(nil)
	for b.Loop() {
		c.Snapshot()
	}
}
