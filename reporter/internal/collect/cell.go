package collect

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
	"proxybench/internal/stats"
	"proxybench/reporter/internal/report"
)

// Margins around a window for the loadgen's quiet traffic series (the
// timing guarantee, manifest.MarginBefore): counting over (start-1s,
// end+1.5s] is exact, where end is the later of the planned end and the
// drain of late requests.
const (
	MarginBefore = manifest.MarginBefore
	MarginAfter  = manifest.MarginAfter
)

// span is a window rendered for PromQL: range W ending at E, baseline at S.
type span struct{ S, E, W string }

func newSpan(from, to time.Time) span {
	return span{S: promapi.FormatTime(from), E: promapi.FormatTime(to), W: promapi.Duration(to.Sub(from))}
}

// counter is the exact increase of metric over sp, grouped by by. Series
// born inside the window have no sample before it, where anchored would
// take their first in-window sample as the baseline; their count is their
// last value inside the window (counters start at zero). Never an instant
// lookup there: it reaches back up to Prometheus's 5-minute lookback, to a
// previous repeat's cumulative value when nothing was scraped in the
// window. (The baseline of a series that existed before is anchored's
// last sample at or before S; Coverage checks that it is a fresh one.)
// Each scrape target (instance) is counted apart, then the targets are
// summed: the loadgen workers of a cell several ran (and a worker started
// again at a new address) each have series born inside the window or
// before it, and a native histogram sums exactly at one schema. The
// loadgen alone is one target: the sum of one.
func counter(metric, sel, by string, sp span) string {
	agg, on, outer := "sum by (instance)", "on(instance)", "sum"
	if by != "" {
		agg, on, outer = "sum by ("+by+", instance)", "on("+by+", instance)", "sum by ("+by+")"
	}
	return fmt.Sprintf(`%[8]s ((%[1]s (increase(%[2]s%[3]s[%[4]s] anchored @ %[5]s)) and %[7]s %[1]s (%[2]s%[3]s @ %[6]s)) or %[1]s (last_over_time(%[2]s%[3]s[%[4]s] @ %[5]s)))`,
		agg, metric, sel, sp.W, sp.E, sp.S, on, outer)
}

// nativeHist is the native histogram of metric accumulated over sp.
func nativeHist(metric, sel string, sp span) string { return "(" + counter(metric, sel, "", sp) + ")" }

// classicHist is the classic bucket set of metric accumulated over sp.
func classicHist(metric, sel string, sp span) string {
	return "(" + counter(metric+"_bucket", sel, "le", sp) + ")"
}

type batch struct{ parts []string }

// add names a single-series expression (or one grouped by a label kept in
// the result) so that one query answers many questions.
func (b *batch) add(name, expr string) {
	b.parts = append(b.parts, fmt.Sprintf(`label_replace(%s, "rk", %q, "", "")`, expr, name))
}

func (b *batch) expr() string { return strings.Join(b.parts, "\nor ") }

func quote(s string) string { return strconv.Quote(s) }

// Kinds says which histogram flavour each histogram metric has in this
// run, so that a cell query asks only for what exists.
type Kinds struct {
	LatencyNative, PauseNative bool
}

// Probe finds the histogram flavours present between from and to: a
// native histogram has the bare metric name, a classic one only _bucket.
func Probe(ctx context.Context, c *promapi.Client, from, to time.Time) (Kinds, error) {
	sp := newSpan(from, to)
	var b batch
	b.add("lat", fmt.Sprintf("count(last_over_time(%s[%s] @ %s))", metricdefs.RequestDuration.Name, sp.W, sp.E))
	b.add("gc", fmt.Sprintf("count(last_over_time(%s[%s] @ %s))", metricdefs.GCPause.Name, sp.W, sp.E))
	res, err := c.Query(ctx, b.expr(), to)
	if err != nil {
		return Kinds{}, fmt.Errorf("probe histograms: %w", err)
	}
	var k Kinds
	for _, s := range res {
		switch s.Labels["rk"] {
		case "lat":
			k.LatencyNative = s.Value > 0
		case "gc":
			k.PauseNative = s.Value > 0
		}
	}
	return k, nil
}

