package collect

import (
	"fmt"
	"math"
	"strings"

	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
	"proxybench/internal/stats"
	"proxybench/reporter/internal/report"
)

// vouch is whose scrape coverage (Coverage) a number rests on: a target
// whose scrapes fall short around the window gives none of its numbers.
type vouch uint8

const (
	byLoadgen  vouch = iota // the loadgen's traffic, gauges and process series
	byExporter              // the exporter's cAdvisor and gctrace series
	byNone                  // counts the scrapes themselves: always used
)

// cellQuery is what the rows' queries of one cell are built from.
type cellQuery struct {
	sel, svc, cpuSel, lg   string // traffic, proxy service, proxy CPU total, loadgen job selectors
	traffic, exact, steady span   // the counting span, the window, its steady part
	cpuInc                 string // the proxy containers' CPU increase over the window
	kinds                  Kinds
	isGo                   bool
}

// cellAcc is the cell being built and the raw numbers its derived fields
// are computed from once every row has its value.
type cellAcc struct {
	cell                    *report.Cell
	seen, lateSeen          int // traffic series seen, even when they counted nothing
	lateCodes, lateReasons  map[string]int64
	lat                     report.Latency // the quantiles
	latCount, latSum        report.Num
	inFlightSeconds         report.Num // the requests' time in flight over the window (Little's L x duration)
	cadvisorCPU, loadgenCPU report.Num // CPU seconds over the window
	periods, throttled      report.Num // the loadgen cgroup's CFS periods
	runDelay, pressure      report.Num
	gomaxprocs              report.Num
	hs                      [len(handshakeKinds)]hsAcc // TLS handshake latency by kind (handshakeRows)
}

// hsAcc is one kind of TLS handshake's latency as its rows fill it.
type hsAcc struct {
	q          report.HandshakeLatency // the quantiles
	count, sum report.Num
}

// handshakeKinds are the kinds of completed TLS handshakes the report
// gives the latency of: every one (hsAll), the full ones (hsFull) and the
// resumed ones (hsResumed), as the histogram's resumed label splits them
// ("" = both).
var handshakeKinds = [...]struct{ prefix, resumed string }{{"hs_", ""}, {"hsf_", "false"}, {"hsr_", "true"}}

// Indexes of handshakeKinds.
const (
	hsAll = iota
	hsFull
	hsResumed
)

// cellRow is one number the report says about a cell: its key in the
// batch, whose coverage vouches for it, its query ("" = not asked for this
// cell) and where its value goes.
type cellRow struct {
	key   string
	from  vouch
	query func(q *cellQuery) string
	set   func(a *cellAcc, s promapi.Sample)
}

// toNum is a value as the report holds it: NaN unknown.
func toNum(x float64) report.Num {
	if math.IsNaN(x) {
		return report.NaN()
	}
	return report.Num(x)
}

// into stores the value in the field f picks.
func into(f func(a *cellAcc) *report.Num) func(*cellAcc, promapi.Sample) {
	return func(a *cellAcc, s promapi.Sample) { *f(a) = toNum(s.Value) }
}

// whole stores the value rounded to a count, unknown as 0.
func whole(f func(a *cellAcc) *int64) func(*cellAcc, promapi.Sample) {
	return func(a *cellAcc, s promapi.Sample) { *f(a) = int64(math.Round(float64(orZero(toNum(s.Value))))) }
}

// byLabel counts a series grouped by label into the map f picks.
func byLabel(label string, late bool, f func(a *cellAcc) map[string]int64) func(*cellAcc, promapi.Sample) {
	return func(a *cellAcc, s promapi.Sample) {
		f(a)[s.Labels[label]] = int64(math.Round(s.Value))
		if late {
			a.lateSeen++
		} else {
			a.seen++
		}
	}
}

// traffic is an exact count of a loadgen counter over the counting span.
func traffic(d *metricdefs.Def, by string) func(q *cellQuery) string {
	return func(q *cellQuery) string { return counter(d.Name, q.sel, by, q.traffic) }
}

// increase is the anchored increase of metric over the window, summed.
func increase(d *metricdefs.Def, sel func(q *cellQuery) string, gc bool) func(q *cellQuery) string {
	return func(q *cellQuery) string {
		if gc && !q.isGo {
			return ""
		}
		return fmt.Sprintf("sum(increase(%s%s[%s] anchored @ %s))", d.Name, sel(q), q.exact.W, q.exact.E)
	}
}

