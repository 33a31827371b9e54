package report

import (
	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"strings"
	"testing"
	"time"
)

func baseCell() Cell {
	c := Cell{Key: cellid.Key{Proxy: "nginx"}, DurationS: 10, ServerSide: true, Scrapes: 10, Codes: map[string]int64{"200": 10000},
		InFlightMean: 10, TargetRateRPS: 0,
		Latency:    Latency{Source: "native", Mean: 0.01, P99: 0.05},
		ProxyRes:   Resources{CPUMeanCores: 1, MemMeanBytes: 1e7},
		LoadgenCPU: LoadgenCPU{MeanCores: 0.5, PeakCores: 0.6, LimitCores: 2, ThrottledShare: 0, RunDelayShare: 0.01, PressureShare: NaN(), LagP99Seconds: NaN()},
		Missed:     NaN(), Capped: NaN()}
	Classify(&c) // 1000 req/s x 10 ms = 10 in flight: consistent
	return c
}

func TestJudge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mut     func(*Cell)
		goProxy bool
		verdict string
		flags   string
	}{
		{"clean", func(*Cell) {}, false, Valid, ""},
		{"failed", func(c *Cell) { c.Failed = true }, false, Invalid, FlagFailed},
		{"loadgen cpu", func(c *Cell) { c.LoadgenCPU.MeanCores = 1.8 }, false, Invalid, FlagLoadgenBound},
		{"open loop short", func(c *Cell) { c.TargetRateRPS = 1100 }, false, Invalid, FlagLoadgenBound},
		{"open loop met", func(c *Cell) { c.TargetRateRPS = 1040 }, false, Valid, ""},
		// Achieved is sent / scheduled: answers that completed after the
		// window (a slow origin) are not the loadgen's shortfall.
		{"every send on time, answers late", func(c *Cell) { c.TargetRateRPS, c.Scheduled, c.Sent = 2000, 20000, 20000 }, false, Valid, ""},
		{"sends short of the schedule", func(c *Cell) { c.TargetRateRPS, c.Scheduled, c.Sent = 1000, 10000, 9400 }, false, Invalid, FlagLoadgenBound},
		{"errors", func(c *Cell) { c.Codes["502"] = 200; Classify(c) }, false, Invalid, FlagErrors},
		// A request never answered times out after the window: a late error.
		{"late timeouts", func(c *Cell) { c.Late, c.LateReasons = 30, map[string]int64{"timeout": 30}; Classify(c) }, false, Invalid, FlagLateErrors},
		{"late answers, no late errors", func(c *Cell) { c.Late, c.LateCodes = 30, map[string]int64{"200": 30}; Classify(c) }, false, Valid, ""},
		{"late errors within 0.1 %", func(c *Cell) { c.Late, c.LateCodes = 5, map[string]int64{"502": 5}; Classify(c) }, false, Valid, ""},
		{"429 apart from errors", func(c *Cell) { c.Scenario = "ratelimit"; c.Codes["429"] = 3000; Classify(c); c.InFlightMean = 13 }, false, Valid, ""},
		{"wrong origin", func(c *Cell) { c.WrongOrigin = 1 }, false, Invalid, FlagMisrouted},
		{"few requests", func(c *Cell) { c.Codes["200"] = 50; Classify(c); c.InFlightMean = 0.05 }, false, Invalid, FlagTooFewSamples},
		{"few scrapes", func(c *Cell) { c.Scrapes = 2 }, false, Invalid, FlagTooFewSamples},
		{"little", func(c *Cell) { c.InFlightMean = 12 }, false, Suspect, FlagLittle},
		{"little within 10 %", func(c *Cell) { c.InFlightMean = 10.9 }, false, Valid, ""},
		{"no gc for go proxy", func(*Cell) {}, true, Suspect, FlagMissing},
		{"no cpu", func(c *Cell) { c.ProxyRes.CPUMeanCores = NaN() }, false, Suspect, FlagMissing},
		{"unexpected 404", func(c *Cell) { c.Codes["404"] = 20; Classify(c) }, false, Invalid, FlagUnexpectedStatus},
		{"unexpected within 0.1 %", func(c *Cell) { c.Codes["404"] = 10; Classify(c) }, false, Valid, ""},
		{"5xx are errors, not unexpected", func(c *Cell) { c.Codes["503"] = 50; Classify(c) }, false, Valid, ""},
		{"429 unexpected for simple", func(c *Cell) { c.Codes["429"] = 300; Classify(c) }, false, Invalid, FlagUnexpectedStatus},
		{"429 expected for ratelimit", func(c *Cell) { c.Scenario = "ratelimit"; c.Codes["429"] = 300; Classify(c); c.InFlightMean = 10.3 }, false, Valid, ""},
		{"route broken: misrouted only", func(c *Cell) { c.Codes = map[string]int64{"404": 10000}; Classify(c) }, false, Invalid, FlagMisrouted},
		{"401 dominant for auth is fine", func(c *Cell) { c.Scenario = "auth"; c.Codes = map[string]int64{"401": 10000}; Classify(c) }, false, Valid, ""},
		{"loadgen peak", func(c *Cell) { c.LoadgenCPU.PeakCores = 1.96 }, false, Invalid, FlagLoadgenBound},
		{"loadgen peak under", func(c *Cell) { c.LoadgenCPU.PeakCores = 1.95 }, false, Valid, ""},
		{"throttled", func(c *Cell) { c.LoadgenCPU.ThrottledShare = 0.11 }, false, Invalid, FlagLoadgenBound},
		{"run delay", func(c *Cell) { c.LoadgenCPU.RunDelayShare = 0.11 }, false, Suspect, FlagLoadgenBound},
		// An open loop's measured lag is the direct reading of late sends.
		{"run delay, open loop on time", func(c *Cell) { c.LoadgenCPU.RunDelayShare, c.LoadgenCPU.LagP99Seconds = 0.2, 0.004 }, false, Valid, ""},
		{"run delay, open loop late", func(c *Cell) { c.LoadgenCPU.RunDelayShare, c.LoadgenCPU.LagP99Seconds = 0.2, 0.02 }, false, Suspect, FlagLoadgenBound},
		{"pressure", func(c *Cell) { c.LoadgenCPU.PressureShare = 0.26 }, false, Suspect, FlagLoadgenBound},
		{"pressure 24 %", func(c *Cell) { c.LoadgenCPU.PressureShare = 0.24 }, false, Valid, ""},
		{"lag", func(c *Cell) { c.LoadgenCPU.LagP99Seconds = 0.0101 }, false, Suspect, FlagLoadgenBound},
		{"missed", func(c *Cell) { c.TargetRateRPS, c.Scheduled, c.Sent, c.Missed = 1000, 10000, 9800, 200 }, false, Invalid, FlagLoadgenBound},
		{"missed 1 %", func(c *Cell) { c.TargetRateRPS, c.Scheduled, c.Sent, c.Missed = 1000, 10000, 9900, 100 }, false, Valid, ""},
		// The shortfall of a capped open loop is the proxy's, not the loadgen's.
		{"capped", func(c *Cell) { c.TargetRateRPS, c.Scheduled, c.Sent, c.Capped = 1200, 12000, 12000, 500 }, false, Suspect, FlagSUTSaturated},
		{"capped 1 %", func(c *Cell) { c.TargetRateRPS, c.Scheduled, c.Sent, c.Capped = 1000, 10000, 10000, 100 }, false, Valid, ""},
		// A stage cell's target is its schedule's average.
		{"stages short of the average", func(c *Cell) { c.TargetRateRPS = 1060 }, false, Invalid, FlagLoadgenBound},
		{"late does not inflate rps", func(c *Cell) { c.Late = 5000; Classify(c) }, false, Valid, ""},
		// A closed loop's goodput (1000 req/s) is a saturation claim: at 80
		// % of the instrument's ceiling or above, the loadgen may be the limit.
		{"closed loop at the ceiling", func(c *Cell) { c.CeilingRPS = 1250 }, false, Invalid, FlagCeiling},
		{"closed loop under the ceiling", func(c *Cell) { c.CeilingRPS = 1251 }, false, Valid, ""},
		{"no ceiling measured", func(c *Cell) { c.CeilingRPS = NaN() }, false, Valid, ""},
		// An open loop's claim is its offered rate.
		{"open loop offered at the ceiling", func(c *Cell) { c.TargetRateRPS, c.CeilingRPS = 1040, 1300 }, false, Invalid, FlagCeiling},
		{"open loop offered under the ceiling", func(c *Cell) { c.TargetRateRPS, c.CeilingRPS = 1040, 1301 }, false, Valid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := baseCell()
			tc.mut(&c)
			Judge(&c, DefaultThresholds, tc.goProxy)
			var codes []string
			for _, f := range c.Validity.Flags {
				codes = append(codes, f.Code)
			}
			if c.Validity.Verdict != tc.verdict || strings.Join(codes, " ") != tc.flags {
				t.Fatalf("verdict %s flags %v, want %s [%s]", c.Validity.Verdict, c.Validity.Flags, tc.verdict, tc.flags)
			}
		})
	}
}

