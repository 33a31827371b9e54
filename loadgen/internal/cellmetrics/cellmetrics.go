// Package cellmetrics owns the cell window series of docs/design-notes.md:
// when each cell was measured, at what load, and whether it failed. They make
// Prometheus the single source of truth for a run: the reporter finds every
// cell's window from these series alone.
package cellmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LabelNames are the labels of every cell series; all are bounded by the plan.
var LabelNames = []string{"run", "cell", "proxy", "origin", "scenario", "tier", "repeat"}

// Cell names one cell's series.
type Cell struct {
	Run, ID, Proxy, Origin, Scenario, Tier, Repeat string
}

func (c Cell) values() []string {
	return []string{c.Run, c.ID, c.Proxy, c.Origin, c.Scenario, c.Tier, c.Repeat}
}

// Metrics are the cell window gauges.
type Metrics struct {
	start, end, concurrency, rate, failed *prometheus.GaugeVec
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
			"Unix time when the cell's last measured request completed; present once the cell has ended."),
		concurrency: g("proxybench_cell_concurrency",
			"Connections (closed loop) or max in-flight requests (open loop) of the cell; peak target for concurrency stages."),
		rate: g("proxybench_cell_target_rate_requests_per_second",
			"Offered rate of the cell in open loop (peak target for rate stages); 0 = closed loop."),
		failed: g("proxybench_cell_failed",
			"1 when the cell failed, was aborted or skipped; 0 when it ran its full window."),
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