// overWindow applies an _over_time function to metric over the window,
// aggregated by agg; only for Go proxies when gc.
func overWindow(agg, fn string, d *metricdefs.Def, gc bool) func(q *cellQuery) string {
	return func(q *cellQuery) string {
		if gc && !q.isGo {
			return ""
		}
		return fmt.Sprintf("%s(%s(%s%s[%s] @ %s))", agg, fn, d.Name, q.svc, q.exact.W, q.exact.E)
	}
}

func lgSel(q *cellQuery) string  { return q.lg }
func svcSel(q *cellQuery) string { return q.svc }

// quantile is one reported quantile of a histogram: its name in the key,
// the quantile and where its value goes.
type quantile struct {
	name, q string
	f       func(a *cellAcc) *report.Num
}

// quantileRows are a row per quantile of the histogram hist gives for a
// cell ("" = not asked).
func quantileRows(prefix string, from vouch, hist func(q *cellQuery) string, qs ...quantile) []cellRow {
	rows := make([]cellRow, 0, len(qs))
	for _, x := range qs {
		rows = append(rows, cellRow{prefix + x.name, from, func(q *cellQuery) string {
			h := hist(q)
			if h == "" {
				return ""
			}
			return "histogram_quantile(" + x.q + ", " + h + ")"
		}, into(x.f)})
	}
	return rows
}

// loadgenHist is the loadgen histogram d accumulated over the counting
// span: native or classic, whichever the run has (Kinds; the loadgen's
// histograms share their flavour).
func loadgenHist(d *metricdefs.Def) func(q *cellQuery) string {
	return func(q *cellQuery) string {
		if q.kinds.LatencyNative {
			return nativeHist(d.Name, q.sel, q.traffic)
		}
		return classicHist(d.Name, q.sel, q.traffic)
	}
}

// latencyHist is the request latency histogram; handshakeHist the TLS
// handshakes'.
var (
	latencyHist   = loadgenHist(metricdefs.RequestDuration)
	handshakeHist = loadgenHist(metricdefs.TLSHandshakeDuration)
)

// latencyRows are the latency quantiles, count and sum.
func latencyRows() []cellRow {
	return histRows("lat_", metricdefs.RequestDuration, latencyHist,
		func(a *cellAcc) *report.Num { return &a.latCount }, func(a *cellAcc) *report.Num { return &a.latSum },
		quantile{"p50", "0.5", func(a *cellAcc) *report.Num { return &a.lat.P50 }},
		quantile{"p90", "0.9", func(a *cellAcc) *report.Num { return &a.lat.P90 }},
		quantile{"p95", "0.95", func(a *cellAcc) *report.Num { return &a.lat.P95 }},
		quantile{"p99", "0.99", func(a *cellAcc) *report.Num { return &a.lat.P99 }},
		quantile{"p999", "0.999", func(a *cellAcc) *report.Num { return &a.lat.P999 }},
		quantile{"max", "1", func(a *cellAcc) *report.Num { return &a.lat.Max }})
}

// histRows are the quantiles, count and sum of a loadgen histogram d
// (hist accumulates it over the counting span, in the run's flavour).
func histRows(prefix string, d *metricdefs.Def, hist func(q *cellQuery) string, count, sum func(a *cellAcc) *report.Num, qs ...quantile) []cellRow {
	rows := quantileRows(prefix, byLoadgen, hist, qs...)
	return append(rows,
		cellRow{prefix + "count", byLoadgen, func(q *cellQuery) string {
			if q.kinds.LatencyNative {
				return "histogram_count(" + hist(q) + ")"
			}
			return counter(d.Count(), q.sel, "", q.traffic)
		}, into(count)},
		cellRow{prefix + "sum", byLoadgen, func(q *cellQuery) string {
			if q.kinds.LatencyNative {
				return "histogram_sum(" + hist(q) + ")"
			}
			return counter(d.Sum(), q.sel, "", q.traffic)
		}, into(sum)})
}

// handshakeRows are the TLS handshakes' latency quantiles, count and sum
// of each of handshakeKinds: no series (an h1 cell) leaves them unknown.
func handshakeRows() []cellRow {
	var rows []cellRow
	for i, k := range handshakeKinds {
		acc := func(a *cellAcc) *hsAcc { return &a.hs[i] }
		kr := histRows(k.prefix, metricdefs.TLSHandshakeDuration, handshakeHist,
			func(a *cellAcc) *report.Num { return &acc(a).count }, func(a *cellAcc) *report.Num { return &acc(a).sum },
			quantile{"p50", "0.5", func(a *cellAcc) *report.Num { return &acc(a).q.P50 }},
			quantile{"p99", "0.99", func(a *cellAcc) *report.Num { return &acc(a).q.P99 }})
		if k.resumed != "" {
			for j := range kr {
				kr[j].query = withLabel(kr[j].query, "resumed", k.resumed)
			}
		}
		rows = append(rows, kr...)
	}
	return rows
}

