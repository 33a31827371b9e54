package build

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/synth"
)

// gapRun is three repeats of traefik.fast: one traffic label set, so that a
// count taken through a hole in the scrapes from a neighbouring cell would
// show as that cell's number. Cell 1 answers a distinctive 7777, cell 2
// 1500 and four 503s (a series born in it), cell 3 3333; 8-s windows 4 s
// apart at a +0.5 s phase, scrapes every second at +0.25 s. Every cell
// publishes its CPU read at the window's edges, as a real loadgen does.
func gapRun(id string, outages func(c []synth.Cell) []synth.Outage) *synth.Run {
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Second).UTC()
	r := synth.New(synth.Options{ID: id, Start: start, Proxies: []string{"traefik"}, Origins: []string{"fast"}, Repeats: 3, DurationS: 8})
	for i, codes := range []map[string]int64{{"200": 7777}, {"200": 1500, "503": 4}, {"200": 3333}} {
		c := &r.Cells[i]
		c.SetCodes(codes, 0.0016)
		c.ProxyCPUEdgeS, c.LoadgenCPUEdgeS = 3.21+float64(i), 2.5+0.1*float64(i)
		c.Flags, c.Verdict = nil, report.Valid
	}
	r.Outages = outages(r.Cells)
	return r
}

// What the report must say of a cell.
const (
	truth      = ""         // every number as the synthetic truth (checkCell)
	gapLoadgen = "loadgen"  // the loadgen's scrapes fell short: the manifest's numbers, or none without it
	gapOutage  = "outage"   // the loadgen's fell short and the exporter was not scraped inside the window: resources unknown too
	gapBoth    = "both"     // both targets' scrapes fell short, each with scrapes inside the window
	gapExp     = "exporter" // the exporter's alone: traffic from Prometheus, resources unknown
	absent     = "absent"   // not in the report (nothing knows the cell)
	unknownEnd = "unknown"  // outcome unknown: no end in Prometheus, later cells, no manifest
	failedCell = "failed"   // stays failed: no end and nothing after
)