// Cell queries everything the report says about w. cov (Scrapes.Coverage)
// says whose numbers can be used: a target whose scrapes fall short around
// the window gives none (unknown), never a lookback value; the zero
// Coverage uses everything.
func Cell(ctx context.Context, c *promapi.Client, w Window, isGo bool, kinds Kinds, cov Coverage) (report.Cell, error) {
	cell := report.Cell{Key: w.Key,
		Start: w.Start, End: w.End, DurationS: report.Num(w.End.Sub(w.Start).Seconds()), Concurrency: w.Concurrency,
		TargetRateRPS: report.Num(w.TargetRate), Failed: w.Failed, Codes: map[string]int64{}, ErrorReasons: map[string]int64{}}
	q := &cellQuery{
		sel: fmt.Sprintf(`{proxy=%s,origin=%s,scenario=%s}`, quote(w.Proxy), quote(w.Origin), quote(w.Scenario)),
		svc: fmt.Sprintf(`{service=%s}`, quote(w.Svc())),
		// cAdvisor may add per-CPU series beside the total; count the total once.
		cpuSel:  fmt.Sprintf(`{service=%s,cpu=~"total|"}`, quote(w.Svc())),
		lg:      `{job="loadgen"}`,
		traffic: newSpan(cov.countFrom(w), w.TrafficEnd()),
		exact:   newSpan(w.Start, w.End),
		kinds:   kinds, isGo: isGo,
	}
	// In-flight is a gauge sampled once a second: a scrape in the first or
	// last second can catch the connections still dialling or draining, so
	// Little's law is checked on the steady part of windows long enough.
	q.steady = q.exact
	if w.End.Sub(w.Start) > 3*time.Second {
		q.steady = newSpan(w.Start.Add(time.Second), w.End.Add(-time.Second))
	}
	// A recreated container leaves its old cgroup's series behind for a
	// while under the same service: the one that burnt CPU in the window is
	// the proxy under test, and its id picks the matching memory series.
	q.cpuInc = fmt.Sprintf("increase(%s%s[%s] anchored @ %s)", metricdefs.ContainerCPUUsage.Name, q.cpuSel, q.exact.W, q.exact.E)

	var b batch
	for _, r := range cellRows {
		if e := r.query(q); e != "" {
			b.add(r.key, e)
		}
	}
	res, err := c.Query(ctx, b.expr(), w.TrafficEnd())
	if err != nil {
		return cell, fmt.Errorf("cell %s: %w", w.ID, err)
	}
	nan := report.NaN()
	cell.ProxyRes = report.Resources{CPUMeanCores: nan, CPUPeakCores: nan, MemMeanBytes: nan, MemPeakBytes: nan, MemSlopeMBPerMin: nan}
	cell.LoadgenCPU = report.LoadgenCPU{MeanCores: nan, PeakCores: nan, LimitCores: nan, LagP99Seconds: nan}
	cell.Missed, cell.Capped, cell.Queued, cell.InFlightMean = nan, nan, nan, nan
	if isGo {
		cell.GC = &report.GC{Cycles: nan, ForcedCycles: nan, CPUSeconds: nan, IdleMarkCPUSeconds: nan, LiveHeapMeanBytes: nan, LiveHeapSlope: nan,
			PauseP50: nan, PauseP99: nan, PauseMax: nan}
	}
	a := &cellAcc{cell: &cell, lateCodes: map[string]int64{}, lateReasons: map[string]int64{},
		lat:      report.Latency{P50: nan, P90: nan, P95: nan, P99: nan, P999: nan, Max: nan},
		latCount: nan, latSum: nan, inFlightSeconds: nan, cadvisorCPU: nan, loadgenCPU: nan, periods: nan, throttled: nan, runDelay: nan, pressure: nan, gomaxprocs: nan}
	for i := range a.hs {
		a.hs[i] = hsAcc{q: report.HandshakeLatency{P50: nan, P99: nan}, count: nan, sum: nan}
	}
	use := cov.uses()
	for _, s := range res {
		if r, ok := cellRowByKey[s.Labels["rk"]]; ok && use(r.from) {
			r.set(a, s)
		}
	}
	if a.lateSeen > 0 {
		cell.LateSource = report.LateFromPrometheus
	}
	cell.Late = SplitLate(cell.Codes, a.lateCodes) + SplitLate(cell.ErrorReasons, a.lateReasons)
	cell.LateCodes, cell.LateReasons = nonZero(a.lateCodes), nonZero(a.lateReasons)
	if !w.DrainEnd.IsZero() {
		de := w.DrainEnd
		cell.DrainEnd = &de
	}
	cell.ServerSide = a.seen > 0
	report.Classify(&cell)
	cell.Latency = a.latency(kinds)
	cell.Handshake, cell.HandshakeFull, cell.HandshakeResumed = a.handshake(hsAll), a.handshake(hsFull), a.handshake(hsResumed)

	d := float64(cell.DurationS)
	perSec := func(x report.Num) report.Num {
		if !x.Known() || d <= 0 {
			return report.NaN()
		}
		return x / report.Num(d)
	}
	// The mean in flight from the time the requests spent in flight, exact
	// over the window; the sampled gauge's average only for a loadgen that
	// does not count that time.
	if v := perSec(a.inFlightSeconds); v.Known() {
		cell.InFlightMean = v
	}
	proxyCPU, proxySrc := a.cadvisorCPU, report.ProxyCPUCAdvisor
	if w.ProxyCPUSeconds != nil {
		proxyCPU, proxySrc = report.Num(*w.ProxyCPUSeconds), report.ProxyCPUEdges
	}
	lgCPU, lgSrc := a.loadgenCPU, report.LoadgenCPUIncrease
	if w.LoadgenCPUSeconds != nil {
		lgCPU, lgSrc = report.Num(*w.LoadgenCPUSeconds), report.LoadgenCPUEdges
	}
	cell.LoadgenCPU.MeanCores = perSec(lgCPU)
	if lgCPU.Known() {
		cell.LoadgenCPU.Source = lgSrc
	}
	cell.LoadgenCPU.SetShares(a.periods, a.throttled, a.runDelay, a.pressure, cell.DurationS)
	if g := cell.GC; g != nil {
		g.CyclesPerS = perSec(g.Cycles)
		procs := a.gomaxprocs
		g.CPUPercent, g.ShareOfProxyCPU = report.NaN(), report.NaN()
		if g.CPUSeconds.Known() && procs.Known() && procs > 0 && d > 0 {
			g.CPUPercent = 100 * g.CPUSeconds / (procs * report.Num(d))
		}
	}
	cell.SetProxyCPU(proxyCPU, proxySrc)
	if err := timeSeries(ctx, c, &cell, q.svc, q.cpuSel, q.lg, isGo, cov.Interval, use); err != nil {
		return cell, fmt.Errorf("cell %s: %w", w.ID, err)
	}
	var g report.Gap
	if cov.Loadgen != nil && !cov.Loadgen.OK() && cov.LoadgenGap {
		g.Loadgen = cov.Loadgen
	}
	for _, wc := range cov.Workers {
		if !wc.Scrapes.OK() && wc.Gap {
			g.Workers = append(g.Workers, wc.Scrapes)
		}
	}
	if !cov.ExporterOK() && cov.ExporterGap {
		g.Exporter = cov.Exporter
	}
	if g.Loadgen != nil || g.Exporter != nil || len(g.Workers) > 0 {
		cell.PrometheusGap = &g
	}
	return cell, nil
}

