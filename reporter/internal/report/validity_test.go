package report

import (
	"proxybench/internal/manifest"
	"strings"
	"testing"
	"time"
)

func baseCell() Cell {
	c := Cell{Proxy: "nginx", DurationS: 10, ServerSide: true, Scrapes: 10, Codes: map[string]int64{"200": 10000},
		InFlightMean: 10, TargetRateRPS: 0,
		Latency:    Latency{Source: "native", Mean: 0.01, P99: 0.05},
		ProxyRes:   Resources{CPUMeanCores: 1, MemMeanBytes: 1e7},
		LoadgenCPU: LoadgenCPU{MeanCores: 0.5, LimitCores: 2}}
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
		{"errors", func(c *Cell) { c.Codes["502"] = 200; Classify(c) }, false, Invalid, FlagErrors},
		{"429 apart", func(c *Cell) { c.Codes["429"] = 3000; Classify(c); c.InFlightMean = 13 }, false, Valid, ""},
		{"wrong origin", func(c *Cell) { c.WrongOrigin = 1 }, false, Invalid, FlagMisrouted},
		{"few requests", func(c *Cell) { c.Codes["200"] = 50; Classify(c); c.InFlightMean = 0.05 }, false, Invalid, FlagTooFewSamples},
		{"few scrapes", func(c *Cell) { c.Scrapes = 2 }, false, Invalid, FlagTooFewSamples},
		{"little", func(c *Cell) { c.InFlightMean = 12 }, false, Suspect, FlagLittle},
		{"little within 10 %", func(c *Cell) { c.InFlightMean = 10.9 }, false, Valid, ""},
		{"no gc for go proxy", func(*Cell) {}, true, Suspect, FlagMissing},
		{"no cpu", func(c *Cell) { c.ProxyRes.CPUMeanCores = NaN() }, false, Suspect, FlagMissing},
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
