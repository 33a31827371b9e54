// Package selfcpu owns the loadgen's account of its own CPU: how much it
// can really get (cgroup quota, affinity mask, GOMAXPROCS), whether the
// kernel held it back (CFS throttling, run delay, CPU pressure) and how
// much it used. A Collector publishes these as the proxybench_loadgen_cpu_*
// and proxybench_loadgen_run_delay_seconds_total series, and its Snapshot
// reads them all at one instant so the runner can difference them across a
// cell's window edges.
package selfcpu

import (
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/cgroup"
	"proxybench/internal/cputime"
	"proxybench/internal/manifest"
	"proxybench/internal/metricdefs"
)

// Capacity sources.
const (
	SourceQuota      = "cgroup quota"
	SourceAffinity   = "affinity"
	SourceGOMAXPROCS = "gomaxprocs"
)

// Collector is a prometheus.Collector of the loadgen's own CPU series.
type Collector struct {
	cg  *cgroup.Group // nil when the loadgen's cgroup cannot be found
	log *slog.Logger

	mu       sync.Mutex
	delay    *cputime.Wait
	thr      cgroup.Throttling // last good reading: counters never go back
	warned   map[string]bool
	hasPSI   bool
	lastPSI  time.Duration
	limit    *prometheus.Desc
	periods  *prometheus.Desc
	thrPer   *prometheus.Desc
	thrSec   *prometheus.Desc
	runDelay *prometheus.Desc
	pressure *prometheus.Desc
}

// New finds the loadgen's cgroup; without one (not Linux, or no cgroup
// mounted) the quota is unknown and the cgroup counters stay 0, which it
// logs once. log may be nil.
func New(log *slog.Logger) *Collector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Collector{log: log, warned: map[string]bool{}, delay: cputime.NewWait()}
	cg, err := cgroup.Self()
	if err != nil {
		log.Warn("loadgen cgroup not found: its CPU quota and throttling are not known", "err", err)
	}
	c.cg = cg
	if _, err := c.readPressure(); err == nil {
		c.hasPSI = true
	}
	c.limit = metricdefs.LoadgenCPULimit.NewDesc(nil)
	c.periods = metricdefs.LoadgenCPUPeriods.NewDesc(nil)
	c.thrPer = metricdefs.LoadgenCPUThrottledPeriods.NewDesc(nil)
	c.thrSec = metricdefs.LoadgenCPUThrottledSeconds.NewDesc(nil)
	c.runDelay = metricdefs.LoadgenRunDelay.NewDesc(nil)
	c.pressure = metricdefs.LoadgenCPUPressure.NewDesc(nil)
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.limit
	ch <- c.periods
	ch <- c.thrPer
	ch <- c.thrSec
	ch <- c.runDelay
	if c.hasPSI {
		ch <- c.pressure
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.Snapshot()
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, s.CapacityCores)
	ch <- prometheus.MustNewConstMetric(c.periods, prometheus.CounterValue, float64(s.Periods))
	ch <- prometheus.MustNewConstMetric(c.thrPer, prometheus.CounterValue, float64(s.ThrottledPeriods))
	ch <- prometheus.MustNewConstMetric(c.thrSec, prometheus.CounterValue, s.Throttled.Seconds())
	ch <- prometheus.MustNewConstMetric(c.runDelay, prometheus.CounterValue, s.RunDelay.Seconds())
	if s.HasPressure {
		ch <- prometheus.MustNewConstMetric(c.pressure, prometheus.CounterValue, s.Pressure.Seconds(), s.PressureScope)
	}
}

// Scopes of the CPU pressure reading.
const (
	PressureCgroup = manifest.PressureCgroup // the loadgen's own cgroup v2 group
	PressureHost   = manifest.PressureHost   // the whole host: any busy task raises it
)

// Capacity is the CPU the loadgen can really get, in cores, and which
// bound sets it: the smallest of the cgroup quota, the CPUs of the
// affinity mask and GOMAXPROCS (a tie goes to the first of those).
func (c *Collector) Capacity() (cores float64, source string) {
	cores, source = float64(runtime.GOMAXPROCS(0)), SourceGOMAXPROCS
	if cpus, err := cputime.Affinity(0); err == nil {
		if n := float64(len(cpus)); n > 0 && n <= cores {
			cores, source = n, SourceAffinity
		}
	} else if !errors.Is(err, errors.ErrUnsupported) {
		c.warnOnce("affinity", "cannot read the loadgen's affinity mask", err)
	}
	if c.cg != nil {
		q, limited, err := c.cg.Quota()
		switch {
		case err != nil:
			c.warnOnce("quota", "cannot read the loadgen's CPU quota", err)
		case limited && q <= cores:
			cores, source = q, SourceQuota
		}
	}
	return cores, source
}

// Snapshot is every reading at one instant.
type Snapshot struct {
	At             time.Time
	CapacityCores  float64
	CapacitySource string
	CPU            time.Duration // the process's user + system CPU (getrusage RUSAGE_SELF)
	// The cgroup's cpu.stat: zero without a quota or without a cgroup.
	Periods, ThrottledPeriods int64
	Throttled                 time.Duration
	RunDelay                  time.Duration // summed over threads, monotonic
	Pressure                  time.Duration // PSI some total; valid when HasPressure
	HasPressure               bool
	PressureScope             string // "cgroup" (the loadgen's own group) or "host"
}