// withLabel is query with the cell's traffic selector narrowed to
// label=value.
func withLabel(query func(q *cellQuery) string, label, value string) func(q *cellQuery) string {
	return func(q *cellQuery) string {
		n := *q
		n.sel = strings.TrimSuffix(q.sel, "}") + "," + label + "=" + quote(value) + "}"
		return query(&n)
	}
}

// handshake is the cell's latency of the handshakes of kind k
// (handshakeKinds) from its rows; nil when none was counted.
func (a *cellAcc) handshake(k int) *report.HandshakeLatency {
	acc := &a.hs[k]
	if !acc.count.Known() || acc.count <= 0 {
		return nil
	}
	h := acc.q
	h.Count = int64(math.Round(float64(acc.count)))
	h.Mean = report.NaN()
	if acc.sum.Known() {
		h.Mean = acc.sum / acc.count
	}
	return &h
}

// pauseHist is a Go proxy's GC pause histogram accumulated over the window,
// native or classic; "" for other proxies.
func pauseHist(q *cellQuery) string {
	switch {
	case !q.isGo:
		return ""
	case q.kinds.PauseNative:
		return fmt.Sprintf("sum(increase(%s%s[%s] anchored @ %s))", metricdefs.GCPause.Name, q.svc, q.exact.W, q.exact.E)
	}
	return fmt.Sprintf("sum by (le) (increase(%s%s[%s] anchored @ %s))", metricdefs.GCPause.Bucket(), q.svc, q.exact.W, q.exact.E)
}

// pauseRows are the GC pause quantiles of a Go proxy.
func pauseRows() []cellRow {
	return quantileRows("gcp_", byExporter, pauseHist,
		quantile{"p50", "0.5", func(a *cellAcc) *report.Num { return &a.cell.GC.PauseP50 }},
		quantile{"p99", "0.99", func(a *cellAcc) *report.Num { return &a.cell.GC.PauseP99 }},
		quantile{"max", "1", func(a *cellAcc) *report.Num { return &a.cell.GC.PauseMax }})
}

