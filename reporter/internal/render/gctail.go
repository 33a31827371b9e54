package render

import (
	"fmt"

	"proxybench/internal/gccycles"
	"proxybench/internal/gctail"
	"proxybench/internal/reqsample"
	"proxybench/reporter/internal/report"
)

// gcTailTable is the GC section's join of requests and GC cycles: did the
// requests slower than the p99 overlap a GC cycle more often than chance?
// ok is false when no cell has one.
func gcTailTable(cells []*report.Cell) (t Table, ok bool) {
	t = Table{Caption: "GC and the tail: requests slower than the p99 that overlapped a GC cycle",
		Header: []string{"proxy", "origin", "scenario/tier", "p99", "tail sampled", "tail overlapping GC", "expected by chance (95th pct)", "p (shift)", "tail overlapping STW", "all overlapping GC", "window in GC (STW)", "p99 overlapping GC", "p99 clear of GC", "clock anchor: median log delay"},
		Right:  []bool{false, false, false, true, true, true, true, true, true, true, true, true, true, true}}
	var missing []string
	for _, c := range cells {
		g := c.GC
		if g.Tail == nil {
			if g.TailError != "" {
				missing = append(missing, fmt.Sprintf("%s: %s", c.ID, g.TailError))
			}
			continue
		}
		x := g.Tail
		pct := func(v float64) Cell { return txt(fmtPct(report.Num(v))) }
		dur := func(s float64) Cell { return txt(fmtDur(report.Num(s))) }
		t.Rows = append(t.Rows, []Cell{txt(c.Proxy), txt(c.Origin), txt(fmt.Sprintf("%s/%s r%d", c.Scenario, c.Tier, c.Repeat)),
			dur(x.P99Seconds), txt(fmt.Sprintf("%d (%.0f %%)", x.Tail, 100*min(x.TailCompleteness, 9.99))),
			pct(x.TailOverlap), txt(fmtPct(report.Num(x.Chance)) + " (" + fmtPct(report.Num(x.ChanceHigh)) + ")"),
			txt(fmt.Sprintf("%.3f", x.PValue)), pct(x.TailOverlapSTW), pct(x.AllOverlap),
			txt(fmtPct(report.Num(x.Coverage)) + " (" + fmtPct(report.Num(x.STWCoverage)) + ")"),
			dur(x.P99OverlapSeconds), dur(x.P99ClearSeconds), dur(x.Anchor.DelayMedian.Seconds())})
	}
	if len(t.Rows) == 0 && len(missing) == 0 {
		return t, false
	}
	t.Notes = []string{
		fmt.Sprintf("The loadgen samples the send and completion times of a Go proxy cell's requests on the host's wall clock (a uniform reservoir of all of them, and one of those above a running %gth percentile, each of at most %d per cell); the proxy's GC cycles come from its gctrace, each cycle's start (printed as time since the process started, in whole milliseconds) placed on the same clock by the log's timestamps: the process start is the least of log stamp − (cycle start + its phases) over the cycles, late by that line's log delay, and a cycle's start early by up to %v (the runtime's truncation). A request overlapped a cycle when its time at the proxy (send to completion) met the cycle's sweep termination, mark or mark termination; STW = the two stop-the-world phases.", float64(reqsample.TailQuantile), reqsample.MaxPerAttack, gccycles.Truncation),
		fmt.Sprintf("Expected by chance: the tail's overlap with the GC timeline shifted circularly within the window (%d shifts), which keeps the requests' durations and the cycles' lengths and spacing; p is the share of shifts whose overlap reached the observed one. Tail sampled: the tail requests kept, and their weight over 1 %% of the requests (100 %% = every one). p99 overlapping / clear: the requests that overlapped a GC cycle and those that did not.", gctail.Shifts),
	}
	for _, m := range missing {
		t.Notes = append(t.Notes, "No GC tail for "+m+".")
	}
	return t, true
}