func TestCheckSLO(t *testing.T) {
	t.Parallel()
	c := baseCell()
	CheckSLO(&c, SLO{P99: 40 * time.Millisecond, ErrorRatio: 0.01})
	if c.SLOPassed() || c.SLO[0].Pass || !c.SLO[1].Pass {
		t.Fatalf("p99 50 ms against 40 ms must fail, errors pass: %+v", c.SLO)
	}
	c.Latency.Exact = &Exact{P99: 0.03}
	CheckSLO(&c, SLO{P99: 40 * time.Millisecond})
	if !c.SLOPassed() || !strings.Contains(c.SLO[0].Note, "exact") {
		t.Fatalf("exact p99 30 ms must pass: %+v", c.SLO)
	}
	// Slow upstream: 2.03 s p99 behind a 2 s origin delay is 30 ms of proxy.
	c.Scenario = "slow"
	c.Latency.Exact = &Exact{P99: 2.03}
	c.ScenarioData = &manifest.ScenarioData{DelayS: 2}
	CheckSLO(&c, SLO{P99: 40 * time.Millisecond})
	if !c.SLOPassed() || !strings.Contains(c.SLO[0].Note, "delay") {
		t.Fatalf("p99 minus the 2 s delay is 30 ms and must pass: %+v", c.SLO)
	}
	c.Latency.Exact = &Exact{P99: 2.05}
	CheckSLO(&c, SLO{P99: 40 * time.Millisecond})
	if c.SLOPassed() {
		t.Fatalf("p99 minus the 2 s delay is 50 ms and must fail: %+v", c.SLO)
	}
}