// cellRows are every number Cell asks Prometheus for, in query order.
var cellRows = func() []cellRow {
	cell := func(f func(c *report.Cell) *report.Num) func(*cellAcc, promapi.Sample) {
		return into(func(a *cellAcc) *report.Num { return f(a.cell) })
	}
	gc := func(f func(g *report.GC) *report.Num) func(*cellAcc, promapi.Sample) {
		return into(func(a *cellAcc) *report.Num { return f(a.cell.GC) })
	}
	rows := []cellRow{
		// Totals count every completion, late ones too; in-window = total - late.
		{"code", byLoadgen, traffic(metricdefs.Requests, "code"), byLabel("code", false, func(a *cellAcc) map[string]int64 { return a.cell.Codes })},
		{"reason", byLoadgen, traffic(metricdefs.RequestErrors, "reason"), byLabel("reason", false, func(a *cellAcc) map[string]int64 { return a.cell.ErrorReasons })},
		{"late_code", byLoadgen, traffic(metricdefs.RequestsLate, "code"), byLabel("code", true, func(a *cellAcc) map[string]int64 { return a.lateCodes })},
		{"late_reason", byLoadgen, traffic(metricdefs.RequestErrorsLate, "reason"), byLabel("reason", true, func(a *cellAcc) map[string]int64 { return a.lateReasons })},
		{"missed", byLoadgen, traffic(metricdefs.OpenLoopMissed, ""), cell(func(c *report.Cell) *report.Num { return &c.Missed })},
		{"capped", byLoadgen, traffic(metricdefs.OpenLoopCapped, ""), cell(func(c *report.Cell) *report.Num { return &c.Capped })},
		{"queued", byLoadgen, traffic(metricdefs.OpenLoopQueued, ""), cell(func(c *report.Cell) *report.Num { return &c.Queued })},
	}
	rows = append(rows, latencyRows()...)
	rows = append(rows, handshakeRows()...)
	rows = append(rows, []cellRow{
		// The lag histogram has the latency histogram's flavour (same loadgen).
		{"lag_p99", byLoadgen, func(q *cellQuery) string {
			hist := classicHist
			if q.kinds.LatencyNative {
				hist = nativeHist
			}
			return "histogram_quantile(0.99, " + hist(metricdefs.OpenLoopLag.Name, q.sel, q.traffic) + ")"
		}, cell(func(c *report.Cell) *report.Num { return &c.LoadgenCPU.LagP99Seconds })},
		{"wrong", byLoadgen, traffic(metricdefs.WrongOrigin, ""), whole(func(a *cellAcc) *int64 { return &a.cell.WrongOrigin })},
		{"sched", byLoadgen, traffic(metricdefs.OpenLoopScheduled, ""), whole(func(a *cellAcc) *int64 { return &a.cell.Scheduled })},
		{"sent", byLoadgen, traffic(metricdefs.OpenLoopSent, ""), whole(func(a *cellAcc) *int64 { return &a.cell.Sent })},
		{"inflight", byLoadgen, func(q *cellQuery) string {
			return fmt.Sprintf("sum(avg_over_time(%s%s[%s] @ %s))", metricdefs.RequestsInFlight.Name, q.sel, q.steady.W, q.steady.E)
		}, cell(func(c *report.Cell) *report.Num { return &c.InFlightMean })},
		{"inflight_seconds", byLoadgen, traffic(metricdefs.RequestsInFlightSeconds, ""), into(func(a *cellAcc) *report.Num { return &a.inFlightSeconds })},
		{"scrapes", byNone, func(q *cellQuery) string {
			return fmt.Sprintf("max(count_over_time(%s%s[%s] @ %s))", metricdefs.Requests.Name, q.sel, q.exact.W, q.exact.E)
		}, func(a *cellAcc, s promapi.Sample) { a.cell.Scrapes = int(orZero(toNum(s.Value))) }},
		{"cpu", byExporter, func(q *cellQuery) string { return "max(" + q.cpuInc + ")" }, into(func(a *cellAcc) *report.Num { return &a.cadvisorCPU })},
		{"mem_mean", byExporter, func(q *cellQuery) string {
			return fmt.Sprintf("sum(avg_over_time(%s%s[%s] @ %s) and on(id) topk(1, %s))", metricdefs.ContainerMemoryWorkingSet.Name, q.svc, q.exact.W, q.exact.E, q.cpuInc)
		}, cell(func(c *report.Cell) *report.Num { return &c.ProxyRes.MemMeanBytes })},
		{"mem_peak", byExporter, func(q *cellQuery) string {
			return fmt.Sprintf("max(max_over_time(%s%s[%s] @ %s) and on(id) topk(1, %s))", metricdefs.ContainerMemoryWorkingSet.Name, q.svc, q.exact.W, q.exact.E, q.cpuInc)
		}, cell(func(c *report.Cell) *report.Num { return &c.ProxyRes.MemPeakBytes })},
		{"lg_cpu", byLoadgen, increase(metricdefs.ProcessCPU, lgSel, false), into(func(a *cellAcc) *report.Num { return &a.loadgenCPU })},
		{"lg_limit", byLoadgen, func(q *cellQuery) string {
			return fmt.Sprintf("max(last_over_time(%s[%s] @ %s))", metricdefs.LoadgenCPULimit.Name, q.traffic.W, q.traffic.E)
		}, cell(func(c *report.Cell) *report.Num { return &c.LoadgenCPU.LimitCores })},
		{"lg_periods", byLoadgen, increase(metricdefs.LoadgenCPUPeriods, lgSel, false), into(func(a *cellAcc) *report.Num { return &a.periods })},
		{"lg_throttled", byLoadgen, increase(metricdefs.LoadgenCPUThrottledPeriods, lgSel, false), into(func(a *cellAcc) *report.Num { return &a.throttled })},
		{"lg_run_delay", byLoadgen, increase(metricdefs.LoadgenRunDelay, lgSel, false), into(func(a *cellAcc) *report.Num { return &a.runDelay })},
		// Only the loadgen's own cgroup's pressure says something about the
		// loadgen; the host's (scope="host") rises with any busy task.
		{"lg_pressure", byLoadgen, increase(metricdefs.LoadgenCPUPressure, func(*cellQuery) string { return `{job="loadgen",scope="cgroup"}` }, false),
			into(func(a *cellAcc) *report.Num { return &a.pressure })},
		{"gc_cycles", byExporter, increase(metricdefs.GCCycles, svcSel, true), gc(func(g *report.GC) *report.Num { return &g.Cycles })},
		{"gc_forced", byExporter, increase(metricdefs.GCForcedCycles, svcSel, true), gc(func(g *report.GC) *report.Num { return &g.ForcedCycles })},
		{"gc_cpu", byExporter, increase(metricdefs.GCCPU, svcSel, true), gc(func(g *report.GC) *report.Num { return &g.CPUSeconds })},
		{"gc_idle_cpu", byExporter, increase(metricdefs.GCIdleMarkCPU, svcSel, true), gc(func(g *report.GC) *report.Num { return &g.IdleMarkCPUSeconds })},
		{"gomaxprocs", byExporter, overWindow("max", "last_over_time", metricdefs.GCGOMAXPROCS, true), into(func(a *cellAcc) *report.Num { return &a.gomaxprocs })},
		{"heap_mean", byExporter, overWindow("sum", "avg_over_time", metricdefs.GCHeapLive, true), gc(func(g *report.GC) *report.Num { return &g.LiveHeapMeanBytes })},
	}...)
	return append(rows, pauseRows()...)
}()

