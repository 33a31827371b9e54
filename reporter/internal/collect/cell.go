package collect

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"proxybench/reporter/internal/promapi"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/stats"
)

// Margins around a window for the loadgen's quiet traffic series (design
// notes, timing guarantee): counting over (start-1s, end+1.5s] is exact,
// where end is the later of the planned end and the drain of late requests.
const (
	MarginBefore = time.Second
	MarginAfter  = 1500 * time.Millisecond
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
func counter(metric, sel, by string, sp span) string {
	agg, on := "sum", "on()"
	if by != "" {
		agg, on = "sum by ("+by+")", "on("+by+")"
	}
	return fmt.Sprintf(`(%[1]s (increase(%[2]s%[3]s[%[4]s] anchored @ %[5]s)) and %[7]s %[1]s (%[2]s%[3]s @ %[6]s)) or %[1]s (last_over_time(%[2]s%[3]s[%[4]s] @ %[5]s))`,
		agg, metric, sel, sp.W, sp.E, sp.S, on)
}

// nativeHist is the native histogram of metric accumulated over sp.
func nativeHist(metric, sel string, sp span) string { return "(" + counter(metric, sel, "", sp) + ")" }

// classicHist is the classic bucket set of metric accumulated over sp.
func classicHist(metric, sel string, sp span) string {
	return "(" + counter(metric+"_bucket", sel, "le", sp) + ")"
}

// Quantiles reported for latency, by report field.
var quantiles = []struct {
	name string
	q    string
}{{"p50", "0.5"}, {"p90", "0.9"}, {"p95", "0.95"}, {"p99", "0.99"}, {"p999", "0.999"}, {"max", "1"}}

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
	b.add("lat", fmt.Sprintf("count(last_over_time(proxybench_request_duration_seconds[%s] @ %s))", sp.W, sp.E))
	b.add("gc", fmt.Sprintf("count(last_over_time(proxybench_gc_pause_seconds[%s] @ %s))", sp.W, sp.E))
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

// What each target's coverage vouches for: the batch keys (exact, or a
// prefix ending in "_") and the time-series names of Cell's queries.
var (
	loadgenKeys    = []string{"code", "reason", "late_code", "late_reason", "missed", "capped", "lat_", "lag_p99", "wrong", "sched", "sent", "inflight", "lg_"}
	exporterKeys   = []string{"cpu", "mem_", "gc_", "gomaxprocs", "heap_", "gcp_"}
	loadgenSeries  = []string{"lg", "lg_rss"}
	exporterSeries = []string{"cpu", "mem", "heap", "exp_rss"}
)

func hasKey(keys []string, k string) bool {
	for _, p := range keys {
		if k == p || strings.HasSuffix(p, "_") && strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// Cell queries everything the report says about w. cov (Scrapes.Coverage)
// says whose numbers can be used: a target whose scrapes fall short around
// the window gives none (unknown), never a lookback value; the zero
// Coverage uses everything.
func Cell(ctx context.Context, c *promapi.Client, w Window, isGo bool, kinds Kinds, cov Coverage) (report.Cell, error) {
	cell := report.Cell{Key: w.Key,
		Start: w.Start, End: w.End, DurationS: report.Num(w.End.Sub(w.Start).Seconds()), Concurrency: w.Concurrency,
		TargetRateRPS: report.Num(w.TargetRate), Failed: w.Failed, Codes: map[string]int64{}, ErrorReasons: map[string]int64{}}
	traffic := newSpan(w.Start.Add(-MarginBefore), w.TrafficEnd())
	exact := newSpan(w.Start, w.End)
	sel := fmt.Sprintf(`{proxy=%s,origin=%s,scenario=%s}`, quote(w.Proxy), quote(w.Origin), quote(w.Scenario))
	svc := fmt.Sprintf(`{service=%s}`, quote(w.Proxy))
	// cAdvisor may add per-CPU series beside the total; count the total once.
	cpuSel := fmt.Sprintf(`{service=%s,cpu=~"total|"}`, quote(w.Proxy))
	lg := `{job="loadgen"}`

	var b batch
	// Totals count every completion, late ones too; in-window = total - late.
	b.add("code", counter("proxybench_requests_total", sel, "code", traffic))
	b.add("reason", counter("proxybench_request_errors_total", sel, "reason", traffic))
	b.add("late_code", counter("proxybench_requests_late_total", sel, "code", traffic))
	b.add("late_reason", counter("proxybench_request_errors_late_total", sel, "reason", traffic))
	b.add("missed", counter("proxybench_open_loop_missed_total", sel, "", traffic))
	b.add("capped", counter("proxybench_open_loop_capped_total", sel, "", traffic))
	// The lag histogram has the latency histogram's flavour (same loadgen).
	hist := classicHist
	if kinds.LatencyNative {
		hist = nativeHist
		nh := nativeHist("proxybench_request_duration_seconds", sel, traffic)
		for _, q := range quantiles {
			b.add("lat_n_"+q.name, "histogram_quantile("+q.q+", "+nh+")")
		}
		b.add("lat_n_count", "histogram_count("+nh+")")
		b.add("lat_n_sum", "histogram_sum("+nh+")")
	} else {
		ch := classicHist("proxybench_request_duration_seconds", sel, traffic)
		for _, q := range quantiles {
			b.add("lat_c_"+q.name, "histogram_quantile("+q.q+", "+ch+")")
		}
		b.add("lat_c_count", counter("proxybench_request_duration_seconds_count", sel, "", traffic))
		b.add("lat_c_sum", counter("proxybench_request_duration_seconds_sum", sel, "", traffic))
	}
	b.add("lag_p99", "histogram_quantile(0.99, "+hist("proxybench_open_loop_lag_seconds", sel, traffic)+")")
	b.add("wrong", counter("proxybench_wrong_origin_total", sel, "", traffic))
	b.add("sched", counter("proxybench_open_loop_scheduled_total", sel, "", traffic))
	b.add("sent", counter("proxybench_open_loop_sent_total", sel, "", traffic))
	// In-flight is a gauge sampled once a second: a scrape in the first or
	// last second can catch the connections still dialling or draining, so
	// Little's law is checked on the steady part of windows long enough.
	steady := exact
	if w.End.Sub(w.Start) > 3*time.Second {
		steady = newSpan(w.Start.Add(time.Second), w.End.Add(-time.Second))
	}
	b.add("inflight", fmt.Sprintf("sum(avg_over_time(proxybench_requests_in_flight%s[%s] @ %s))", sel, steady.W, steady.E))
	b.add("scrapes", fmt.Sprintf("max(count_over_time(proxybench_requests_total%s[%s] @ %s))", sel, exact.W, exact.E))
	// A recreated container leaves its old cgroup's series behind for a
	// while under the same service: the one that burnt CPU in the window is
	// the proxy under test, and its id picks the matching memory series.
	cpuInc := fmt.Sprintf("increase(container_cpu_usage_seconds_total%s[%s] anchored @ %s)", cpuSel, exact.W, exact.E)
	b.add("cpu", "max("+cpuInc+")")
	b.add("mem_mean", fmt.Sprintf("sum(avg_over_time(container_memory_working_set_bytes%s[%s] @ %s) and on(id) topk(1, %s))", svc, exact.W, exact.E, cpuInc))
	b.add("mem_peak", fmt.Sprintf("max(max_over_time(container_memory_working_set_bytes%s[%s] @ %s) and on(id) topk(1, %s))", svc, exact.W, exact.E, cpuInc))
	b.add("lg_cpu", fmt.Sprintf("sum(increase(process_cpu_seconds_total%s[%s] anchored @ %s))", lg, exact.W, exact.E))
	b.add("lg_limit", fmt.Sprintf("max(last_over_time(proxybench_loadgen_cpu_limit_cores[%s] @ %s))", traffic.W, traffic.E))
	// Only the loadgen's own cgroup's pressure says something about the
	// loadgen; the host's (scope="host") rises with any busy task.
	for _, m := range []struct{ name, metric, sel string }{{"lg_periods", "proxybench_loadgen_cpu_periods_total", lg},
		{"lg_throttled", "proxybench_loadgen_cpu_throttled_periods_total", lg}, {"lg_run_delay", "proxybench_loadgen_run_delay_seconds_total", lg},
		{"lg_pressure", "proxybench_loadgen_cpu_pressure_seconds_total", `{job="loadgen",scope="cgroup"}`}} {
		b.add(m.name, fmt.Sprintf("sum(increase(%s%s[%s] anchored @ %s))", m.metric, m.sel, exact.W, exact.E))
	}
	if isGo {
		for _, m := range []struct{ name, metric string }{{"gc_cycles", "proxybench_gc_cycles_total"},
			{"gc_forced", "proxybench_gc_forced_cycles_total"}, {"gc_cpu", "proxybench_gc_cpu_seconds_total"}} {
			b.add(m.name, fmt.Sprintf("sum(increase(%s%s[%s] anchored @ %s))", m.metric, svc, exact.W, exact.E))
		}
		b.add("gomaxprocs", fmt.Sprintf("max(last_over_time(proxybench_gc_gomaxprocs%s[%s] @ %s))", svc, exact.W, exact.E))
		b.add("heap_mean", fmt.Sprintf("sum(avg_over_time(proxybench_gc_heap_live_bytes%s[%s] @ %s))", svc, exact.W, exact.E))
		gn := fmt.Sprintf("sum(increase(proxybench_gc_pause_seconds%s[%s] anchored @ %s))", svc, exact.W, exact.E)
		gc := fmt.Sprintf("sum by (le) (increase(proxybench_gc_pause_seconds_bucket%s[%s] anchored @ %s))", svc, exact.W, exact.E)
		for _, q := range []struct{ name, q string }{{"p50", "0.5"}, {"p99", "0.99"}, {"max", "1"}} {
			if kinds.PauseNative {
				b.add("gcp_n_"+q.name, "histogram_quantile("+q.q+", "+gn+")")
			} else {
				b.add("gcp_c_"+q.name, "histogram_quantile("+q.q+", "+gc+")")
			}
		}
	}
	res, err := c.Query(ctx, b.expr(), w.TrafficEnd())
	if err != nil {
		return cell, fmt.Errorf("cell %s: %w", w.ID, err)
	}
	v := map[string]float64{}
	seen, lateSeen := 0, 0 // traffic series seen, even when they counted nothing
	lateCodes, lateReasons := map[string]int64{}, map[string]int64{}
	lgOK, exOK := cov.LoadgenOK(), cov.ExporterOK()
	for _, s := range res {
		k := s.Labels["rk"]
		if !lgOK && hasKey(loadgenKeys, k) || !exOK && hasKey(exporterKeys, k) {
			continue
		}
		n := int64(math.Round(s.Value))
		switch k {
		case "code":
			cell.Codes[s.Labels["code"]] = n
			seen++
		case "reason":
			cell.ErrorReasons[s.Labels["reason"]] = n
			seen++
		case "late_code":
			lateCodes[s.Labels["code"]] = n
			lateSeen++
		case "late_reason":
			lateReasons[s.Labels["reason"]] = n
			lateSeen++
		default:
			v[k] = s.Value
		}
	}
	if lateSeen > 0 {
		cell.LateSource = report.LateFromPrometheus
	}
	cell.Late = SplitLate(cell.Codes, lateCodes) + SplitLate(cell.ErrorReasons, lateReasons)
	cell.LateCodes, cell.LateReasons = nonZero(lateCodes), nonZero(lateReasons)
	if !w.DrainEnd.IsZero() {
		de := w.DrainEnd
		cell.DrainEnd = &de
	}
	num := func(k string) report.Num {
		if x, ok := v[k]; ok && !math.IsNaN(x) {
			return report.Num(x)
		}
		return report.NaN()
	}
	cell.ServerSide = seen > 0
	report.Classify(&cell)

	lat := report.Latency{Mean: report.NaN(), P50: report.NaN(), P90: report.NaN(), P95: report.NaN(), P99: report.NaN(), P999: report.NaN(), Max: report.NaN()}
	src := ""
	if num("lat_n_count").Known() {
		src = "n"
		lat.Source = "native"
	} else if num("lat_c_count").Known() {
		src = "c"
		lat.Source = "classic"
	}
	if src != "" {
		cnt, sum := num("lat_"+src+"_count"), num("lat_"+src+"_sum")
		lat.Count = int64(math.Round(float64(cnt)))
		if cnt > 0 {
			lat.Mean = sum / cnt
			lat.P50, lat.P90, lat.P95 = num("lat_"+src+"_p50"), num("lat_"+src+"_p90"), num("lat_"+src+"_p95")
			lat.P99, lat.P999, lat.Max = num("lat_"+src+"_p99"), num("lat_"+src+"_p999"), num("lat_"+src+"_max")
		}
	}
	cell.Latency = lat
	cell.WrongOrigin = int64(math.Round(float64(orZero(num("wrong")))))
	cell.Scheduled = int64(math.Round(float64(orZero(num("sched")))))
	cell.Sent = int64(math.Round(float64(orZero(num("sent")))))
	cell.Missed, cell.Capped = num("missed"), num("capped")
	cell.InFlightMean = num("inflight")
	cell.Scrapes = int(orZero(num("scrapes")))
	d := float64(cell.DurationS)
	perSec := func(x report.Num) report.Num {
		if !x.Known() || d <= 0 {
			return report.NaN()
		}
		return x / report.Num(d)
	}
	cell.ProxyRes = report.Resources{CPUMeanCores: report.NaN(), CPUPeakCores: report.NaN(),
		MemMeanBytes: num("mem_mean"), MemPeakBytes: num("mem_peak"), MemSlopeMBPerMin: report.NaN()}
	proxyCPU, proxySrc := num("cpu"), report.ProxyCPUCAdvisor
	if w.ProxyCPUSeconds != nil {
		proxyCPU, proxySrc = report.Num(*w.ProxyCPUSeconds), report.ProxyCPUEdges
	}
	lgCPU, lgSrc := num("lg_cpu"), report.LoadgenCPUIncrease
	if w.LoadgenCPUSeconds != nil {
		lgCPU, lgSrc = report.Num(*w.LoadgenCPUSeconds), report.LoadgenCPUEdges
	}
	cell.LoadgenCPU = report.LoadgenCPU{MeanCores: perSec(lgCPU), PeakCores: report.NaN(), LimitCores: num("lg_limit"), LagP99Seconds: num("lag_p99")}
	if lgCPU.Known() {
		cell.LoadgenCPU.Source = lgSrc
	}
	cell.LoadgenCPU.SetShares(num("lg_periods"), num("lg_throttled"), num("lg_run_delay"), num("lg_pressure"), cell.DurationS)
	if isGo {
		g := &report.GC{Cycles: num("gc_cycles"), ForcedCycles: num("gc_forced"), CPUSeconds: num("gc_cpu"),
			LiveHeapMeanBytes: num("heap_mean"), LiveHeapSlope: report.NaN()}
		g.CyclesPerS = perSec(g.Cycles)
		procs := num("gomaxprocs")
		g.CPUPercent, g.ShareOfProxyCPU = report.NaN(), report.NaN()
		if g.CPUSeconds.Known() && procs.Known() && procs > 0 && d > 0 {
			g.CPUPercent = 100 * g.CPUSeconds / (procs * report.Num(d))
		}
		gs := "n"
		if !num("gcp_n_p50").Known() {
			gs = "c"
		}
		g.PauseP50, g.PauseP99, g.PauseMax = num("gcp_"+gs+"_p50"), num("gcp_"+gs+"_p99"), num("gcp_"+gs+"_max")
		cell.GC = g
	}
	cell.SetProxyCPU(proxyCPU, proxySrc)
	skip := map[string]bool{}
	for _, x := range []struct {
		ok    bool
		names []string
	}{{lgOK, loadgenSeries}, {exOK, exporterSeries}} {
		for _, n := range x.names {
			skip[n] = !x.ok
		}
	}
	if err := timeSeries(ctx, c, &cell, svc, cpuSel, lg, isGo, cov.Interval, skip); err != nil {
		return cell, fmt.Errorf("cell %s: %w", w.ID, err)
	}
	var g report.Gap
	if !lgOK && cov.LoadgenGap {
		g.Loadgen = cov.Loadgen
	}
	if !exOK && cov.ExporterGap {
		g.Exporter = cov.Exporter
	}
	if g.Loadgen != nil || g.Exporter != nil {
		cell.PrometheusGap = &g
	}
	return cell, nil
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
// 5-minute lookback would give. Series named in skip are left out (their
// target's scrapes fall short).
func timeSeries(ctx context.Context, c *promapi.Client, cell *report.Cell, svc, cpuSel, lg string, isGo bool, interval time.Duration, skip map[string]bool) error {
	d := cell.End.Sub(cell.Start)
	step := time.Second
	if n := d / step; n > 10000 {
		step = d / 10000
	}
	fresh := promapi.Duration(max(step, interval) * 11 / 10)
	var b batch
	add := func(name, expr string) {
		if !skip[name] {
			b.add(name, expr)
		}
	}
	cpuRate := fmt.Sprintf("irate(container_cpu_usage_seconds_total%s[3s])", cpuSel)
	add("cpu", "max("+cpuRate+")")
	add("mem", fmt.Sprintf("sum(last_over_time(container_memory_working_set_bytes%s[%s]) and on(id) topk(1, %s))", svc, fresh, cpuRate))
	add("lg", fmt.Sprintf("sum(irate(process_cpu_seconds_total%s[3s]))", lg))
	add("lg_rss", fmt.Sprintf("sum(last_over_time(process_resident_memory_bytes%s[%s]))", lg, fresh))
	add("exp_rss", fmt.Sprintf(`sum(last_over_time(process_resident_memory_bytes{job="exporter"}[%s]))`, fresh))
	if isGo {
		add("heap", fmt.Sprintf("sum(last_over_time(proxybench_gc_heap_live_bytes%s[%s]))", svc, fresh))
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
	secs := func(s promapi.Series) []float64 {
		out := make([]float64, len(s.Times))
		for i, t := range s.Times {
			out[i] = t.Sub(cell.Start).Seconds()
		}
		return out
	}
	if s, ok := byName["cpu"]; ok && len(s.Values) > 0 {
		cell.ProxyRes.CPUPeakCores = report.Num(maxOf(s.Values))
		cell.Series.T = secs(s)
		cell.Series.CPU = round(s.Values, 4)
	}
	if s, ok := byName["mem"]; ok && len(s.Values) > 0 {
		mb := scale(s.Values, 1/1e6)
		cell.ProxyRes.MemSlopeMBPerMin = slopePerMin(secs(s), mb)
		cell.Series.MemMB = round(mb, 3)
		if cell.Series.T == nil {
			cell.Series.T = secs(s)
		}
	}
	if s, ok := byName["lg"]; ok && len(s.Values) > 0 {
		cell.LoadgenCPU.PeakCores = report.Num(maxOf(s.Values))
	}
	if s, ok := byName["lg_rss"]; ok && len(s.Values) > 0 {
		cell.Instrument.LoadgenRSSMeanBytes = report.Num(stats.Mean(s.Values))
		cell.Instrument.LoadgenRSSSlopeMBPerMin = slopePerMin(secs(s), scale(s.Values, 1/1e6))
	}
	if s, ok := byName["exp_rss"]; ok && len(s.Values) > 0 {
		cell.Instrument.ExporterRSSMeanBytes = report.Num(stats.Mean(s.Values))
		cell.Instrument.ExporterRSSSlopeMBPerMin = slopePerMin(secs(s), scale(s.Values, 1/1e6))
	}
	if s, ok := byName["heap"]; ok && len(s.Values) > 0 && cell.GC != nil {
		mb := scale(s.Values, 1/1e6)
		cell.GC.LiveHeapSlope = slopePerMin(secs(s), mb)
		cell.Series.HeapMB = round(mb, 3)
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
