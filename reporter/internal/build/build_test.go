package build

import (
	"context"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"proxybench/internal/promtest"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/promapi"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/synth"
)

// synthRun is the run every test here reads back; its start is a whole
// second a few hours ago so that discovery at "now" finds it.
func synthRun(id string, repeats int) *synth.Run {
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Second).UTC()
	return synth.New(synth.Options{ID: id, Start: start, Proxies: []string{"nginx", "haproxy", "traefik", "caddy"},
		Origins: []string{"node", "python", "go", "fast"}, Repeats: repeats, DurationS: 5})
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
	run := synthRun("truth-1", 1)
	c := startProm(t, run)
	r, err := Build(context.Background(), Config{Prom: c, PromURL: "test", Run: run.ID, RunDir: t.TempDir(),
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
			checkCell(t, g, want, i)
		})
	}
	if r.Summary.Invalid != 4 || r.Summary.Suspect != 1 {
		t.Errorf("summary %+v, want 4 invalid and 1 suspect", r.Summary)
	}
	if len(r.Environment.Proxies) != 4 || r.Environment.Proxies[0].Version != "nginx-1.0.0" || r.Environment.Proxies[0].CPULimitCores != 2 ||
		r.Environment.Proxies[0].MemLimitBytes != 512<<20 {
		t.Errorf("environment %+v", r.Environment.Proxies)
	}
}

func checkCell(t *testing.T, g *report.Cell, w *synth.Cell, i int) {
	t.Helper()
	d := w.End.Sub(w.Start).Seconds()
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
	var total int64
	for _, v := range w.Codes {
		total += v
	}
	if g.Requests != total || g.Latency.Count != int64(len(w.Latencies)) {
		t.Errorf("requests %d / latency count %d, want %d", g.Requests, g.Latency.Count, total)
	}
	eq(t, "rps", g.RPS, float64(total)/d)
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
	eq(t, "cpu mean", g.ProxyRes.CPUMeanCores, w.ProxyCPU)
	eq(t, "cpu peak", g.ProxyRes.CPUPeakCores, w.ProxyCPU)
	// Memory samples inside (start, end] sit at start+0.75 s, +1.75 s, ...
	eq(t, "mem mean", g.ProxyRes.MemMeanBytes, 1e6*(w.MemStartMB+w.MemSlopeMBPerS*(0.75+(d-1)/2)))
	eq(t, "mem peak", g.ProxyRes.MemPeakBytes, 1e6*(w.MemStartMB+w.MemSlopeMBPerS*(d-0.25)))
	eq(t, "mem slope", g.ProxyRes.MemSlopeMBPerMin, w.MemSlopeMBPerS*60)
	eq(t, "loadgen cpu", g.LoadgenCPU.MeanCores, w.LoadgenCPU)
	eq(t, "loadgen cpu peak", g.LoadgenCPU.PeakCores, w.LoadgenCPU)
	eq(t, "loadgen limit", g.LoadgenCPU.LimitCores, 2)
	if w.Go {
		if g.GC == nil {
			t.Fatal("no GC numbers for a Go proxy")
		}
		eq(t, "gc cycles", g.GC.Cycles, float64(w.GCCyclesPerS)*d)
		eq(t, "gc cycles/s", g.GC.CyclesPerS, float64(w.GCCyclesPerS))
		eq(t, "gc cpu %", g.GC.CPUPercent, 100*w.GCCPUPerS/2)
		eq(t, "gc share", g.GC.ShareOfProxyCPU, 100*w.GCCPUPerS/w.ProxyCPU)
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
	wantFlags := map[int]string{4: report.FlagMisrouted, 5: report.FlagLittle, 6: report.FlagLoadgenBound, 7: report.FlagMisrouted, 8: report.FlagErrors}
	var codes []string
	for _, f := range g.Validity.Flags {
		codes = append(codes, f.Code)
	}
	if got := strings.Join(codes, " "); got != wantFlags[i] {
		t.Errorf("flags %v, want [%s]", g.Validity.Flags, wantFlags[i])
	}
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
	run := synthRun("bench-80", 5)
	c := startProm(b, run)
	dir := b.TempDir()
	var write time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		r, err := Build(context.Background(), Config{Prom: c, PromURL: "bench", Run: run.ID, RunDir: dir,
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
