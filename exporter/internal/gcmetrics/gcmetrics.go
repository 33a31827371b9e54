// Package gcmetrics owns turning a Go program's gctrace lines into
// Prometheus series, one set per container: cycles counted by cycle number
// so a torn or repeated line never miscounts, the stop-the-world pause
// histogram, mark and GC CPU time, and the heap of the last cycle.
package gcmetrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/exporter/internal/gctrace"
)

// Labels every series carries.
var labels = []string{"container", "service"}

// PauseBuckets are the classic buckets of the pause histogram, from 10 µs
// (a quiet Go program) to 100 ms (a badly overloaded one); the native
// histogram beside them has no fixed range.
var PauseBuckets = []float64{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1}

// Metrics holds the series of every source.
type Metrics struct {
	cycles, forced, mark, cpu, parseErrors       *prometheus.CounterVec
	pause                                        *prometheus.HistogramVec
	fraction, heapStart, heapEnd, heapLive, goal *prometheus.GaugeVec
	procs, last                                  *prometheus.GaugeVec

	// refs counts the live sources per label set: compose recreates a
	// container (new id, same name) before removing the old one, and the
	// old one's Delete must not drop the new one's series.
	mu   sync.Mutex
	refs map[[2]string]int
}

// New registers the gctrace series with reg.
func New(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	m := &Metrics{
		cycles:      counter("proxybench_gc_cycles_total", "GC cycles completed, counted by the runtime's cycle number (a torn gctrace line still counts)."),
		forced:      counter("proxybench_gc_forced_cycles_total", "GC cycles forced by runtime.GC or debug.FreeOSMemory (marked (forced)) or by the 2-minute periodic GC (after a 'GC forced' line)."),
		mark:        counter("proxybench_gc_concurrent_mark_seconds_total", "Wall-clock time spent in concurrent mark and scan."),
		cpu:         counter("proxybench_gc_cpu_seconds_total", "CPU time of all GC phases: sweep termination, assist, background and idle mark, mark termination."),
		parseErrors: counter("proxybench_gctrace_parse_errors_total", "gc lines whose cycle number was read but whose details were torn or unrecognised."),
		fraction:    gauge("proxybench_gc_cpu_fraction", "The runtime's GC share of available CPU since the process started, as of the last cycle (gctrace P%/100)."),
		heapStart:   gauge("proxybench_gc_heap_start_bytes", "Heap size at the start of the last GC cycle."),
		heapEnd:     gauge("proxybench_gc_heap_end_bytes", "Heap size at the end of the last GC cycle."),
		heapLive:    gauge("proxybench_gc_heap_live_bytes", "Live heap marked by the last GC cycle."),
		goal:        gauge("proxybench_gc_heap_goal_bytes", "Heap goal of the last GC cycle."),
		procs:       gauge("proxybench_gc_gomaxprocs", "GOMAXPROCS as reported by the last GC cycle."),
		last:        gauge("proxybench_gc_last_cycle_timestamp_seconds", "When the last GC cycle's line was logged, Unix time."),
		refs:        map[[2]string]int{},
	}
	m.pause = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                            "proxybench_gc_pause_seconds",
		Help:                            "Stop-the-world time of each GC cycle: sweep termination plus mark termination, wall clock.",
		Buckets:                         PauseBuckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	}, labels)
	reg.MustRegister(m.pause)
	return m
}

// Source is the gctrace of one container (or one process outside Docker).
// Its methods are not safe for concurrent use: one log follower owns it.
type Source struct {
	m          *Metrics
	lv         []string
	cycles     prometheus.Counter
	forced     prometheus.Counter
	mark, cpu  prometheus.Counter
	parseErrs  prometheus.Counter
	pause      prometheus.Observer
	gauges     [7]prometheus.Gauge
	lastN      uint64
	nextForced bool
	restarted  bool // a new process is known to follow
	c          gctrace.Cycle
}

