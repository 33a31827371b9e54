package build

import (
	"context"
	"math"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/internal/promapi"
	"proxybench/reporter/internal/collect"
	"proxybench/reporter/internal/report"
)

// reportWithoutPrometheus writes m into dir and builds its report with
// Prometheus unreachable: the manifest alone.
func reportWithoutPrometheus(t *testing.T, dir string, m *manifest.Manifest) *report.Report {
	t.Helper()
	if err := manifest.Write(filepath.Join(dir, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
	url := closedURL(t)
	c, err := promapi.New(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Report(context.Background(), Config{Prom: c, PromURL: url, Run: m.Run, RunDir: dir, Thresholds: report.DefaultThresholds, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// closedURL is a real 127.0.0.1 port with nothing listening: the
// "Prometheus unreachable" failure, produced for real.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestBuildFromManifestWhenPrometheusUnreachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: "m1", Status: "done", Started: start, Updated: start,
		Plan:     []byte(`{"slo":{"p99":"2ms","error_ratio":0.01}}`),
		Versions: map[string]string{"nginx": "nginx/1.22.1"},
		Host:     manifest.Host{Hostname: "lab", CPUs: 2, Kernel: "6.1"},
		Cells: []manifest.Cell{
			{Key: cellid.Key{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1},
				Start: start, End: start.Add(5 * time.Second), Status: manifest.CellOK, Requests: 5000,
				Codes: map[string]int64{"200": 4990, "502": 10}, Latency: manifest.Latency{Count: 5000, Mean: 0.001, P50: 0.0009, P90: 0.0012,
					P95: 0.0013, P99: 0.0025, P999: 0.004, Max: 0.009}},
			{Key: cellid.Key{ID: "nginx.fast.simple.quick.r2", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 2},
				Start: start.Add(8 * time.Second), End: start.Add(13 * time.Second), Status: manifest.CellFailed, Reason: "proxy died"},
		}}
	r := reportWithoutPrometheus(t, dir, m)
	if r.Sources.PrometheusOK || r.Sources.Discovery != "manifest" || len(r.Cells) != 2 {
		t.Fatalf("sources %+v, %d cells", r.Sources, len(r.Cells))
	}
	c1 := r.Cells[0]
	if c1.Requests != 5000 || c1.Latency.Exact == nil || c1.Latency.Exact.P99 != 0.0025 || float64(c1.ErrorRatio) != 10.0/5000 {
		t.Errorf("cell 1 from manifest: %+v", c1)
	}
	if c1.Validity.Verdict != report.Suspect || len(c1.Validity.Flags) != 1 || c1.Validity.Flags[0].Code != report.FlagNoServerSide {
		t.Errorf("cell 1 validity %+v, want suspect for lack of server-side series", c1.Validity)
	}
	if r.Cells[1].Validity.Verdict != report.Invalid {
		t.Errorf("cell 2 (failed, no counts) validity %+v, want invalid", r.Cells[1].Validity)
	}
	// SLO from the plan: exact p99 2.5 ms > 2 ms fails.
	if r.SLO.P99 != 2*time.Millisecond || c1.SLOPassed() || r.Summary.SLOFailed != 2 {
		t.Errorf("slo %+v, checks %+v, failed %d", r.SLO, c1.SLO, r.Summary.SLOFailed)
	}
	if !r.Cells[1].Failed {
		t.Error("cell 2 should be failed")
	}
	if len(r.Notes) < 2 || !strings.Contains(r.Notes[0], "unreachable") || !strings.Contains(r.Notes[1], "lack server-side series") {
		t.Errorf("notes %q", r.Notes)
	}
}

func TestBuildErrorsWithoutAnySource(t *testing.T) {
	t.Parallel()
	url := closedURL(t)
	c, _ := promapi.New(url, nil)
	_, err := Report(context.Background(), Config{Prom: c, PromURL: url, Run: "nope", RunDir: t.TempDir(), Now: time.Now})
	if err == nil || !strings.Contains(err.Error(), "nothing to report") {
		t.Fatalf("err = %v, want a nothing-to-report error", err)
	}
}

// TestMergeManifestFillsWhatPrometheusLacks: a cell whose Prometheus series
// have no late, missed, capped or edge-CPU readings takes them from the
// manifest; its totals lose the late completions the manifest counted.
func TestMergeManifestFillsWhatPrometheusLacks(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	drain := start.Add(12 * time.Second)
	w := emptyCell(collectWindow(start))
	w.ServerSide = true
	w.Codes = map[string]int64{"200": 10060, "404": 40} // Prometheus: every completion, late ones too
	w.Scheduled, w.Sent, w.Scrapes, w.Latency.Source, w.ProxyRes.MemMeanBytes = 10000, 10000, 10, "native", 1e7
	w.LoadgenCPU.MeanCores, w.LoadgenCPU.Source = 0.3, "process_cpu_seconds_total"
	w.ProxyRes.CPUMeanCores, w.ProxyRes.CPUSource = 0.8, "cadvisor"
	report.Classify(&w)
	pressure := 0.5
	mc := &manifest.Cell{Key: cellid.Key{ID: w.ID}, Rate: 1000, Scheduled: 10000, Sent: 10000, Late: 60, LateCodes: map[string]int64{"200": 60},
		DrainEnd: &drain, Missed: 0, Capped: 300, LagP99S: 0.0004, ProxyCPUSeconds: ptr(5.0),
		Loadgen: &manifest.LoadgenCPU{CapacityCores: 1, CPUSeconds: 9.2, Periods: 100, ThrottledPeriods: 15, RunDelaySeconds: 1.5, PressureSeconds: &pressure, PressureScope: "cgroup"}}
	mergeManifest(&w, mc)
	if w.Codes["200"] != 10000 || w.Late != 60 || w.LateSource != "manifest" || !near(w.RPS, 1004) || !near(w.GoodputRPS, 1000) {
		t.Errorf("codes %v late %d (%s) rps %v goodput %v, want 10000 x 200, 60 late from the manifest, 1004 and 1000 req/s",
			w.Codes, w.Late, w.LateSource, w.RPS, w.GoodputRPS)
	}
	if !w.DrainEnd.Equal(drain) || float64(w.Missed) != 0 || float64(w.Capped) != 300 || float64(w.LoadgenCPU.LagP99Seconds) != 0.0004 {
		t.Errorf("drain %v missed %v capped %v lag %v", w.DrainEnd, w.Missed, w.Capped, w.LoadgenCPU.LagP99Seconds)
	}
	if !near(w.ProxyRes.CPUMeanCores, 0.5) || w.ProxyRes.CPUSource != "cgroup_edges" {
		t.Errorf("proxy cpu %v from %s, want 0.5 from cgroup_edges", w.ProxyRes.CPUMeanCores, w.ProxyRes.CPUSource)
	}
	l := w.LoadgenCPU
	if !near(l.MeanCores, 0.92) || l.Source != "process_edges" || !near(l.LimitCores, 1) || !near(l.ThrottledShare, 0.15) ||
		!near(l.RunDelayShare, 0.15) || !near(l.PressureShare, 0.05) {
		t.Errorf("loadgen %+v, want mean 0.92 from process_edges, capacity 1, throttled 0.15, run delay 0.15, pressure 0.05", l)
	}
	report.Judge(&w, report.DefaultThresholds, false)
	var codes []string
	for _, f := range w.Validity.Flags {
		codes = append(codes, f.Code+"/"+f.Severity)
	}
	// Capped 3 %: the proxy, not the loadgen, held the rate back; the
	// loadgen is bound all the same by its own CPU and throttling. Its
	// 15 % run delay says nothing the measured 0.4 ms lag does not.
	want := "loadgen_bound/invalid loadgen_bound/invalid sut_saturated/suspect unexpected_status/invalid"
	if got := strings.Join(codes, " "); got != want {
		t.Errorf("flags %v, want %s", w.Validity.Flags, want)
	}

	// What Prometheus has stays.
	p := emptyCell(collectWindow(start))
	p.ServerSide, p.LateSource, p.Late = true, "prometheus", 7
	p.Codes = map[string]int64{"200": 1000}
	p.Missed, p.Capped = 2, 0
	p.SetProxyCPU(4, "cgroup_edges")
	p.LoadgenCPU.LimitCores, p.LoadgenCPU.ThrottledShare = 2, 0
	mergeManifest(&p, mc)
	if p.Late != 7 || p.Codes["200"] != 1000 || float64(p.Missed) != 2 || float64(p.Capped) != 0 || !near(p.ProxyRes.CPUMeanCores, 0.4) ||
		float64(p.LoadgenCPU.LimitCores) != 2 || float64(p.LoadgenCPU.ThrottledShare) != 0 {
		t.Errorf("Prometheus's values overwritten: %+v", p)
	}
}

func collectWindow(start time.Time) collect.Window {
	return collect.Window{Key: cellid.Key{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1},
		Start: start, End: start.Add(10 * time.Second), TargetRate: 1000, Ended: true}
}

func ptr(f float64) *float64 { return &f }

func near(n report.Num, want float64) bool { return n.Known() && math.Abs(float64(n)-want) < 1e-9 }

// TestMergeWindows: the report's cells are Prometheus's windows united
// with the manifest's cells; for a cell in both the manifest decides the
// edges, the drain end and the outcome; skipped cells stay out (not_run);
// cells only in Prometheus stay as discovered.
func TestMergeWindows(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sec := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	drain := sec(16)
	prom := []collect.Window{
		// Its end never scraped: discovered as failed, with no window.
		{Key: cellid.Key{ID: "a", Proxy: "nginx"}, Start: sec(0), End: sec(0), Failed: true, Concurrency: 10},
		{Key: cellid.Key{ID: "b", Proxy: "nginx"}, Start: sec(10), End: sec(15), Ended: true, TargetRate: 500},
		{Key: cellid.Key{ID: "d", Proxy: "nginx"}, Start: sec(40), End: sec(45), Ended: true},
		{Key: cellid.Key{ID: "s", Proxy: "nginx"}, Start: sec(50), End: sec(50), Failed: true},
	}
	m := &manifest.Manifest{Cells: []manifest.Cell{
		{Key: cellid.Key{ID: "a", Proxy: "nginx"}, Start: sec(0).Add(time.Millisecond), End: sec(5), Status: manifest.CellOK, Concurrency: 20},
		{Key: cellid.Key{ID: "b", Proxy: "nginx"}, Start: sec(10), End: sec(15).Add(-time.Millisecond), DrainEnd: &drain, Status: manifest.CellOK, Concurrency: 10, Rate: 500},
		{Key: cellid.Key{ID: "c", Proxy: "nginx"}, Start: sec(20), End: sec(25), Status: manifest.CellOK, Concurrency: 7, Rate: 100},
		{Key: cellid.Key{ID: "e", Proxy: "nginx"}, Start: sec(30), End: sec(32), Status: manifest.CellAborted},
		{Key: cellid.Key{ID: "s", Proxy: "nginx"}, Status: manifest.CellSkipped, Reason: "n/a: unsupported"},
	}}
	got, only := mergeWindows(prom, m)
	var ids []string
	byID := map[string]collect.Window{}
	for _, w := range got {
		ids = append(ids, w.ID)
		byID[w.ID] = w
	}
	if strings.Join(ids, " ") != "a b c e d" || strings.Join(only, " ") != "c e" {
		t.Fatalf("cells %v (only in the manifest %v), want a b c e d (c e)", ids, only)
	}
	if a := byID["a"]; a.Failed || !a.Ended || !a.Start.Equal(sec(0).Add(time.Millisecond)) || !a.End.Equal(sec(5)) || a.Concurrency != 10 {
		t.Errorf("a = %+v: want ok with the manifest's window (Prometheus's concurrency kept)", a)
	}
	if b := byID["b"]; !b.End.Equal(sec(15).Add(-time.Millisecond)) || !b.DrainEnd.Equal(drain) || b.TargetRate != 500 {
		t.Errorf("b = %+v: want the manifest's end and drain end", b)
	}
	if c := byID["c"]; c.Failed || !c.Ended || c.Concurrency != 7 || c.TargetRate != 100 || !c.End.Equal(sec(25)) {
		t.Errorf("c = %+v: want the manifest's cell", c)
	}
	if e := byID["e"]; !e.Failed {
		t.Errorf("e = %+v: aborted, want failed", e)
	}
	if d := byID["d"]; !d.Ended || d.Failed || !d.End.Equal(sec(45)) {
		t.Errorf("d = %+v: only in Prometheus, want it as discovered", d)
	}
	if w, o := mergeWindows(prom, nil); len(w) != len(prom) || o != nil {
		t.Errorf("without a manifest: %v %v, want Prometheus's windows", w, o)
	}
}

// TestUnknownOutcome: without a manifest, a window whose end Prometheus
// never scraped is of unknown outcome when a later cell started, failed
// when the loadgen marked it so or nothing came after it.
func TestUnknownOutcome(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ws := []collect.Window{
		{Key: cellid.Key{ID: "missed-end"}, Start: t0, End: t0, Failed: true},
		{Key: cellid.Key{ID: "marked"}, Start: t0.Add(10 * time.Second), End: t0.Add(10 * time.Second), Failed: true, MarkedFailed: true},
		{Key: cellid.Key{ID: "ok"}, Start: t0.Add(20 * time.Second), End: t0.Add(25 * time.Second), Ended: true},
		{Key: cellid.Key{ID: "last"}, Start: t0.Add(30 * time.Second), End: t0.Add(30 * time.Second), Failed: true},
	}
	if got := unknownOutcome(ws); len(got) != 1 || !got["missed-end"] {
		t.Errorf("unknown outcome %v, want missed-end alone", got)
	}
}

// TestRichnessCountsGaps: a rebuild that finds a gap in Prometheus's
// scrapes is not poorer than a report built before gaps were detected,
// whose numbers for that window came from the missing scrapes (or which
// lost the window altogether).
func TestRichnessCountsGaps(t *testing.T) {
	t.Parallel()
	old := &report.Report{Cells: []report.Cell{{Key: cellid.Key{ID: "c1"}, ServerSide: true, Failed: true, Latency: report.Latency{Exact: &report.Exact{}}}}}
	gap := &report.Gap{Loadgen: &report.ScrapeCoverage{Job: "loadgen"}}
	rebuilt := &report.Report{Cells: []report.Cell{
		{Key: cellid.Key{ID: "c1"}, PrometheusGap: gap, Latency: report.Latency{Exact: &report.Exact{}}},
		{Key: cellid.Key{ID: "c2"}, PrometheusGap: gap, Latency: report.Latency{Exact: &report.Exact{}}}}}
	if n, o := RichnessOf(rebuilt), RichnessOf(old); n != (Richness{Cells: 2, ServerSide: 2, Exact: 2}) || n.PoorerThan(o) {
		t.Errorf("rebuild %v, old %v: want the rebuild not poorer", n, o)
	}
	// Without the gap evidence (Prometheus unreachable) it is poorer.
	rebuilt.Cells[0].PrometheusGap, rebuilt.Cells[1].PrometheusGap = nil, nil
	if n := RichnessOf(rebuilt); !n.PoorerThan(RichnessOf(old)) {
		t.Errorf("rebuild without Prometheus %v should be poorer than %v", n, RichnessOf(old))
	}
}

// The manifest's instrument ceiling reaches every cell and the report's
// environment: a closed-loop cell at 91 % of it is instrument_ceiling.
func TestBuildJudgesTheInstrumentCeiling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: "m1", Status: "done", Started: start, Updated: start,
		Host:    manifest.Host{Hostname: "lab", CPUs: 2},
		Ceiling: &manifest.Ceiling{RPS: 1100, Concurrency: 50, Source: manifest.CeilingMeasured, MeasuredAt: start},
		Cells: []manifest.Cell{{Key: cellid.Key{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1},
			Start: start, End: start.Add(5 * time.Second), Status: manifest.CellOK, Requests: 5000, Codes: map[string]int64{"200": 5000}}}}
	r := reportWithoutPrometheus(t, dir, m)
	if r.Environment.Ceiling == nil || r.Environment.Ceiling.RPS != 1100 {
		t.Errorf("environment ceiling %+v", r.Environment.Ceiling)
	}
	cell := r.Cells[0]
	var reason string
	for _, f := range cell.Validity.Flags {
		if f.Code == report.FlagCeiling {
			reason = f.Reason
		}
	}
	if float64(cell.CeilingRPS) != 1100 || cell.Validity.Verdict != report.Invalid || !strings.Contains(reason, "1000 req/s is 91 %") {
		t.Errorf("cell ceiling %v, validity %+v: want instrument_ceiling at 91 %%", cell.CeilingRPS, cell.Validity)
	}
}