// Snapshot reads everything now. It is safe for concurrent use.
func (c *Collector) Snapshot() Snapshot {
	s := Snapshot{At: time.Now(), CPU: ProcessCPU()}
	s.CapacityCores, s.CapacitySource = c.Capacity()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cg != nil {
		t, err := c.cg.Throttling()
		if err != nil {
			c.warnOnceLocked("throttling", "cannot read the loadgen's cpu.stat", err)
		} else {
			// A counter never goes back, even if a read went wrong.
			c.thr = cgroup.Throttling{Periods: max(c.thr.Periods, t.Periods), Throttled: max(c.thr.Throttled, t.Throttled),
				ThrottledTime: max(c.thr.ThrottledTime, t.ThrottledTime)}
		}
	}
	s.Periods, s.ThrottledPeriods, s.Throttled = c.thr.Periods, c.thr.Throttled, c.thr.ThrottledTime
	if err := c.delay.ReadTaskDir("/proc/self/task"); err != nil {
		c.warnOnceLocked("schedstat", "cannot read the loadgen's run delay", err)
	}
	s.RunDelay = c.delay.Total()
	if c.hasPSI {
		if p, err := c.readPressure(); err == nil {
			c.lastPSI = max(c.lastPSI, p)
		} else {
			c.warnOnceLocked("psi", "cannot read CPU pressure", err)
		}
		s.Pressure, s.HasPressure = c.lastPSI, true
		s.PressureScope = PressureHost
		if c.cg != nil && c.cg.OwnPressure() {
			s.PressureScope = PressureCgroup
		}
	}
	return s
}

func (c *Collector) readPressure() (time.Duration, error) {
	if c.cg != nil {
		return c.cg.Pressure()
	}
	return cgroup.FS{}.SystemPressure()
}

// ProcessCPU is the process's user + system CPU so far (getrusage
// RUSAGE_SELF); 0 when it cannot be read.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Since is the loadgen's CPU account from start to s (s the later one).
func (s Snapshot) Since(start Snapshot) manifest.LoadgenCPU {
	out := manifest.LoadgenCPU{
		CapacityCores: s.CapacityCores, CapacitySource: s.CapacitySource,
		CPUSeconds:       (s.CPU - start.CPU).Seconds(),
		Periods:          s.Periods - start.Periods,
		ThrottledPeriods: s.ThrottledPeriods - start.ThrottledPeriods,
		ThrottledSeconds: (s.Throttled - start.Throttled).Seconds(),
		RunDelaySeconds:  (s.RunDelay - start.RunDelay).Seconds(),
	}
	if start.CapacityCores < out.CapacityCores { // the capacity changed in the window: the smaller holds
		out.CapacityCores, out.CapacitySource = start.CapacityCores, start.CapacitySource
	}
	if s.HasPressure && start.HasPressure {
		p := (s.Pressure - start.Pressure).Seconds()
		out.PressureSeconds, out.PressureScope = &p, s.PressureScope
	}
	return out
}

// Role is the loadgen's role in a cell's contention from start to s: its
// CPUs (cpus, its affinity mask; note says why they are unknown), its own
// CPU, its cgroup's throttling, its threads' run delay and its pressure.
// The busy, steal, co-tenant and foreign time of its CPUs are the caller's:
// they need /proc/stat and the other roles.
func (s Snapshot) Role(start Snapshot, cpus []int, note string) manifest.RoleContention {
	d := s.RunDelay - start.RunDelay
	r := manifest.RoleContention{Role: manifest.RoleLoadgen, CPUs: cputime.FormatList(cpus),
		CPUSeconds: (s.CPU - start.CPU).Seconds(),
		Throttling: &manifest.Throttling{Periods: s.Periods - start.Periods, ThrottledPeriods: s.ThrottledPeriods - start.ThrottledPeriods,
			ThrottledSeconds: (s.Throttled - start.Throttled).Seconds()},
		RunDelaySeconds: fptr(d.Seconds())}
	if note != "" {
		r.Unread = append(r.Unread, note)
	}
	if start.HasPressure && s.HasPressure {
		r.PressureSeconds, r.PressureScope = fptr((s.Pressure - start.Pressure).Seconds()), s.PressureScope
	}
	return r
}

func fptr(f float64) *float64 { return &f }

// Edges takes the readings of a window's two edges once each (an attack's
// Spec.OnEdge may be called by several attacks run as one): the first call
// of an edge reads, a concurrent one waits for it and then skips, a repeat
// is ignored. The runner's cell edges and a loadgen worker's use it.
type Edges struct {
	mu   sync.Mutex
	done [2]bool
}

// Take runs read(i) for edge i (0 the start, 1 the end) unless it ran.
func (e *Edges) Take(end bool, read func(i int)) {
	i := 0
	if end {
		i = 1
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.done[i] {
		e.done[i] = true
		read(i)
	}
}

// Both runs f under the same lock, told whether both edges were taken.
func (e *Edges) Both(f func(both bool)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e.done[0] && e.done[1])
}

func (c *Collector) warnOnce(key, msg string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warnOnceLocked(key, msg, err)
}

func (c *Collector) warnOnceLocked(key, msg string, err error) {
	if !c.warned[key] {
		c.warned[key] = true
		c.log.Warn(msg, "err", err)
	}
}

var _ prometheus.Collector = (*Collector)(nil)
