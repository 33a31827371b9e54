package render

import (
	"fmt"

	"proxybench/reporter/internal/report"
)

// proxyTaxSection is report.ProxyTax: the latency each proxy adds over
// the direct control, pair by round, and its CPU per request. ok is false
// for a run without the direct control.
func proxyTaxSection(r *report.Report) (Section, bool) {
	if len(r.ProxyTax) == 0 {
		return Section{}, false
	}
	sec := Section{Title: "9. What the proxy adds",
		Text: []string{"The direct control measured every origin with no proxy (the loadgen straight to its own port, the same load, in the same rounds as the proxies). " +
			"Added latency = the proxy cell's p50 (p99) minus the direct cell's of the same origin, scenario, tier and round, in µs: the mean over the rounds and its 95 % Student-t interval (– below 2 rounds). " +
			"It is compared only in an open loop, at one offered rate that both cells of a round sustained (requests/s at least " + report.Pct(r.Thresholds.OpenLoopAchieved) + " of it): " +
			"a closed loop's latency depends on the throughput each side reaches, so a closed-loop row shows the CPU per request alone (run an open loop: make bench RATE=...). " +
			"The direct control wins nothing: it is in no winner table or matrix."}}
	t := Table{Caption: "Latency and CPU each proxy adds over going straight to the origin",
		Header: []string{"proxy", "origin / scenario / tier", "rate req/s", "rounds", "direct p50 µs", "proxy p50 µs", "added p50 µs [95 % CI]", "added p99 µs [95 % CI]", "proxy CPU µs/req [95 % CI]", "req/s"},
		Right:  []bool{false, false, true, true, true, true, true, true, true, true}}
	for _, x := range r.ProxyTax {
		rate := "closed loop"
		if x.RateRPS.Known() && x.RateRPS > 0 {
			rate = fmtNum(x.RateRPS, 0)
		}
		t.Rows = append(t.Rows, []Cell{txt(x.Proxy), txt(x.Origin + " / " + x.Scenario + " / " + x.Tier), txt(rate), txt(fmt.Sprint(x.Pairs)),
			txt(fmtNum(x.DirectP50, 0)), txt(fmtNum(x.ProxyP50, 0)), estimateCell(x.AddedP50, 0), estimateCell(x.AddedP99, 0),
			estimateCell(x.CPUPerRequest, 1), txt(fmtNum(x.RPS, 0))})
		if x.Note != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s %s / %s / %s: %s", x.Proxy, x.Origin, x.Scenario, x.Tier, x.Note))
		} else {
			for _, u := range x.Unpaired {
				t.Notes = append(t.Notes, fmt.Sprintf("%s %s / %s / %s, not paired: %s", x.Proxy, x.Origin, x.Scenario, x.Tier, u))
			}
		}
	}
	sec.Tables = append(sec.Tables, t)
	return sec, true
}

// estimateCell is a mean with its interval, "–" when unknown; an interval
// that includes zero is marked suspect (not resolved).
func estimateCell(e report.Estimate, digits int) Cell {
	if !e.Mean.Known() {
		return txt("–")
	}
	if !e.Low.Known() {
		return txt(fmtNum(e.Mean, digits) + " [–]")
	}
	c := txt(fmt.Sprintf("%s [%s, %s]", fmtNum(e.Mean, digits), fmtNum(e.Low, digits), fmtNum(e.High, digits)))
	if !e.Excludes0() {
		c.Class = "suspect"
	}
	return c
}