// seriesQuery is what the rows' range queries of one cell are built from.
type seriesQuery struct {
	svc, cpuSel, lg string
	fresh           string // how old a gauge's sample may be at a step
	isGo            bool
}

// seriesRow is one per-second series over a cell's window: its key, whose
// coverage vouches for it, its range query ("" = not asked) and what it
// gives the cell (called only with points).
type seriesRow struct {
	key   string
	from  vouch
	query func(q *seriesQuery) string
	set   func(c *report.Cell, s promapi.Series, secs []float64)
}

func cpuRate(q *seriesQuery) string {
	return fmt.Sprintf("irate(%s%s[3s])", metricdefs.ContainerCPUUsage.Name, q.cpuSel)
}

// seriesRows are timeSeries' queries, in the order their values are set:
// the proxy's CPU gives the figures their time axis, else its memory.
var seriesRows = []seriesRow{
	{"cpu", byExporter, func(q *seriesQuery) string { return "max(" + cpuRate(q) + ")" }, func(c *report.Cell, s promapi.Series, secs []float64) {
		c.ProxyRes.CPUPeakCores = report.Num(maxOf(s.Values))
		c.Series.T = secs
		c.Series.CPU = round(s.Values, 4)
	}},
	{"mem", byExporter, func(q *seriesQuery) string {
		return fmt.Sprintf("sum(last_over_time(%s%s[%s]) and on(id) topk(1, %s))", metricdefs.ContainerMemoryWorkingSet.Name, q.svc, q.fresh, cpuRate(q))
	}, func(c *report.Cell, s promapi.Series, secs []float64) {
		mb := scale(s.Values, 1/1e6)
		c.ProxyRes.MemSlopeMBPerMin = slopePerMin(secs, mb)
		c.Series.MemMB = round(mb, 3)
		if c.Series.T == nil {
			c.Series.T = secs
		}
	}},
	{"lg", byLoadgen, func(q *seriesQuery) string {
		return fmt.Sprintf("sum(irate(%s%s[3s]))", metricdefs.ProcessCPU.Name, q.lg)
	}, func(c *report.Cell, s promapi.Series, _ []float64) {
		c.LoadgenCPU.PeakCores = report.Num(maxOf(s.Values))
	}},
	{"lg_rss", byLoadgen, func(q *seriesQuery) string {
		return fmt.Sprintf("sum(last_over_time(%s%s[%s]))", metricdefs.ProcessResidentMemory.Name, q.lg, q.fresh)
	}, func(c *report.Cell, s promapi.Series, secs []float64) {
		c.Instrument.LoadgenRSSMeanBytes = report.Num(stats.Mean(s.Values))
		c.Instrument.LoadgenRSSSlopeMBPerMin = slopePerMin(secs, scale(s.Values, 1/1e6))
	}},
	{"exp_rss", byExporter, func(q *seriesQuery) string {
		return fmt.Sprintf(`sum(last_over_time(%s{job="exporter"}[%s]))`, metricdefs.ProcessResidentMemory.Name, q.fresh)
	}, func(c *report.Cell, s promapi.Series, secs []float64) {
		c.Instrument.ExporterRSSMeanBytes = report.Num(stats.Mean(s.Values))
		c.Instrument.ExporterRSSSlopeMBPerMin = slopePerMin(secs, scale(s.Values, 1/1e6))
	}},
	{"heap", byExporter, func(q *seriesQuery) string {
		if !q.isGo {
			return ""
		}
		return fmt.Sprintf("sum(last_over_time(%s%s[%s]))", metricdefs.GCHeapLive.Name, q.svc, q.fresh)
	}, func(c *report.Cell, s promapi.Series, secs []float64) {
		if c.GC == nil {
			return
		}
		mb := scale(s.Values, 1/1e6)
		c.GC.LiveHeapSlope = slopePerMin(secs, mb)
		c.Series.HeapMB = round(mb, 3)
	}},
}
