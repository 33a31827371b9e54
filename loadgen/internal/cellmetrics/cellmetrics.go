// Package cellmetrics owns the cell window series of docs/design-notes.md:
// when each cell was measured, at what load, and whether it failed. They make
// Prometheus the single source of truth for a run: the reporter finds every
// cell's window from these series alone.
package cellmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/cellid"
)

// LabelNames are the labels of every cell series; all are bounded by the plan.
var LabelNames = []string{"run", "cell", "proxy", "origin", "scenario", "tier", "repeat"}

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
}

// New registers the cell series on reg.
func New(reg prometheus.Registerer) *Metrics {
	g := func(name, help string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, LabelNames)
		reg.MustRegister(v)
		return v
	}
	return &Metrics{
		start: g("proxybench_cell_window_start_timestamp_seconds",
			"Unix time when the cell's measured traffic began (after warm-up). Set to the planned start when the cell begins and to the exact start when it ends."),
		end: g("proxybench_cell_window_end_timestamp_seconds",
			"Unix time of the cell's planned window end (start + duration), or when it was interrupted; present once the cell has ended. Requests completing after it are late."),
		concurrency: g("proxybench_cell_concurrency",
			"Connections (closed loop) or max in-flight requests (open loop) of the cell; peak target for concurrency stages."),
		rate: g("proxybench_cell_target_rate_requests_per_second",
			"Offered rate of the cell in open loop (the schedule's average over the window for rate stages); 0 = closed loop."),
		failed: g("proxybench_cell_failed",
			"1 when the cell failed, was aborted or skipped; 0 when it ran its full window."),
		drainEnd: g("proxybench_cell_drain_end_timestamp_seconds",
			"Unix time when the cell's last late request (in flight at the window end) completed; the window end when none was late. Present once the cell has ended."),
		proxyCPU: g("proxybench_cell_proxy_cpu_seconds",
			"CPU time the proxy container used over the cell's window: its cgroup CPU usage read at the window's two edges, end minus start. Absent when the cgroup could not be read."),
		loadgenCPU: g("proxybench_cell_loadgen_cpu_seconds",
			"CPU time (user + system) the loadgen process used over the cell's window, read at the window's two edges, end minus start."),
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
