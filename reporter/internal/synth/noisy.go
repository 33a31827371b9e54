package synth

import (
	"math"
	"math/rand/v2"
	"time"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
)

// Noisy is a run of judged report cells measured the way the lab measures
// them, with noise whose size the test sets: repeats interleaved across
// proxies in rounds (A B C D, A B C D), the A/A control (a copy of the
// first proxy x first origin) at the end of each round, and optionally an
// arm alternating with the plan's own cells cell by cell, ABBA by repeat.
// Each number is its truth x the host's slowdown at that moment x a
// lognormal draw of the cell's own noise.
type Noisy struct {
	Seed    uint64
	Run     string
	Proxies []string // default nginx, haproxy
	Origins []string // default fast
	Repeats int      // default 5
	// Goodput and P99 are each proxy's truth (defaults 10000 req/s and
	// 2 ms, the second proxy 10 % slower).
	Goodput, P99 map[string]float64
	// CV is the cell-to-cell noise (the sigma of the log): goodput, and
	// latency (p50 and p99 draw their own).
	CV, LatencyCV float64
	// Shift slows the whole run (between-run drift): goodput / (1+Shift),
	// latency x (1+Shift). Drift is the host's slowdown across the run, a
	// linear ramp from -Drift/2 at its first cell to +Drift/2 at its last.
	Shift, Drift float64
	// Control adds the A/A control.
	Control bool
	// Arm adds an arm (cellid.ArmCandidate, cellid.ArmUnobserved) with the
	// true change ArmGoodput and ArmP99 (factors; 0 = 1).
	Arm                string
	ArmGoodput, ArmP99 float64
}

// Report builds the run's report (cells judged, groups, noise floor).
// Unobserved cells are what a run with the observability stack paused
// leaves: a gap in Prometheus's scrapes of the loadgen and the exporter,
// so their counts, exact latency and edge CPU come from the manifest and
// Prometheus's estimates are unknown.
func (n Noisy) Report() *report.Report {
	if len(n.Proxies) == 0 {
		n.Proxies = []string{"nginx", "haproxy"}
	}
	if len(n.Origins) == 0 {
		n.Origins = []string{"fast"}
	}
	if n.Repeats == 0 {
		n.Repeats = 5
	}
	rng := rand.New(rand.NewPCG(n.Seed, 0x5eed))
	type plan struct {
		proxy, origin, arm string
		repeat             int
	}
	var order []plan
	for rep := 1; rep <= n.Repeats; rep++ {
		for _, p := range n.Proxies {
			for _, o := range n.Origins {
				pair := []string{""}
				if n.Arm != "" {
					pair = []string{"", n.Arm}
					if rep%2 == 0 { // ABBA: A B in odd repeats, B A in even ones
						pair = []string{n.Arm, ""}
					}
				}
				for _, arm := range pair {
					order = append(order, plan{p, o, arm, rep})
				}
			}
		}
		if n.Control {
			order = append(order, plan{n.Proxies[0], n.Origins[0], cellid.ArmControl, rep})
		}
	}
	r := &report.Report{Schema: report.SchemaVersion, Run: n.Run, Thresholds: report.DefaultThresholds,
		Sources: report.Sources{PrometheusOK: true, Manifest: true, Discovery: "prometheus"}}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const dur = 5.0
	for i, pl := range order {
		slow := (1 + n.Shift) * (1 + n.Drift*(float64(i)/math.Max(1, float64(len(order)-1))-0.5))
		good := n.truth(n.Goodput, pl.proxy, 10000, 1/1.1) / slow * math.Exp(n.CV*rng.NormFloat64())
		p99 := n.truth(n.P99, pl.proxy, 0.002, 1.1) * slow * math.Exp(n.LatencyCV*rng.NormFloat64())
		p50 := p99 / 3 * math.Exp(n.LatencyCV*rng.NormFloat64())
		if pl.arm == n.Arm && n.Arm != "" {
			good *= factor(n.ArmGoodput)
			p99 *= factor(n.ArmP99)
			p50 *= factor(n.ArmP99)
		}
		start := t0.Add(time.Duration(i) * 8 * time.Second)
		c := report.Cell{Key: cellid.NewArm(pl.proxy, pl.origin, "simple", "quick", pl.arm, pl.repeat),
			Start: start, End: start.Add(dur * time.Second), DurationS: dur, Concurrency: 50, TargetRateRPS: 0,
			ServerSide: true, Scrapes: 5, Codes: map[string]int64{"200": int64(math.Round(good * dur))}, ErrorReasons: map[string]int64{},
			Missed: report.NaN(), Queued: report.NaN(), Capped: report.NaN(), InFlightMean: report.NaN(),
			Latency: report.Latency{Source: "native", Count: int64(good * dur), Mean: report.Num(p50 * 1.1),
				P50: report.Num(p50 * 1.02), P90: report.NaN(), P95: report.NaN(), P99: report.Num(p99 * 1.03), P999: report.NaN(), Max: report.NaN(),
				Exact: &report.Exact{Mean: report.Num(p50 * 1.1), P50: report.Num(p50), P90: report.NaN(), P95: report.NaN(), P99: report.Num(p99),
					P999: report.NaN(), Max: report.NaN()}},
			ProxyRes: report.Resources{CPUMeanCores: 0.9, CPUPeakCores: 1, MemMeanBytes: 2e7, MemPeakBytes: 2.2e7, MemSlopeMBPerMin: 0},
			LoadgenCPU: report.LoadgenCPU{Source: report.LoadgenCPUEdges, MeanCores: 0.4, PeakCores: 0.5, LimitCores: 1,
				ThrottledShare: 0, RunDelayShare: 0.01, PressureShare: report.NaN(), LagP99Seconds: report.NaN()}}
		c.SetProxyCPU(report.Num(0.9*dur), report.ProxyCPUEdges)
		report.Classify(&c)
		if pl.arm == cellid.ArmUnobserved {
			unobserved(&c)
		}
		report.Judge(&c, r.Thresholds, false)
		r.Cells = append(r.Cells, c)
	}
	r.Start, r.End = r.Cells[0].Start, r.Cells[len(r.Cells)-1].End
	r.Groups = report.BuildGroups(r.Cells)
	report.MeasureNoise(r)
	report.Tally(r)
	return r
}