// TestPrometheusGap runs the three-cell run through holes in Prometheus's
// scrapes of every phase: over all of cell 2 (with and without its window
// series ever reaching Prometheus, the reported bug), from the middle of
// cell 2 on, from the quiet time before cell 2 into it, over cell 1's end
// only, over the last cell's end, only the exporter's inside cell 2, and a
// control hole between two windows that touches no counting span. Each is
// built with the manifest (every cell in the report; a cell in a gap has
// the manifest's exact counts, flag prometheus_gap suspect, never failed,
// and no gauge or series from lookback) and without it (a cell in a gap
// has no counts, prometheus_gap invalid); the other cells match the truth.
func TestPrometheusGap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	t.Parallel()
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	all := func(from, to time.Time) synth.Outage { return synth.Outage{From: from, To: to} }
	never := func(c synth.Cell, from time.Time) synth.Outage {
		return synth.Outage{From: from, To: from.Add(24 * time.Hour), Only: `cell="` + c.ID + `"`}
	}
	cases := []struct {
		name       string
		outages    func(c []synth.Cell) []synth.Outage
		withMan    [3]string
		withoutMan [3]string
	}{
		// The reported bug: Prometheus down for all of cell 2, whose window
		// series it never scraped, so only the manifest knows the cell.
		{"all of cell 2, window series never scraped", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[1].Start.Add(-s(1.9)), c[1].End.Add(s(1.6))), never(c[1], c[1].Start.Add(-s(5)))}
		}, [3]string{truth, gapOutage, truth}, [3]string{truth, absent, truth}},
		// As reproduced on the real stack: Prometheus stopped just before
		// cell 1's end, up again after the loadgen exited. Without the
		// manifest only cell 1's start is known, and it stays failed.
		{"from cell 1 end to after the run", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[0].End.Add(-s(0.4)), c[2].End.Add(time.Hour))}
		}, [3]string{gapLoadgen, gapOutage, gapOutage}, [3]string{failedCell, absent, absent}},
		// Down for all of cell 2; its window series are scraped afterwards.
		{"all of cell 2", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[1].Start.Add(-s(1.9)), c[1].End.Add(s(1.6)))}
		}, [3]string{truth, gapOutage, truth}, [3]string{truth, gapOutage, truth}},
		// From 2.1 s into cell 2 to 1 s after its end: no scrape after its
		// traffic, 7.75 s without a loadgen scrape (> 3.5 s), 6.25 s
		// without the exporter (> 5.5 s).
		{"from mid cell 2", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[1].Start.Add(s(2.1)), c[1].End.Add(s(1)))}
		}, [3]string{truth, gapBoth, truth}, [3]string{truth, gapBoth, truth}},
		// From 3.1 s in: the exporter's 5.25 s is within its allowance, so
		// memory and GC come from its scrapes inside the window.
		{"late in cell 2", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[1].Start.Add(s(3.1)), c[1].End.Add(s(1)))}
		}, [3]string{truth, gapLoadgen, truth}, [3]string{truth, gapLoadgen, truth}},
		// From the quiet time before cell 2 to 2 s into it: the last scrape
		// before its baseline is 2.25 s old (the previous cell is over, so
		// a stale baseline would even count right: the check must not rely
		// on that).
		{"quiet time into cell 2", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[0].End.Add(s(1)), c[1].Start.Add(s(2)))}
		}, [3]string{truth, gapBoth, truth}, [3]string{truth, gapBoth, truth}},
		// Around cell 1's end: its after-margin scrape is lost and its end
		// gauge never reaches Prometheus.
		{"cell 1 end", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[0].End.Add(-s(0.4)), c[0].End.Add(s(2))), never(c[0], c[0].End)}
		}, [3]string{gapLoadgen, truth, truth}, [3]string{unknownEnd, truth, truth}},
		// Prometheus gone from just before the last cell's end: nothing
		// after it, so without a manifest it stays failed as before.
		{"last cell end", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[2].End.Add(-s(0.4)), c[2].End.Add(time.Hour))}
		}, [3]string{truth, truth, gapLoadgen}, [3]string{truth, truth, failedCell}},
		// Only the exporter, for 7 s inside cell 2.
		{"exporter inside cell 2", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{{From: c[1].Start.Add(s(1)), To: c[1].End.Add(-s(0.5)), Only: `job="exporter"`}}
		}, [3]string{truth, gapExp, truth}, [3]string{truth, gapExp, truth}},
		// Control: one scrape lost between cell 2's after-margin and cell
		// 3's baseline; no counting span is touched.
		{"between windows", func(c []synth.Cell) []synth.Outage {
			return []synth.Outage{all(c[1].End.Add(s(1)), c[1].End.Add(s(2)))}
		}, [3]string{truth, truth, truth}, [3]string{truth, truth, truth}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := gapRun("gap-"+string(rune('a'+i)), tc.outages)
			prom := startProm(t, run)
			man := run.Manifest()
			for _, side := range []struct {
				name   string
				man    bool
				expect [3]string
			}{{"manifest", true, tc.withMan}, {"no manifest", false, tc.withoutMan}} {
				t.Run(side.name, func(t *testing.T) {
					dir := t.TempDir()
					if side.man {
						if err := manifest.Write(filepath.Join(dir, "manifest.json"), man); err != nil {
							t.Fatal(err)
						}
					}
					r, err := Report(context.Background(), Config{Prom: prom, PromURL: "test", Run: run.ID, RunDir: dir,
						Thresholds: report.DefaultThresholds, Now: time.Now})
					if err != nil {
						t.Fatal(err)
					}
					got := map[string]*report.Cell{}
					for i := range r.Cells {
						got[r.Cells[i].ID] = &r.Cells[i]
					}
					want := 0
					for k, what := range side.expect {
						w := &run.Cells[k]
						g := got[w.ID]
						if what == absent {
							if g != nil {
								t.Errorf("%s: in the report, though neither Prometheus nor a manifest holds it", w.ID)
							}
							continue
						}
						want++
						if g == nil {
							t.Errorf("%s missing from the report (%d cells)", w.ID, len(r.Cells))
							continue
						}
						t.Run(w.ID, func(t *testing.T) { checkGapCell(t, g, w, &man.Cells[k], what, side.man) })
					}
					if len(r.Cells) != want {
						t.Errorf("%d cells, want %d", len(r.Cells), want)
					}
					// A cell only the manifest holds is named in the notes.
					if side.man && strings.Contains(strings.Join(tc.withoutMan[:], " "), absent) &&
						!strings.Contains(strings.Join(r.Notes, "\n"), "manifest only") {
						t.Errorf("notes %q lack the cell that only the manifest holds", r.Notes)
					}
				})
			}
		})
	}
}

