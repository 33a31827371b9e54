package report

import (
	"math"
	"strings"
	"testing"

	"proxybench/internal/cellid"
)

// taxCell is a cell of the fast origin's simple scenario at rate (0: a
// closed loop) with its exact p50 and p99 (µs), requests/s and the
// proxy's mean CPU.
func taxCell(proxy string, repeat int, rate, p50us, p99us, rps, cores float64) Cell {
	k := cellid.NewArm(proxy, "fast", "simple", "2s", "", repeat)
	return Cell{Key: k, Concurrency: 50, TargetRateRPS: Num(rate), RPS: Num(rps), ProxyRes: Resources{CPUMeanCores: Num(cores)},
		Latency: Latency{P50: NaN(), P99: NaN(), Exact: &Exact{P50: Num(p50us / 1e6), P99: Num(p99us / 1e6)}}}
}

// Student-t 0.975 quantiles, from a table (independent of package
// decide's own).
const t975df2, t975df3 = 4.302652729911275, 3.182446305284263

func TestProxyTax(t *testing.T) {
	t.Parallel()
	cells := []Cell{
		// nginx against the direct control at 1000 req/s: p50 +50, +60,
		// +40 µs, p99 +100, +200, +300 µs in rounds 1-3; round 4's direct
		// cell is invalid, so it is not paired, but its CPU counts.
		taxCell("nginx", 1, 1000, 150, 400, 1000, 0.05),
		taxCell("direct", 1, 1000, 100, 300, 1000, math.NaN()),
		taxCell("nginx", 2, 1000, 170, 500, 1000, 0.06),
		taxCell("direct", 2, 1000, 110, 300, 1000, math.NaN()),
		taxCell("nginx", 3, 1000, 130, 600, 1000, 0.04),
		taxCell("direct", 3, 1000, 90, 300, 1000, math.NaN()),
		taxCell("nginx", 4, 1000, 150, 400, 1000, 0.05),
		taxCell("direct", 4, 1000, 1, 1, 1000, math.NaN()),
		// haproxy: round 2 did not sustain the rate (900 < 95 %).
		taxCell("haproxy", 1, 1000, 180, 380, 1000, 0.03),
		taxCell("haproxy", 2, 1000, 900, 9000, 900, 0.03),
		// traefik in a closed loop (the direct cells above are at a rate;
		// this is the same origin, so the load differs, too).
		taxCell("traefik", 1, 0, 500, 900, 8000, 0.8),
	}
	cells[7].Validity = Validity{Verdict: Invalid, Flags: []Flag{{Code: FlagErrors}, {Code: FlagErrors}}}
	aa := taxCell("nginx", 1, 1000, 9, 9, 1000, 9)
	aa.Key = cellid.NewArm("nginx", "fast", "simple", "2s", cellid.ArmControl, 1)
	other := taxCell("caddy", 1, 1000, 9, 9, 1000, 9)
	other.Origin = "go" // no direct cell of go: no row
	cells = append(cells, aa, other)

	got := BuildProxyTax(cells, DefaultThresholds)
	if len(got) != 3 {
		t.Fatalf("%d rows, want nginx, haproxy, traefik: %+v", len(got), got)
	}
	n, h, tr := got[0], got[1], got[2]
	h50 := t975df2 * 10 / math.Sqrt(3)
	h99 := t975df2 * 100 / math.Sqrt(3)
	hCPU := t975df3 * math.Sqrt(200.0/3) / 2 // 50, 60, 40, 50 µs
	if n.Proxy != "nginx" || n.Pairs != 3 || !near(n.RateRPS, 1000) ||
		!nearEst(n.AddedP50, 3, 50, 50-h50, 50+h50) || !nearEst(n.AddedP99, 3, 200, 200-h99, 200+h99) ||
		!nearEst(n.CPUPerRequest, 4, 50, 50-hCPU, 50+hCPU) || !close6(n.DirectP50, 100) || !close6(n.ProxyP50, 150) || !near(n.RPS, 1000) ||
		!n.AddedP50.Excludes0() || n.Note != "" {
		t.Errorf("nginx %+v", n)
	}
	if len(n.Unpaired) != 1 || n.Unpaired[0] != "r4: the direct cell is invalid (errors)" {
		t.Errorf("nginx unpaired %q", n.Unpaired)
	}
	if h.Pairs != 1 || !close6(h.AddedP50.Mean, 80) || h.AddedP50.Low.Known() || h.AddedP50.Excludes0() ||
		len(h.Unpaired) != 1 || !strings.Contains(h.Unpaired[0], "r2: the haproxy cell did not sustain 1000 req/s (900 req/s") {
		t.Errorf("haproxy %+v", h)
	}
	if tr.Pairs != 0 || tr.AddedP50.Mean.Known() || !strings.HasPrefix(tr.Note, "closed loop") || tr.Unpaired != nil ||
		!close6(tr.CPUPerRequest.Mean, 100) || tr.CPUPerRequest.N != 1 {
		t.Errorf("traefik %+v", tr)
	}
	// Without the direct control there is no row.
	if got := BuildProxyTax(cells[8:11], DefaultThresholds); len(got) != 0 {
		t.Errorf("no direct cells: %+v", got)
	}
}

func nearEst(e Estimate, n int, mean, low, high float64) bool {
	return e.N == n && close6(e.Mean, mean) && close6(e.Low, low) && close6(e.High, high)
}

// close6 is a within a millionth of b.
func close6(a Num, b float64) bool {
	return a.Known() && math.Abs(float64(a)-b) <= 1e-6*math.Max(1, math.Abs(b))
}

// The direct control has no proxy: no proxy CPU or memory is missing.
func TestJudgeDirectHasNoProxy(t *testing.T) {
	t.Parallel()
	for proxy, missing := range map[string]bool{"direct": false, "nginx": true} {
		c := taxCell(proxy, 1, 1000, 100, 300, 1000, math.NaN())
		c.ServerSide, c.Requests, c.Scrapes, c.ErrorRatio = true, 4000, 4, 0
		c.Latency.Source = "native"
		c.ProxyRes.MemMeanBytes = NaN()
		c.LoadgenCPU.MeanCores = 0.3
		Judge(&c, DefaultThresholds, false)
		has := false
		for _, f := range c.Validity.Flags {
			has = has || (f.Code == FlagMissing && strings.Contains(f.Reason, "container_"))
		}
		if has != missing {
			t.Errorf("%s: flags %+v, want missing proxy series %v", proxy, c.Validity.Flags, missing)
		}
	}
}