// cellRowByKey finds a batch result's row.
var cellRowByKey = func() map[string]*cellRow {
	m := make(map[string]*cellRow, len(cellRows))
	for i := range cellRows {
		if _, dup := m[cellRows[i].key]; dup {
			panic("collect: two cell rows named " + cellRows[i].key)
		}
		m[cellRows[i].key] = &cellRows[i]
	}
	return m
}()

// uses says whether the numbers a target vouches for can be used.
func (c Coverage) uses() func(vouch) bool {
	lg, ex := c.LoadgenOK(), c.ExporterOK()
	return func(v vouch) bool {
		switch v {
		case byLoadgen:
			return lg
		case byExporter:
			return ex
		}
		return true
	}
}

// latency is the cell's latency from its rows: unknown without a count,
// quantiles and mean only when it counted something.
func (a *cellAcc) latency(kinds Kinds) report.Latency {
	nan := report.NaN()
	lat := report.Latency{Mean: nan, P50: nan, P90: nan, P95: nan, P99: nan, P999: nan, Max: nan}
	if !a.latCount.Known() {
		return lat
	}
	if a.latCount > 0 {
		lat = a.lat
		lat.Mean = a.latSum / a.latCount
	}
	lat.Source = "classic"
	if kinds.LatencyNative {
		lat.Source = "native"
	}
	lat.Count = int64(math.Round(float64(a.latCount)))
	return lat
}