func checkGapCell(t *testing.T, g *report.Cell, w *synth.Cell, mc *manifest.Cell, what string, haveMan bool) {
	t.Helper()
	if what == truth {
		checkCell(t, g, w)
		return
	}
	var codes []string
	for _, f := range g.Validity.Flags {
		codes = append(codes, f.Code+"/"+f.Severity)
	}
	flag := func() report.Flag {
		for _, f := range g.Validity.Flags {
			if f.Code == report.FlagPrometheusGap {
				return f
			}
		}
		return report.Flag{}
	}()
	has := func(subs ...string) {
		t.Helper()
		for _, s := range subs {
			if !strings.Contains(flag.Reason, s) {
				t.Errorf("prometheus_gap reason %q lacks %q", flag.Reason, s)
			}
		}
	}
	lacks := func(subs ...string) {
		t.Helper()
		for _, s := range subs {
			if strings.Contains(flag.Reason, s) {
				t.Errorf("prometheus_gap reason %q has %q", flag.Reason, s)
			}
		}
	}
	t.Logf("%s: %s", flag.Code, flag.Reason)
	d := w.Duration()
	switch what {
	case failedCell:
		if !g.Failed || !strings.Contains(strings.Join(codes, " "), "failed/invalid") || flag.Code != "" {
			t.Errorf("failed %v flags %v: want failed, as a cell whose loadgen never published its end", g.Failed, codes)
		}
		return
	case unknownEnd:
		if g.Failed || strings.Join(codes, " ") != "prometheus_gap/invalid" ||
			flag.Reason != "outcome unknown: Prometheus missed the end of this window and there is no manifest" {
			t.Errorf("failed %v flags %v: want only prometheus_gap invalid, outcome unknown", g.Failed, g.Validity.Flags)
		}
		if g.Requests != 0 || len(g.Codes) != 0 || g.ServerSide {
			t.Errorf("counts %v (server side %v) for a cell of unknown outcome", g.Codes, g.ServerSide)
		}
		return
	}
	if g.Failed {
		t.Errorf("failed, though the loadgen finished it (flags %v)", codes)
	}
	lg := what == gapLoadgen || what == gapOutage || what == gapBoth
	ex := what == gapBoth || what == gapExp
	exporterGone := ex || what == gapOutage
	if lg {
		has("Prometheus scraped the loadgen ", " times between ", "(expected about ", "in-flight")
	} else {
		lacks("loadgen")
	}
	if ex {
		has("the exporter ", "> 5.5 s)")
	} else {
		lacks("exporter")
	}
	switch what {
	case gapOutage, gapBoth:
		has("; memory, GC and in-flight are unknown")
	case gapLoadgen:
		has("; in-flight is unknown")
		// The exporter's numbers stand, from its scrapes in the window.
		for name, n := range map[string]report.Num{"mem mean": g.ProxyRes.MemMeanBytes, "gc cycles": g.GC.Cycles, "heap mean": g.GC.LiveHeapMeanBytes} {
			if !n.Known() {
				t.Errorf("%s unknown, though the exporter was scraped through the window", name)
			}
		}
	}
	switch {
	case !lg: // the exporter's alone: traffic from Prometheus
		if strings.Join(codes, " ") != "prometheus_gap/suspect" || g.Validity.Verdict != report.Suspect {
			t.Errorf("flags %v, want prometheus_gap suspect alone (no missing_metrics for what the gap explains)", g.Validity.Flags)
		}
		has("Prometheus scraped the exporter ", ": memory and GC are unknown")
		if !g.ServerSide || g.Requests != w.InWindow() || !equalMaps(g.Codes, nonZero(w.Codes)) || g.Latency.Source != "classic" {
			t.Errorf("traffic %v (%s, server side %v), want %v from Prometheus", g.Codes, g.Latency.Source, g.ServerSide, w.Codes)
		}
		eq(t, "in-flight", g.InFlightMean, w.InFlight)
		eq(t, "loadgen cpu peak", g.LoadgenCPU.PeakCores, w.LoadgenCPU)
	case haveMan:
		if strings.Join(codes, " ") != "prometheus_gap/suspect" || g.Validity.Verdict != report.Suspect {
			t.Errorf("flags %v, want prometheus_gap suspect alone (no no_server_side_series, no too_few_samples)", g.Validity.Flags)
		}
		has(": counts, exact latency and edge CPU come from the manifest; ")
		if g.ServerSide || g.Requests != w.InWindow() || !equalMaps(g.Codes, nonZero(w.Codes)) {
			t.Errorf("codes %v (server side %v), want the manifest's %v", g.Codes, g.ServerSide, w.Codes)
		}
		eq(t, "rps", g.RPS, float64(w.InWindow())/d)
		if e := g.Latency.Exact; e == nil || float64(e.P99) != mc.Latency.P99 || float64(e.P50) != mc.Latency.P50 {
			t.Errorf("exact latency %+v, want the manifest's %+v", e, mc.Latency)
		}
		eq(t, "latency mean", g.Latency.Mean, mc.Latency.Mean)
	default:
		if strings.Join(codes, " ") != "prometheus_gap/invalid" || g.Validity.Verdict != report.Invalid {
			t.Errorf("flags %v, want prometheus_gap invalid alone", g.Validity.Flags)
		}
		has(": no manifest holds its counts, so the cell has none")
		// Cell 1's 7777 (or any part of a count) through lookback would show here.
		if g.ServerSide || g.Requests != 0 || len(g.Codes) != 0 || len(g.ErrorReasons) != 0 || g.Latency.Source != "" || g.Latency.Exact != nil {
			t.Errorf("codes %v reasons %v latency %q (server side %v): want nothing from a window Prometheus did not scrape",
				g.Codes, g.ErrorReasons, g.Latency.Source, g.ServerSide)
		}
	}
	// Never a number from lookback: the loadgen's gauges and series of a
	// loadgen gap, the exporter's of any window it was not scraped through.
	if lg {
		for name, n := range map[string]report.Num{"in-flight": g.InFlightMean, "loadgen cpu peak": g.LoadgenCPU.PeakCores,
			"loadgen rss": g.Instrument.LoadgenRSSMeanBytes, "lag": g.LoadgenCPU.LagP99Seconds} {
			if n.Known() {
				t.Errorf("%s = %v, want unknown", name, float64(n))
			}
		}
	}
	if exporterGone {
		for name, n := range map[string]report.Num{"mem mean": g.ProxyRes.MemMeanBytes, "mem peak": g.ProxyRes.MemPeakBytes,
			"mem slope": g.ProxyRes.MemSlopeMBPerMin, "cpu peak": g.ProxyRes.CPUPeakCores, "gc cycles": g.GC.Cycles,
			"gc cpu": g.GC.CPUSeconds, "heap mean": g.GC.LiveHeapMeanBytes, "heap slope": g.GC.LiveHeapSlope,
			"pause p99": g.GC.PauseP99, "exporter rss": g.Instrument.ExporterRSSMeanBytes} {
			if n.Known() {
				t.Errorf("%s = %v, want unknown", name, float64(n))
			}
		}
		if len(g.Series.T) != 0 || len(g.Series.MemMB) != 0 || len(g.Series.HeapMB) != 0 || len(g.Series.CPU) != 0 {
			t.Errorf("time series %+v, want none", g.Series)
		}
	}
	// The CPU read at the window's edges stands either way.
	eq(t, "cpu mean", g.ProxyRes.CPUMeanCores, w.ProxyCPUMean())
	eq(t, "loadgen cpu", g.LoadgenCPU.MeanCores, w.LoadgenMean())
	if g.ProxyRes.CPUSource != report.ProxyCPUEdges || g.LoadgenCPU.Source != report.LoadgenCPUEdges {
		t.Errorf("cpu sources %q %q, want the edges", g.ProxyRes.CPUSource, g.LoadgenCPU.Source)
	}
}

