// Package cellmetrics owns publishing the cell window series (rows of
// internal/metricdefs): when each cell was measured, at what load, and
// whether it failed. They make Prometheus the single source of truth for a
// run: the reporter finds every cell's window from these series alone.
package cellmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/cellid"
	"proxybench/internal/metricdefs"
)

// LabelNames are the labels of every cell series; all are bounded by the plan.
var LabelNames = metricdefs.CellLabels

// Cell names one cell's series.
type Cell struct {
	Run string
	cellid.Key
}

func (c Cell) values() []string { return append([]string{c.Run}, c.LabelValues()...) }

// Metrics are the cell window gauges.
type Metrics struct {
	start, end, concurrency, rate, failed *prometheus.GaugeVec
	drainEnd, proxyCPU, loadgenCPU        *prometheus.GaugeVec
	workers                               *prometheus.GaugeVec
}

// New registers the cell series on reg.
func New(reg prometheus.Registerer) *Metrics {
	g := func(d *metricdefs.Def) *prometheus.GaugeVec {
		v := d.NewGaugeVec()
		reg.MustRegister(v)
		return v
	}
	return &Metrics{
		start:       g(metricdefs.CellWindowStart),
		end:         g(metricdefs.CellWindowEnd),
		concurrency: g(metricdefs.CellConcurrency),
		rate:        g(metricdefs.CellTargetRate),
		failed:      g(metricdefs.CellFailed),
		drainEnd:    g(metricdefs.CellDrainEnd),
		proxyCPU:    g(metricdefs.CellProxyCPU),
		loadgenCPU:  g(metricdefs.CellLoadgenCPU),
		workers:     g(metricdefs.CellLoadgenWorkers),
	}
}

// Begin publishes a starting cell: its planned window start and its load.
func (m *Metrics) Begin(c Cell, plannedStart time.Time, concurrency int, rate float64) {
	v := c.values()
	m.start.WithLabelValues(v...).Set(seconds(plannedStart))
	m.concurrency.WithLabelValues(v...).Set(float64(concurrency))
	m.rate.WithLabelValues(v...).Set(rate)
	m.failed.WithLabelValues(v...).Set(0)
}

// End publishes the exact window of a finished (or aborted) cell.
func (m *Metrics) End(c Cell, start, end time.Time, failed bool) {
	v := c.values()
	m.start.WithLabelValues(v...).Set(seconds(start))
	m.end.WithLabelValues(v...).Set(seconds(end))
	m.failed.WithLabelValues(v...).Set(b2f(failed))
}

// Usage is what an ended cell's window cost, read at its edges.
type Usage struct {
	DrainEnd          time.Time // when the last late request completed; zero = the window end
	ProxyCPUSeconds   *float64  // nil: not read (no local container)
	LoadgenCPUSeconds *float64  // nil: not read
	// Workers is how many loadgen workers sent the cell's load (package
	// fleet); 0: the loadgen alone, and nothing is published.
	Workers int
}

// Used publishes an ended cell's drain end and CPU use next to its window;
// windowEnd is the End given to End.
func (m *Metrics) Used(c Cell, windowEnd time.Time, u Usage) {
	v := c.values()
	if u.DrainEnd.IsZero() || u.DrainEnd.Before(windowEnd) {
		u.DrainEnd = windowEnd
	}
	m.drainEnd.WithLabelValues(v...).Set(seconds(u.DrainEnd))
	if u.ProxyCPUSeconds != nil {
		m.proxyCPU.WithLabelValues(v...).Set(*u.ProxyCPUSeconds)
	}
	if u.LoadgenCPUSeconds != nil {
		m.loadgenCPU.WithLabelValues(v...).Set(*u.LoadgenCPUSeconds)
	}
	if u.Workers > 0 {
		m.workers.WithLabelValues(v...).Set(float64(u.Workers))
	}
}

// Skipped marks a cell that never sent traffic: no window, failed 1.
func (m *Metrics) Skipped(c Cell) { m.failed.WithLabelValues(c.values()...).Set(1) }

// seconds keeps whole seconds exact (float64(UnixNano)/1e9 would not).
func seconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