// SplitLate removes the late completions from total (which counts every
// completion) in place, leaving the in-window counts, and returns how many
// were late. Keys left at zero are dropped.
func SplitLate(total, late map[string]int64) int64 {
	var n int64
	for k, l := range late {
		total[k] -= l
		n += l
	}
	for k, v := range total {
		if v == 0 {
			delete(total, k)
		}
	}
	return n
}

func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func orZero(n report.Num) report.Num {
	if !n.Known() {
		return 0
	}
	return n
}

// timeSeries fetches per-second CPU, memory and live heap over the window
// in one range query, for the peaks, the OLS slopes and the figures. A
// gauge at a step is its sample of that step: the last within 1.1 steps
// (or scrape intervals, when coarser; the 10 % absorb timestamp jitter),
// never one from before a hole in the scrapes, as a bare selector's
// 5-minute lookback would give. Series whose target use refuses (its
// scrapes fall short) are left out; a nil use takes every series.
func timeSeries(ctx context.Context, c *promapi.Client, cell *report.Cell, svc, cpuSel, lg string, isGo bool, interval time.Duration, use func(vouch) bool) error {
	d := cell.End.Sub(cell.Start)
	step := time.Second
	if n := d / step; n > 10000 {
		step = d / 10000
	}
	q := &seriesQuery{svc: svc, cpuSel: cpuSel, lg: lg, fresh: promapi.Duration(max(step, interval) * 11 / 10), isGo: isGo}
	var b batch
	for _, r := range seriesRows {
		if e := r.query(q); e != "" && (use == nil || use(r.from)) {
			b.add(r.key, e)
		}
	}
	cell.Instrument = report.Instrument{LoadgenRSSMeanBytes: report.NaN(), LoadgenRSSSlopeMBPerMin: report.NaN(),
		ExporterRSSMeanBytes: report.NaN(), ExporterRSSSlopeMBPerMin: report.NaN()}
	if len(b.parts) == 0 {
		return nil
	}
	start := cell.Start.Add(step).Truncate(time.Millisecond)
	if start.After(cell.End) {
		start = cell.End
	}
	res, err := c.QueryRange(ctx, b.expr(), start, cell.End, step)
	if err != nil {
		return err
	}
	byName := map[string]promapi.Series{}
	for _, s := range res {
		byName[s.Labels["rk"]] = s
	}
	for _, r := range seriesRows {
		s, ok := byName[r.key]
		if !ok || len(s.Values) == 0 {
			continue
		}
		secs := make([]float64, len(s.Times))
		for i, t := range s.Times {
			secs[i] = t.Sub(cell.Start).Seconds()
		}
		r.set(cell, s, secs)
	}
	// The figures align series on T; drop any that do not share its length.
	for _, p := range []*[]float64{&cell.Series.CPU, &cell.Series.MemMB, &cell.Series.HeapMB} {
		if len(*p) != len(cell.Series.T) {
			*p = nil
		}
	}
	return nil
}

func slopePerMin(x, y []float64) report.Num {
	s := stats.Slope(x, y)
	if math.IsNaN(s) {
		return report.NaN()
	}
	return report.Num(s * 60)
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		if x > m {
			m = x
		}
	}
	return m
}

func scale(xs []float64, f float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * f
	}
	return out
}

// round keeps report.json small and stable.
func round(xs []float64, digits int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i], _ = strconv.ParseFloat(strconv.FormatFloat(x, 'f', digits, 64), 64)
	}
	return out
}