func TestJudgeReasons(t *testing.T) {
	t.Parallel()
	c := baseCell()
	c.Codes = map[string]int64{"200": 7280, "404": 3120}
	Classify(&c)
	c.InFlightMean = c.RPS * c.Latency.Mean
	Judge(&c, DefaultThresholds, false)
	if len(c.Validity.Flags) != 1 || !strings.Contains(c.Validity.Flags[0].Reason, "404: 3120 of 10400 (30.0 %)") {
		t.Errorf("flags %+v, want one unexpected_status naming 404: 3120 of 10400 (30.0 %%)", c.Validity.Flags)
	}
	if float64(c.GoodputRPS) != 728 || float64(c.RPS) != 1040 || c.Unexpected != 3120 {
		t.Errorf("goodput %v rps %v unexpected %d, want 728, 1040, 3120", c.GoodputRPS, c.RPS, c.Unexpected)
	}
	// Late completions stay out of the rates and get their share.
	c = baseCell()
	c.Late = 2500
	Classify(&c)
	if float64(c.RPS) != 1000 || float64(c.LateShare) != 0.2 {
		t.Errorf("rps %v late share %v, want 1000 and 0.2", c.RPS, c.LateShare)
	}
}

// The instrument_ceiling reason names both numbers and the share.
func TestJudgeCeilingReason(t *testing.T) {
	t.Parallel()
	c := baseCell()
	c.CeilingRPS = 1150
	Judge(&c, DefaultThresholds, false)
	want := "closed-loop goodput 1000 req/s is 87 % of the loadgen's own ceiling 1150 req/s against a trivial server under the same placement: the instrument, not the proxy, may be the limit"
	if len(c.Validity.Flags) != 1 || c.Validity.Flags[0].Reason != want {
		t.Errorf("flags %+v, want one instrument_ceiling: %s", c.Validity.Flags, want)
	}
}

