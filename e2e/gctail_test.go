//go:build e2e

package e2e

import (
	"math"
	"testing"
)

// gcTailCell is the part of a report cell the GC tail test reads.
type gcTailCell struct {
	ID        string  `json:"id"`
	DurationS float64 `json:"duration_seconds"`
	GC        *struct {
		Cycles float64 `json:"cycles"`
		Tail   *struct {
			P99              float64 `json:"p99_seconds"`
			Sampled          int     `json:"sampled"`
			Tail             int     `json:"tail"`
			TailCompleteness float64 `json:"tail_completeness"`
			Cycles           int     `json:"cycles"`
			Coverage         float64 `json:"coverage"`
			STWCoverage      float64 `json:"stw_coverage"`
			TailOverlap      float64 `json:"tail_overlap"`
			TailOverlapSTW   float64 `json:"tail_overlap_stw"`
			AllOverlap       float64 `json:"all_overlap"`
			Chance           float64 `json:"chance"`
			ChanceHigh       float64 `json:"chance_high"`
			PValue           float64 `json:"p_value"`
			P99Overlap       float64 `json:"p99_overlap_seconds"`
			P99Clear         float64 `json:"p99_clear_seconds"`
			Anchor           struct {
				Cycles           int     `json:"cycles"`
				DelayMedian      float64 `json:"delay_median_ns"`
				AfterEngineStart float64 `json:"after_engine_start_ns"`
			} `json:"anchor"`
		} `json:"tail"`
		TailError string `json:"tail_error"`
	} `json:"gc"`
}

// TestGCTailTraefik: one quick Traefik cell. The loadgen samples its
// requests' times, the runner reads Traefik's gctrace from its log at the
// cell's end and anchors the cycles to the same clock, and the report
// joins them. Checked against independent readings: the cycles the join
// placed in the window against the exporter's count of the same cycles in
// Prometheus, and the anchor against the engine's own start time of the
// container.
func TestGCTailTraefik(t *testing.T) {
	results := t.TempDir()
	runCells(t, results, "gctail", nil, "-tier", "5s", "-proxies", "traefik", "-origins", "fast", "-concurrency", "32", "-isolate=false")
	var c *gcTailCell
	for _, x := range readCells[gcTailCell](t, results, "gctail") {
		if x.ID == "traefik.fast.simple.5s.r1" {
			c = &x
		}
	}
	if c == nil || c.GC == nil {
		t.Fatalf("no traefik cell with a GC section in the report: %+v", c)
	}
	g := c.GC.Tail
	if g == nil {
		t.Fatalf("%s: no GC tail: %s", c.ID, c.GC.TailError)
	}
	t.Logf("%s: p99 %.0f µs; %d sampled, %d above the p99 (%.0f %% of them); %d cycles cover %.2f %% of the window (STW %.3f %%); "+
		"tail overlapping GC %.1f %% (STW %.1f %%), all requests %.1f %%, chance %.1f %% (95th pct %.1f %%), p %.3f; "+
		"p99 overlapping %.0f µs, clear %.0f µs; anchor from %d cycles, median log delay %.2f ms, %.1f ms after the engine's start",
		c.ID, g.P99*1e6, g.Sampled, g.Tail, 100*g.TailCompleteness, g.Cycles, 100*g.Coverage, 100*g.STWCoverage,
		100*g.TailOverlap, 100*g.TailOverlapSTW, 100*g.AllOverlap, 100*g.Chance, 100*g.ChanceHigh, g.PValue,
		g.P99Overlap*1e6, g.P99Clear*1e6, g.Anchor.Cycles, g.Anchor.DelayMedian/1e6, g.Anchor.AfterEngineStart/1e6)
	if g.Sampled < 1000 || g.Tail < 10 || g.Cycles < 1 {
		t.Errorf("%s: %d sampled, %d in the tail, %d cycles: too few to join", c.ID, g.Sampled, g.Tail, g.Cycles)
	}
	// The tail sampler catches every request above the p99 but those of
	// its warm-up (the first 256 of each recorder go to it whole).
	if g.TailCompleteness < 0.8 || g.TailCompleteness > 1.25 {
		t.Errorf("%s: the tail holds %.0f %% of the requests above the p99, want about all", c.ID, 100*g.TailCompleteness)
	}
	// The exporter counted the same process's cycles from the same log
	// into Prometheus, whose 1 s scrapes place the window's edges to
	// within a scrape: up to a second's cycles apart, and one cut on
	// either side.
	perScrape := float64(g.Cycles) / max(c.DurationS, 1)
	if d := float64(g.Cycles) - c.GC.Cycles; math.Abs(d) > perScrape+2 {
		t.Errorf("%s: %d cycles placed in the window, the exporter counted %.0f (a scrape's worth: %.0f)", c.ID, g.Cycles, c.GC.Cycles, perScrape)
	}
	// The runtime starts after the engine started the container, and a
	// line reaches the log within milliseconds on an idle log.
	if g.Anchor.AfterEngineStart < 0 || g.Anchor.AfterEngineStart > 5e9 {
		t.Errorf("%s: the anchor puts the process start %.1f ms after the engine's start of the container", c.ID, g.Anchor.AfterEngineStart/1e6)
	}
	if g.Anchor.DelayMedian > 50e6 {
		t.Errorf("%s: median log delay %.1f ms: the anchor is no better than that", c.ID, g.Anchor.DelayMedian/1e6)
	}
	for name, x := range map[string]float64{"tail overlap": g.TailOverlap, "all overlap": g.AllOverlap, "chance": g.Chance, "coverage": g.Coverage} {
		if x < 0 || x > 1 {
			t.Errorf("%s: %s %v out of [0, 1]", c.ID, name, x)
		}
	}
	if g.Coverage <= 0 || g.Chance <= 0 {
		t.Errorf("%s: coverage %v, chance %v: cycles that took no time", c.ID, g.Coverage, g.Chance)
	}
}