// TestUnobservedArmThroughOutage: the observer study's cell, measured
// while the observability stack was paused (Prometheus scraped nothing
// around its window), is judged suspect for prometheus_gap alone and
// compared with its observed twin on the manifest's exact numbers.
func TestUnobservedArmThroughOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	t.Parallel()
	run := gapRun("observer", func(c []synth.Cell) []synth.Outage {
		return []synth.Outage{{From: c[1].Start.Add(-1900 * time.Millisecond), To: c[1].End.Add(1600 * time.Millisecond)}}
	})
	// Cell 1 is repeat 1 observed, cell 2 repeat 1 unobserved, cell 3
	// repeat 2 observed.
	for i, k := range []cellid.Key{cellid.New("traefik", "fast", "simple", "quick", 1), cellid.NewArm("traefik", "fast", "simple", "quick", cellid.ArmUnobserved, 1),
		cellid.New("traefik", "fast", "simple", "quick", 2)} {
		run.Cells[i].Key = k
	}
	prom := startProm(t, run)
	dir := t.TempDir()
	man := run.Manifest()
	if err := manifest.Write(filepath.Join(dir, "manifest.json"), man); err != nil {
		t.Fatal(err)
	}
	r, err := Report(context.Background(), Config{Prom: prom, PromURL: "test", Run: run.ID, RunDir: dir, Thresholds: report.DefaultThresholds, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	var un *report.Cell
	for i := range r.Cells {
		if r.Cells[i].Arm == cellid.ArmUnobserved {
			un = &r.Cells[i]
		}
	}
	if un == nil || un.Validity.Verdict != report.Suspect || len(un.Validity.Flags) != 1 || un.Validity.Flags[0].Code != report.FlagPrometheusGap {
		t.Fatalf("unobserved cell %+v", un)
	}
	if len(r.Arms) != 1 || r.Arms[0].Arm != cellid.ArmUnobserved || r.Arms[0].Pairs != 1 {
		t.Fatalf("arms %+v, want the observer arm with one pair", r.Arms)
	}
	m := r.Arms[0].Metrics
	near := func(a report.Num, b float64) bool { return math.Abs(float64(a)/b-1) < 1e-12 }
	if p := m["p99_seconds"]; p.N != 1 || !near(p.Base, man.Cells[0].Latency.P99) || !near(p.Arm, man.Cells[1].Latency.P99) {
		t.Errorf("p99 pair %+v, want the exact %v and %v", p, man.Cells[0].Latency.P99, man.Cells[1].Latency.P99)
	}
	if p := m["goodput_rps"]; p.N != 1 || !near(p.Arm, float64(run.Cells[1].Codes["200"])/run.Cells[1].Duration()) {
		t.Errorf("goodput pair %+v, want the manifest's count over the window", p)
	}
	if p := m["proxy_cpu_cores"]; p.N != 1 || !p.Arm.Known() {
		t.Errorf("proxy CPU pair %+v, want the edge reading", p)
	}
	if r.NoiseFloor == nil || r.NoiseFloor.NotMeasured != "" {
		t.Errorf("noise floor %+v, want one from the 2 observed repeats", r.NoiseFloor)
	}
}
