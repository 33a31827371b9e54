package collect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"proxybench/internal/promapi"
	"proxybench/internal/promtest"
	"proxybench/reporter/internal/report"
)

// lookbackRun is OpenMetrics text of a loadgen traffic label set whose
// scrapes stop for a while (Prometheus down), with a phase of +0.25 s from
// t0, and the answer to "what is the value at t" for each code:
//   - code 200: 0 until 5 s, +100/s to 1000 at 15 s, flat; scraped until
//     20 s, then not until 120 s (flat 1000 again) to 130 s, then never.
//   - code 503: born at 8 s (3, then 7 from 10 s), same scrapes.
//
// Plus a proxy's working set, scraped every second except [40 s, 45 s),
// and its CPU counter without a hole.
func lookbackRun(t0 time.Time) []byte {
	var b strings.Builder
	lg := `job="loadgen",proxy="p",origin="o",scenario="simple"`
	scraped := func(s int) bool { return s <= 20 || s >= 120 && s <= 130 }
	at := func(s int) string {
		return fmt.Sprintf("%.3f", float64(t0.Add(time.Duration(s)*time.Second+250*time.Millisecond).UnixMilli())/1000)
	}
	b.WriteString("# TYPE proxybench_requests counter\n")
	for s := 0; s <= 200; s++ {
		if !scraped(s) {
			continue
		}
		v := min(max(0, 100*(s-5)), 1000)
		fmt.Fprintf(&b, "proxybench_requests_total{%s,code=\"200\"} %d %s\n", lg, v, at(s))
	}
	for s := 8; s <= 200; s++ {
		if !scraped(s) {
			continue
		}
		v := 3
		if s >= 10 {
			v = 7
		}
		fmt.Fprintf(&b, "proxybench_requests_total{%s,code=\"503\"} %d %s\n", lg, v, at(s))
	}
	ex := `job="exporter",service="p",id="/docker/p"`
	b.WriteString("# TYPE container_cpu_usage_seconds counter\n")
	for s := 0; s <= 60; s++ {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{%s} %g %s\n", ex, 0.5*float64(s), at(s))
	}
	b.WriteString("# TYPE container_memory_working_set_bytes gauge\n")
	for s := 0; s <= 60; s++ {
		if s >= 40 && s < 45 {
			continue
		}
		fmt.Fprintf(&b, "container_memory_working_set_bytes{%s} %d %s\n", ex, 10_000_000+1000*s, at(s))
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

// TestCounterTakesNoLookback: counter() counts only samples inside its
// window. With samples before a window and none inside (Prometheus down),
// it gives no count, not the earlier cumulative value that an instant
// lookup @ end finds through the 5-minute lookback; windows at other
// phases around the hole count exactly.
func TestCounterTakesNoLookback(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	t.Parallel()
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Second).UTC()
	srv := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, lookbackRun(t0))})
	c, err := promapi.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	sel := `{proxy="p",origin="o",scenario="simple"}`
	for _, tc := range []struct {
		name     string
		from, to float64
		want     map[string]float64 // by code; absent = no count
	}{
		// Around the traffic: all of it; the 503 series born inside counts
		// its last value.
		{"traffic", 4, 17, map[string]float64{"200": 1000, "503": 7}},
		// Part of the ramp, the 503 series already born before.
		{"inside the ramp", 9, 12, map[string]float64{"200": 300, "503": 4}},
		// From the flat part into the hole: samples inside, nothing moved.
		{"into the hole", 15.5, 40, map[string]float64{"200": 0, "503": 0}},
		// Wholly inside the hole, 10-40 s after the last sample: lookback
		// would give 1000 and 7.
		{"inside the hole", 30, 60, map[string]float64{}},
		// Just after the last sample, before the hole's end.
		{"right after the last sample", 20.5, 25, map[string]float64{}},
		// After the scrapes resumed and stopped again, within lookback of them.
		{"after the last scrape", 200, 230, map[string]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sp := newSpan(at(tc.from), at(tc.to))
			res, err := c.Query(context.Background(), counter("proxybench_requests_total", sel, "code", sp), at(tc.to))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, s := range res {
				got[s.Labels["code"]] = s.Value
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("counts %v, want %v", got, tc.want)
			}
		})
	}

	// A gauge's time series over a window with a 5-s hole in its scrapes
	// has no points in the hole: a bare selector would repeat the value of
	// the last scrape before it (lookback) at every step.
	t.Run("time series", func(t *testing.T) {
		t.Parallel()
		cell := report.Cell{Start: at(35.5), End: at(50.5)}
		if err := timeSeries(context.Background(), c, &cell, `{service="p"}`, `{service="p"}`, `{job="loadgen"}`, false, time.Second, nil); err != nil {
			t.Fatal(err)
		}
		if len(cell.Series.T) != 15 || len(cell.Series.CPU) != 15 {
			t.Fatalf("cpu series %v at %v: want a point every second of the 15-s window", cell.Series.CPU, cell.Series.T)
		}
		// The memory series lacks points, so the figures drop it; its slope
		// rests on the scraped points only: 1000 B/s = 0.06 MB/min.
		if len(cell.Series.MemMB) != 0 {
			t.Errorf("memory series %v kept: it cannot have a value in the hole", cell.Series.MemMB)
		}
		if s := cell.ProxyRes.MemSlopeMBPerMin; !s.Known() || float64(s) < 0.0599 || float64(s) > 0.0601 {
			t.Errorf("memory slope %v MB/min, want 0.06", float64(s))
		}
	})
}
