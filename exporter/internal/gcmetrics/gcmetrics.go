// Package gcmetrics owns turning a Go program's gctrace lines into
// Prometheus series (rows of internal/metricdefs), one set per container: cycles counted by cycle number
// so a torn or repeated line never miscounts, the stop-the-world pause
// histogram, mark and GC CPU time, and the heap of the last cycle.
package gcmetrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/gctrace"
	"proxybench/internal/metricdefs"
)

// PauseBuckets are the classic buckets of the pause histogram, from 10 µs
// (a quiet Go program) to 100 ms (a badly overloaded one); the native
// histogram beside them has no fixed range.
var PauseBuckets = []float64{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1}

// cycleRows are the series every fully parsed cycle adds to (a counter) or
// sets (a gauge), a row each with its value in the cycle. Cycle counts,
// forced cycles, parse errors, the pause and the time of the last line
// follow rules of their own (Line).
var cycleRows = []struct {
	def *metricdefs.Def
	get func(c *gctrace.Cycle) float64
}{
	{metricdefs.GCConcurrentMark, func(c *gctrace.Cycle) float64 { return c.Mark.Seconds() }},
	{metricdefs.GCCPU, func(c *gctrace.Cycle) float64 { return c.CPU().Seconds() }},
	{metricdefs.GCIdleMarkCPU, func(c *gctrace.Cycle) float64 { return c.CPUIdle.Seconds() }},
	{metricdefs.GCCPUFraction, func(c *gctrace.Cycle) float64 { return float64(c.CPUPercent) / 100 }},
	{metricdefs.GCHeapStart, func(c *gctrace.Cycle) float64 { return float64(c.HeapStart) }},
	{metricdefs.GCHeapEnd, func(c *gctrace.Cycle) float64 { return float64(c.HeapEnd) }},
	{metricdefs.GCHeapLive, func(c *gctrace.Cycle) float64 { return float64(c.HeapLive) }},
	{metricdefs.GCHeapGoal, func(c *gctrace.Cycle) float64 { return float64(c.HeapGoal) }},
	{metricdefs.GCGOMAXPROCS, func(c *gctrace.Cycle) float64 { return float64(c.Procs) }},
}

// cycleVec is one cycle row's vector: bind gives a source's series, as the
// Add of a counter or the Set of a gauge.
type cycleVec struct {
	get  func(c *gctrace.Cycle) float64
	bind func(lv ...string) func(float64)
}

// cycleSeries is one cycle row's series of one source.
type cycleSeries struct {
	get func(c *gctrace.Cycle) float64
	set func(float64)
}

// Metrics holds the series of every source.
type Metrics struct {
	cycles, forced, parseErrors *prometheus.CounterVec
	pause                       *prometheus.HistogramVec
	last                        *prometheus.GaugeVec
	perCycle                    []cycleVec              // cycleRows' vectors
	all                         []*prometheus.MetricVec // every vector, for Delete

	// refs counts the live sources per label set: compose recreates a
	// container (new id, same name) before removing the old one, and the
	// old one's Delete must not drop the new one's series.
	mu   sync.Mutex
	refs map[[2]string]int
}

// New registers the gctrace series with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{refs: map[[2]string]int{}}
	counter := func(d *metricdefs.Def) *prometheus.CounterVec {
		v := d.NewCounterVec()
		reg.MustRegister(v)
		m.all = append(m.all, v.MetricVec)
		return v
	}
	gauge := func(d *metricdefs.Def) *prometheus.GaugeVec {
		v := d.NewGaugeVec()
		reg.MustRegister(v)
		m.all = append(m.all, v.MetricVec)
		return v
	}
	m.cycles = counter(metricdefs.GCCycles)
	m.forced = counter(metricdefs.GCForcedCycles)
	m.parseErrors = counter(metricdefs.GCTraceParseErrors)
	m.last = gauge(metricdefs.GCLastCycle)
	for _, r := range cycleRows {
		switch r.def.Type {
		case metricdefs.Counter:
			v := counter(r.def)
			m.perCycle = append(m.perCycle, cycleVec{r.get, func(lv ...string) func(float64) { return v.WithLabelValues(lv...).Add }})
		case metricdefs.Gauge:
			v := gauge(r.def)
			m.perCycle = append(m.perCycle, cycleVec{r.get, func(lv ...string) func(float64) { return v.WithLabelValues(lv...).Set }})
		default:
			panic("gcmetrics: a cycle row must be a counter or a gauge: " + r.def.Name)
		}
	}
	m.pause = metricdefs.GCPause.NewHistogramVec(prometheus.HistogramOpts{
		Buckets:                         PauseBuckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	})
	reg.MustRegister(m.pause)
	m.all = append(m.all, m.pause.MetricVec)
	return m
}

// Source is the gctrace of one container (or one process outside Docker).
// Its methods are not safe for concurrent use: one log follower owns it.
type Source struct {
	m          *Metrics
	lv         []string
	cycles     prometheus.Counter
	forced     prometheus.Counter
	parseErrs  prometheus.Counter
	pause      prometheus.Observer
	last       prometheus.Gauge
	perCycle   []cycleSeries
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
		parseErrs: m.parseErrors.WithLabelValues(lv...),
		pause:     m.pause.WithLabelValues(lv...),
		last:      m.last.WithLabelValues(lv...),
	}
	for _, v := range m.perCycle {
		s.perCycle = append(s.perCycle, cycleSeries{v.get, v.bind(lv...)})
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
	for _, v := range m.all {
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
	case gctrace.TornForced:
		// The mark of a cycle whose line was torn (so never ForcedMark):
		// counted on its own, the cycle itself by its number.
		s.forced.Inc()
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
	s.last.Set(float64(ts.UnixNano()) / 1e9)
	if err != nil {
		return
	}
	s.pause.Observe(c.Pause().Seconds())
	for _, p := range s.perCycle {
		p.set(p.get(c))
	}
}