// Source returns the recorder for one container; its counters start at 0
// so rate() sees the first cycles.
func (m *Metrics) Source(container, service string) *Source {
	m.mu.Lock()
	m.refs[[2]string{container, service}]++
	m.mu.Unlock()
	lv := []string{container, service}
	s := &Source{
		m: m, lv: lv,
		cycles:    m.cycles.WithLabelValues(lv...),
		forced:    m.forced.WithLabelValues(lv...),
		mark:      m.mark.WithLabelValues(lv...),
		cpu:       m.cpu.WithLabelValues(lv...),
		parseErrs: m.parseErrors.WithLabelValues(lv...),
		pause:     m.pause.WithLabelValues(lv...),
	}
	for i, g := range []*prometheus.GaugeVec{m.fraction, m.heapStart, m.heapEnd, m.heapLive, m.goal, m.procs, m.last} {
		s.gauges[i] = g.WithLabelValues(lv...)
	}
	return s
}

// Delete drops every series of the source (its container is gone) unless
// another live source has the same labels.
func (s *Source) Delete() {
	m, key := s.m, [2]string{s.lv[0], s.lv[1]}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refs[key]--; m.refs[key] > 0 {
		return
	}
	delete(m.refs, key)
	for _, v := range []*prometheus.MetricVec{s.m.cycles.MetricVec, s.m.forced.MetricVec, s.m.mark.MetricVec, s.m.cpu.MetricVec,
		s.m.parseErrors.MetricVec, s.m.pause.MetricVec, s.m.fraction.MetricVec, s.m.heapStart.MetricVec, s.m.heapEnd.MetricVec,
		s.m.heapLive.MetricVec, s.m.goal.MetricVec, s.m.procs.MetricVec, s.m.last.MetricVec} {
		v.DeleteLabelValues(s.lv...)
	}
}

// Reset says the program was restarted: a new process's cycle numbers
// start again at 1. Lines of the old process may still follow (a log is
// read in order but restarts are noticed out of band), so numbering is
// restarted at the first cycle number that does not exceed the last one.
func (s *Source) Reset() {
	s.restarted = true
}

// LastCycle is the highest cycle number seen from the current process.
func (s *Source) LastCycle() uint64 { return s.lastN }

// Line records one line of output logged at ts.
//
// Cycles are counted by number: a cycle number above the last one adds the
// difference (a lost line still counts). Within one process numbers only
// grow, so a number at or below the last one is either the same line again
// (not counted) or, after Reset or when it is lower, the first cycle of a
// new process, counted from zero.
func (s *Source) Line(ts time.Time, line []byte) {
	kind, err := gctrace.Parse(line, &s.c)
	switch kind {
	case gctrace.Forced:
		s.nextForced = true
		return
	case gctrace.GC:
	default:
		return
	}
	c := &s.c
	if err != nil {
		s.parseErrs.Inc()
	}
	if c.N <= s.lastN {
		if c.N == s.lastN && !s.restarted {
			return
		}
		s.lastN, s.restarted = 0, false
	}
	s.cycles.Add(float64(c.N - s.lastN))
	s.lastN = c.N
	if c.ForcedMark || s.nextForced {
		s.forced.Inc()
	}
	s.nextForced = false
	s.gauges[6].Set(float64(ts.UnixNano()) / 1e9)
	if err != nil {
		return
	}
	s.pause.Observe(c.Pause().Seconds())
	s.mark.Add(c.Mark.Seconds())
	s.cpu.Add(c.CPU().Seconds())
	s.gauges[0].Set(float64(c.CPUPercent) / 100)
	s.gauges[1].Set(float64(c.HeapStart))
	s.gauges[2].Set(float64(c.HeapEnd))
	s.gauges[3].Set(float64(c.HeapLive))
	s.gauges[4].Set(float64(c.HeapGoal))
	s.gauges[5].Set(float64(c.Procs))
}