// unobserved makes c what a window without Prometheus leaves: no
// server-side numbers, the evidence of the gap, the manifest's counts,
// exact latency and edge CPU.
func unobserved(c *report.Cell) {
	n := report.NaN()
	c.ServerSide, c.Scrapes = false, 0
	c.Latency.Source, c.Latency.P50, c.Latency.P99 = "", n, n
	c.ProxyRes.CPUPeakCores, c.ProxyRes.MemMeanBytes, c.ProxyRes.MemPeakBytes, c.ProxyRes.MemSlopeMBPerMin = n, n, n, n
	cov := func(job string, from, to time.Time) *report.ScrapeCoverage {
		return &report.ScrapeCoverage{Job: job, From: from, To: to, Scrapes: 0, Expected: int(to.Sub(from).Seconds()), IntervalS: 1,
			BaselineS: 2, AfterFrom: c.End, GapS: report.Num(to.Sub(from).Seconds() + 2), GapFrom: from.Add(-2 * time.Second), GapTo: to, AllowedGapS: 3.5}
	}
	c.PrometheusGap = &report.Gap{Loadgen: cov("loadgen", c.Start.Add(-time.Second), c.End.Add(1500*time.Millisecond)),
		Exporter: cov("exporter", c.Start, c.End)}
}

func (n Noisy) truth(m map[string]float64, proxy string, def, second float64) float64 {
	if v, ok := m[proxy]; ok {
		return v
	}
	if len(n.Proxies) > 1 && proxy == n.Proxies[1] {
		return def * second
	}
	return def
}

func factor(f float64) float64 {
	if f == 0 {
		return 1
	}
	return f
}
