package build

import (
	"context"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"proxybench/internal/promapi"
	"proxybench/internal/promtest"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/synth"
)

// synthRun is the run every test here reads back; its start is a whole
// second a few hours ago so that discovery at "now" finds it.
func synthRun(id string, repeats int, flagCells bool) *synth.Run {
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Second).UTC()
	return synth.New(synth.Options{ID: id, Start: start, Proxies: []string{"nginx", "haproxy", "traefik", "caddy"},
		Origins: []string{"node", "python", "go", "fast"}, Repeats: repeats, DurationS: 5, FlagCells: flagCells})
}

// startProm backfills r into a fresh TSDB and serves it with real Prometheus.
func startProm(t testing.TB, r *synth.Run) *promapi.Client {
	t.Helper()
	data := promtest.Backfill(t, r.OpenMetrics())
	srv := promtest.Start(t, promtest.Options{DataDir: data})
	c, err := promapi.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBuildMatchesTruth checks every number of the report against the
// synthetic run's exact truth: counts exact, float means to 1e-9, and
// histogram percentiles inside the bucket that holds the true percentile.
func TestBuildMatchesTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	t.Parallel()
	run := synthRun("truth-1", 1, true)
	c := startProm(t, run)
	r, err := Report(context.Background(), Config{Prom: c, PromURL: "test", Run: run.ID, RunDir: t.TempDir(),
		SLO: report.SLO{P99: 5 * time.Millisecond, ErrorRatio: 0.01}, SLOFromFlag: true, Thresholds: report.DefaultThresholds, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != len(run.Cells) {
		t.Fatalf("discovered %d cells, want %d", len(r.Cells), len(run.Cells))
	}
	got := map[string]*report.Cell{}
	for i := range r.Cells {
		got[r.Cells[i].ID] = &r.Cells[i]
	}
	for i := range run.Cells {
		want := &run.Cells[i]
		t.Run(want.ID, func(t *testing.T) {
			g := got[want.ID]
			if g == nil {
				t.Fatalf("cell %s missing", want.ID)
			}
			checkCell(t, g, want)
		})
	}
	verdicts := map[string]int{}
	for _, c := range run.Cells {
		verdicts[c.Verdict]++
	}
	if s := r.Summary; s.Valid != verdicts["valid"] || s.Suspect != verdicts["suspect"] || s.Invalid != verdicts["invalid"] {
		t.Errorf("summary %+v, want %v", r.Summary, verdicts)
	}
	if len(r.Environment.Proxies) != 4 || r.Environment.Proxies[0].Version != "nginx-1.0.0" || r.Environment.Proxies[0].CPULimitCores != 2 ||
		r.Environment.Proxies[0].MemLimitBytes != 512<<20 {
		t.Errorf("environment %+v", r.Environment.Proxies)
	}
}

// flagReasons are words each flag cell's reasons must hold: the signal
// that fired, its value and its threshold.
var flagReasons = map[string][]string{
	"unexpected-404":    {"404: 3120 of 10400 (30.0 %)", "expected 2xx", "> 0.1 %"},
	"loadgen-capacity":  {"CPU mean 0.15 of 0.15 cores", ">= 90 %", "1-s peak 0.15 of 0.15 cores", ">= 98 %"},
	"loadgen-spike":     {"1-s peak 1 of 1 cores of capacity (100 %, >= 98 %)"},
	"loadgen-throttled": {"throttled in 20.0 % of its CPU periods (> 10 %)"},
	"loadgen-run-delay": {"waited for a CPU 15.0 % of the window's capacity (run delay, > 10 %)"},
	"open-loop-capped":  {"max in flight (10) was reached for 6.0 % of sends (600 of 10000, > 1 %)", "coordinated omission corrected"},
	"open-loop-missed":  {"missed 300 of 10000 scheduled sends (3.0 %, > 1 %)"},
	"open-loop-lag":     {"send lag p99", "(> 10 ms)"},
}

func checkCell(t *testing.T, g *report.Cell, w *synth.Cell) {
	t.Helper()
	d := w.Duration()
	if !g.Start.Equal(w.Start) || !g.End.Equal(w.End) {
		t.Errorf("window %s..%s, want %s..%s", g.Start, g.End, w.Start, w.End)
	}
	wantCodes := nonZero(w.Codes)
	if !equalMaps(g.Codes, wantCodes) {
		t.Errorf("codes %v, want %v", g.Codes, wantCodes)
	}
	if !equalMaps(g.ErrorReasons, nonZero(w.Reasons)) {
		t.Errorf("error reasons %v, want %v", g.ErrorReasons, nonZero(w.Reasons))
	}
	total := w.InWindow()
	if g.Requests != total || g.Latency.Count != int64(len(w.Latencies)) {
		t.Errorf("requests %d / latency count %d, want %d in the window / %d observed", g.Requests, g.Latency.Count, total, len(w.Latencies))
	}
	// Late completions are counted apart; the rates are in-window counts
	// over the planned duration, exactly.
	wantDrain := w.End
	if !w.DrainEnd.IsZero() {
		wantDrain = w.DrainEnd
	}
	if g.Late != w.Late() || !equalMaps(nonZero(g.LateCodes), nonZero(w.LateCodes)) || g.DrainEnd == nil || !g.DrainEnd.Equal(wantDrain) {
		t.Errorf("late %d %v drain end %v, want %d %v %v", g.Late, g.LateCodes, g.DrainEnd, w.Late(), w.LateCodes, wantDrain)
	}
	if w.Late() > 0 && g.LateSource != "prometheus" {
		t.Errorf("late source %q, want prometheus", g.LateSource)
	}
	attempts := total + sumOf(w.Reasons)
	eq(t, "late share", g.LateShare, float64(w.Late())/float64(attempts+w.Late()))
	eq(t, "rps", g.RPS, float64(total)/d)
	var good int64
	for code, n := range w.Codes {
		if strings.HasPrefix(code, "2") {
			good += n
		}
	}
	eq(t, "goodput", g.GoodputRPS, float64(good)/d)
	if g.Unexpected != total-good {
		t.Errorf("unexpected statuses %d, want %d", g.Unexpected, total-good)
	}
	eq(t, "latency mean", g.Latency.Mean, mean(w.Latencies))
	if g.Latency.Source != "classic" {
		t.Errorf("latency source %q, want classic", g.Latency.Source)
	}
	for _, q := range []struct {
		name string
		q    float64
		v    report.Num
	}{{"p50", 0.5, g.Latency.P50}, {"p90", 0.9, g.Latency.P90}, {"p95", 0.95, g.Latency.P95}, {"p99", 0.99, g.Latency.P99},
		{"p99.9", 0.999, g.Latency.P999}, {"max", 1, g.Latency.Max}} {
		inBucket(t, "latency "+q.name, q.v, w.Latencies, q.q, synth.LatencyBuckets)
	}
	eq(t, "in-flight", g.InFlightMean, w.InFlight)
	if g.Scrapes != int(d) {
		t.Errorf("scrapes %d, want %d", g.Scrapes, int(d))
	}
	if g.WrongOrigin != w.WrongOrigin {
		t.Errorf("wrong origin %d, want %d", g.WrongOrigin, w.WrongOrigin)
	}
	eq(t, "cpu mean", g.ProxyRes.CPUMeanCores, w.ProxyCPUMean())
	eq(t, "cpu peak", g.ProxyRes.CPUPeakCores, w.ProxyCPU)
	if want := map[bool]string{true: "cgroup_edges", false: "cadvisor"}[w.ProxyCPUEdgeS > 0]; g.ProxyRes.CPUSource != want {
		t.Errorf("cpu source %q, want %q", g.ProxyRes.CPUSource, want)
	}
	// Memory samples inside (start, end] sit at start+0.75 s, +1.75 s, ...
	eq(t, "mem mean", g.ProxyRes.MemMeanBytes, 1e6*(w.MemStartMB+w.MemSlopeMBPerS*(0.75+(d-1)/2)))
	eq(t, "mem peak", g.ProxyRes.MemPeakBytes, 1e6*(w.MemStartMB+w.MemSlopeMBPerS*(d-0.25)))
	eq(t, "mem slope", g.ProxyRes.MemSlopeMBPerMin, w.MemSlopeMBPerS*60)
	lg := g.LoadgenCPU
	eq(t, "loadgen cpu", lg.MeanCores, w.LoadgenMean())
	eq(t, "loadgen cpu peak", lg.PeakCores, math.Max(w.LoadgenCPU, w.LoadgenSpike))
	eq(t, "loadgen limit", lg.LimitCores, w.LoadgenLimit)
	if want := map[bool]string{true: "process_edges", false: "process_cpu_seconds_total"}[w.LoadgenCPUEdgeS > 0]; lg.Source != want {
		t.Errorf("loadgen cpu source %q, want %q", lg.Source, want)
	}
	eq(t, "loadgen throttled share", lg.ThrottledShare, w.ThrottledShare)
	eq(t, "loadgen run delay share", lg.RunDelayShare, w.RunDelayPerS/w.LoadgenLimit)
	if lg.PressureShare.Known() {
		t.Errorf("pressure share %v, want unknown (no PSI series)", lg.PressureShare)
	}
	if w.TargetRate > 0 {
		eq(t, "target rate", g.TargetRateRPS, w.TargetRate)
		inBucket(t, "lag p99", lg.LagP99Seconds, w.Lags, 0.99, synth.LagBuckets)
		eq(t, "missed", g.Missed, float64(w.Missed))
		eq(t, "capped", g.Capped, float64(w.Capped))
		if g.Scheduled != w.Scheduled || g.Sent != w.Sent {
			t.Errorf("scheduled %d sent %d, want %d %d", g.Scheduled, g.Sent, w.Scheduled, w.Sent)
		}
	} else if lg.LagP99Seconds.Known() || g.Missed.Known() || g.Capped.Known() {
		t.Errorf("closed loop with lag %v missed %v capped %v, want unknown", lg.LagP99Seconds, g.Missed, g.Capped)
	}
	if w.Go {
		if g.GC == nil {
			t.Fatal("no GC numbers for a Go proxy")
		}
		eq(t, "gc cycles", g.GC.Cycles, float64(w.GCCyclesPerS)*d)
		eq(t, "gc cycles/s", g.GC.CyclesPerS, float64(w.GCCyclesPerS))
		eq(t, "gc cpu %", g.GC.CPUPercent, 100*w.GCCPUPerS/2)
		eq(t, "gc share", g.GC.ShareOfProxyCPU, 100*w.GCCPUPerS/w.ProxyCPUMean())
		eq(t, "heap mean", g.GC.LiveHeapMeanBytes, 1e6*(w.HeapMB+w.HeapSlopeMBPerS*(0.75+(d-1)/2)))
		eq(t, "heap slope", g.GC.LiveHeapSlope, w.HeapSlopeMBPerS*60)
		// The exact window (start, end] ends 0.25 s after the last scrape
		// inside it, so the pauses of that last quarter second are not in it.
		in := w.Pauses[:int(math.Floor(float64(len(w.Pauses))*(d-0.25)/d))]
		inBucket(t, "pause p50", g.GC.PauseP50, in, 0.5, synth.PauseBuckets)
		inBucket(t, "pause p99", g.GC.PauseP99, in, 0.99, synth.PauseBuckets)
		inBucket(t, "pause max", g.GC.PauseMax, in, 1, synth.PauseBuckets)
	} else if g.GC != nil {
		t.Errorf("GC numbers for C proxy %s", w.Proxy)
	}
	// A route answering 404 to everything is misrouted; 4xx are not
	// failures (the recording rules' definition), so no errors flag.
	var codes, reasons []string
	for _, f := range g.Validity.Flags {
		codes = append(codes, f.Code)
		reasons = append(reasons, f.Reason)
	}
	if got, want := strings.Join(codes, " "), strings.Join(w.Flags, " "); got != want || g.Validity.Verdict != w.Verdict {
		t.Errorf("%s flags %v, want %s [%s]", g.Validity.Verdict, g.Validity.Flags, w.Verdict, want)
	}
	for _, want := range flagReasons[w.Origin] {
		if !strings.Contains(strings.Join(reasons, "; "), want) {
			t.Errorf("reasons %q lack %q", reasons, want)
		}
	}
}

func sumOf(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func eq(t *testing.T, what string, got report.Num, want float64) {
	t.Helper()
	if !got.Known() || math.Abs(float64(got)-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, float64(got), want)
	}
}

// inBucket checks that est lies in the histogram bucket holding the true
// q-quantile (the estimate's error bound for a classic histogram).
func inBucket(t *testing.T, what string, est report.Num, obs []float64, q float64, bounds []float64) {
	t.Helper()
	s := append([]float64(nil), obs...)
	sort.Float64s(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	if k < 0 {
		k = 0
	}
	truth := s[k]
	j := sort.SearchFloat64s(bounds, truth)
	lo, hi := 0.0, bounds[len(bounds)-1]
	if j > 0 {
		lo = bounds[j-1]
	}
	if j < len(bounds) {
		hi = bounds[j]
	}
	if !est.Known() || float64(est) < lo || float64(est) > hi {
		t.Errorf("%s = %v, true %v: want within its bucket [%v, %v]", what, float64(est), truth, lo, hi)
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func equalMaps(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// BenchmarkBuild80 builds the report of an 80-cell run (4 proxies x 4
// origins x 5 repeats) against real Prometheus; the target is < 10 s.
func BenchmarkBuild80(b *testing.B) {
	run := synthRun("bench-80", 5, false)
	c := startProm(b, run)
	dir := b.TempDir()
	var write time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		r, err := Report(context.Background(), Config{Prom: c, PromURL: "bench", Run: run.ID, RunDir: dir,
			Thresholds: report.DefaultThresholds, Now: time.Now})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := output.Write(dir, r); err != nil {
			b.Fatal(err)
		}
		write += time.Since(t1)
		_ = t0
		if len(r.Cells) != 80 {
			b.Fatalf("%d cells", len(r.Cells))
		}
	}
	b.ReportMetric(write.Seconds()/float64(b.N), "write-s/op")
}