// TestJudgePrometheusGap words prometheus_gap: the evidence, where the
// numbers come from, what is unknown, and the severity; a loadgen gap
// replaces no_server_side_series and keeps too_few_samples quiet, an
// exporter gap keeps missing_metrics from naming what it explains.
func TestJudgePrometheusGap(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 10, 1, 1, 500e6, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// The loadgen not scraped at all over (10:01:01.5, 10:01:09]; the last
	// scrape before at 10:00:58.75, the next at 10:01:20.75.
	lgOut := &ScrapeCoverage{Job: "loadgen", From: t0, To: at(7.5), Scrapes: 0, Expected: 8, IntervalS: 1, BaselineS: 2,
		AfterFrom: at(6), GapS: 22, GapFrom: at(-2.75), GapTo: at(7.5), AllowedGapS: 3.5}
	// The exporter scraped twice, then nothing for 7 s up to the window's end.
	exGap := &ScrapeCoverage{Job: "exporter", From: at(1), To: at(6), Scrapes: 2, Expected: 5, IntervalS: 1, BaselineS: 5, Baseline: true,
		After: false, AfterFrom: at(0.5), GapS: 6, GapFrom: at(0), GapTo: at(6), AllowedGapS: 5.5}
	// A loadgen gap without any hole long enough: only the scrape after the
	// traffic is missing.
	lgAfter := &ScrapeCoverage{Job: "loadgen", From: t0, To: at(7.5), Scrapes: 6, Expected: 8, IntervalS: 1, BaselineS: 2, Baseline: true,
		AfterFrom: at(6), GapS: 2.25, GapFrom: at(5.25), GapTo: at(7.5), AllowedGapS: 3.5}
	manifestCounts := func(c *Cell) {
		c.ServerSide, c.Scrapes, c.InFlightMean, c.Latency.Source = false, 0, NaN(), ""
		c.ProxyRes.MemMeanBytes, c.ProxyRes.CPUMeanCores = NaN(), NaN()
		c.Latency.Exact = &Exact{P99: 0.05}
		c.LoadgenCPU.Source = LoadgenCPUEdges
	}
	for _, tc := range []struct {
		name    string
		mut     func(*Cell)
		goProxy bool
		verdict string
		flags   string
		reason  string
	}{
		{"loadgen gap, manifest counts", func(c *Cell) { manifestCounts(c); c.PrometheusGap = &Gap{Loadgen: lgOut} }, true, Suspect, "prometheus_gap/suspect",
			"Prometheus scraped the loadgen 0 times between 10:01:01 and 10:01:09 (expected about 8; 22 s without one from 10:00:58 to 10:01:09, > 3.5 s): " +
				"counts, exact latency and edge CPU come from the manifest; proxy CPU, memory, GC and in-flight are unknown"},
		{"loadgen gap, no manifest", func(c *Cell) {
			manifestCounts(c)
			c.Latency.Exact, c.LoadgenCPU.Source, c.Codes = nil, "", map[string]int64{}
			Classify(c)
			c.PrometheusGap = &Gap{Loadgen: lgAfter}
		}, false, Invalid, "prometheus_gap/invalid",
			"Prometheus scraped the loadgen 6 times between 10:01:01 and 10:01:09 (expected about 8; none between 10:01:07 and 10:01:09): " +
				"no manifest holds its counts, so the cell has none; proxy CPU, memory and in-flight are unknown"},
		// A loadgen worker's scrapes (of a cell several ran) fell short:
		// named by its index; the cell's traffic comes from the manifest,
		// and no_server_side_series does not fire beside it.
		{"loadgen worker gap", func(c *Cell) {
			manifestCounts(c)
			one := 1
			w := *lgAfter
			w.Job, w.Worker = "loadgen_worker", &one
			c.PrometheusGap = &Gap{Workers: []*ScrapeCoverage{&w}}
		}, false, Suspect, "prometheus_gap/suspect",
			"Prometheus scraped the loadgen worker 1 6 times between 10:01:01 and 10:01:09 (expected about 8; none between 10:01:07 and 10:01:09): " +
				"counts, exact latency and edge CPU come from the manifest; proxy CPU, memory and in-flight are unknown"},
		{"both", func(c *Cell) { manifestCounts(c); c.PrometheusGap = &Gap{Loadgen: lgOut, Exporter: exGap} }, false, Suspect, "prometheus_gap/suspect",
			"Prometheus scraped the loadgen 0 times between 10:01:01 and 10:01:09 (expected about 8; 22 s without one from 10:00:58 to 10:01:09, > 3.5 s) " +
				"and the exporter 2 times between 10:01:02 and 10:01:07 (expected about 5; 6 s without one from 10:01:01 to 10:01:07, > 5.5 s): " +
				"counts, exact latency and edge CPU come from the manifest; proxy CPU, memory and in-flight are unknown"},
		// Traffic from Prometheus; the exporter's series the gap explains
		// are not missing_metrics, the latency histogram still would be.
		{"exporter gap", func(c *Cell) {
			c.ProxyRes.MemMeanBytes = NaN()
			c.PrometheusGap = &Gap{Exporter: exGap}
		}, true, Suspect, "prometheus_gap/suspect",
			"Prometheus scraped the exporter 2 times between 10:01:02 and 10:01:07 (expected about 5; 6 s without one from 10:01:01 to 10:01:07, > 5.5 s): memory and GC are unknown"},
		{"exporter gap, no latency histogram", func(c *Cell) {
			c.ProxyRes.MemMeanBytes, c.Latency.Source = NaN(), ""
			c.PrometheusGap = &Gap{Exporter: exGap}
		}, false, Suspect, "prometheus_gap/suspect missing_metrics/suspect", ""},
		{"outcome unknown", func(c *Cell) {
			manifestCounts(c)
			c.Latency.Exact, c.Codes = nil, map[string]int64{}
			Classify(c)
			c.PrometheusGap = &Gap{OutcomeUnknown: true}
		}, false, Invalid, "prometheus_gap/invalid", "outcome unknown: Prometheus missed the end of this window and there is no manifest"},
		// Without a gap, a window Prometheus holds nothing of is still
		// no_server_side_series.
		{"no series, no gap", func(c *Cell) { manifestCounts(c) }, false, Suspect, "no_server_side_series/suspect", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := baseCell()
			tc.mut(&c)
			Judge(&c, DefaultThresholds, tc.goProxy)
			var codes []string
			for _, f := range c.Validity.Flags {
				codes = append(codes, f.Code+"/"+f.Severity)
			}
			if c.Validity.Verdict != tc.verdict || strings.Join(codes, " ") != tc.flags {
				t.Fatalf("verdict %s flags %+v, want %s [%s]", c.Validity.Verdict, c.Validity.Flags, tc.verdict, tc.flags)
			}
			if tc.reason != "" && c.Validity.Flags[0].Reason != tc.reason {
				t.Errorf("reason\n%q, want\n%q", c.Validity.Flags[0].Reason, tc.reason)
			}
		})
	}
}
