package diff

import (
	"bytes"
	"strings"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/reporter/internal/report"
)

// run is a report of the plan's own cells, each key's repeats with the
// given p99 (p50 half of it); rate is the offered rate (0: a closed loop,
// where p50 and p99 are shown, never gated).
func run(id string, rate float64, p99s map[string][]float64) *report.Report {
	r := &report.Report{Run: id}
	for key, vs := range p99s {
		parts := strings.Split(key, ".")
		for i, v := range vs {
			r.Cells = append(r.Cells, report.Cell{Key: cellid.Key{Proxy: parts[0], Origin: parts[1], Scenario: "simple", Tier: "quick", Repeat: i + 1},
				TargetRateRPS: report.Num(rate), RPS: report.Num(1000), ErrorRatio: 0, Latency: report.Latency{P50: report.Num(v / 2), P99: report.Num(v)},
				ProxyRes: report.Resources{CPUMeanCores: 1}, Validity: report.Validity{Verdict: report.Valid}})
		}
	}
	return r
}

func TestCompare(t *testing.T) {
	t.Parallel()
	// p values: Welch's t test on the logs, checked against mpmath 1.3.
	base := []float64{.0100, .0110, .0090, .0105, .0095}
	up12 := make([]float64, len(base))
	for i, v := range base {
		up12[i] = v * 1.12
	}
	tests := []struct {
		name    string
		a, b    []float64
		rate    float64 // 0: closed loop
		outcome decide.Outcome
		gate    bool
		p       float64
	}{
		// p99 about 2x at a fixed offered rate, 5 repeats a side: worse
		// by more than 5 %, and p99 gates an open loop.
		{"worse", []float64{.010, .011, .012, .013, .014}, []float64{.020, .021, .022, .023, .024}, 1000, decide.Worse, true, 8.84222298521496e-05},
		{"better", []float64{.020, .021, .022, .023, .024}, []float64{.010, .011, .012, .013, .014}, 1000, decide.Better, false, 8.84222298521496e-05},
		// The same 2x in a closed loop: answered worse, but only goodput
		// gates a closed loop.
		{"worse, closed loop", []float64{.010, .011, .012, .013, .014}, []float64{.020, .021, .022, .023, .024}, 0, decide.Worse, false, 8.84222298521496e-05},
		// A change of about 1 % with tight repeats: inside ±5 %.
		{"equivalent", []float64{.010, .0101, .0102}, []float64{.0102, .0103, .0101}, 1000, decide.Equivalent, false, -1},
		// +12 %, beyond the margin, but Welch's p is 0.054: the interval
		// holds 0 and 5 % alike.
		{"beyond the margin, not resolved", base, up12, 1000, decide.Unresolved, false, 0.0537946550979610},
		// The spread of these repeats is ±68 %: the interval straddles
		// both margins.
		{"noisy", []float64{.010, .030, .012, .028, .011}, []float64{.013, .029, .014, .027, .012}, 1000, decide.Unresolved, false, -1},
		// One repeat a side: no spread, no interval, never a gate.
		{"one repeat", []float64{.010}, []float64{.020}, 1000, decide.NoData, false, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions
			o.Metrics = []string{"p99_seconds"}
			res := Compare(run("A", tc.rate, map[string][]float64{"nginx.fast": tc.a}), run("B", tc.rate, map[string][]float64{"nginx.fast": tc.b}), o)
			if len(res.Rows) != 1 {
				t.Fatalf("%d rows", len(res.Rows))
			}
			row := res.Rows[0]
			if row.Decision.Outcome != tc.outcome || row.Gate != tc.gate {
				t.Fatalf("answer %q gate %v, want %q %v (row %+v)", row.Decision.Outcome, row.Gate, tc.outcome, tc.gate, row)
			}
			if row.Gated != (tc.rate > 0) {
				t.Fatalf("p99 gated %v at rate %g", row.Gated, tc.rate)
			}
			if row.Verdict != row.Decision.String() {
				t.Fatalf("verdict %q, want the decision in words %q", row.Verdict, row.Decision.String())
			}
			if tc.p >= 0 && (row.P < tc.p-1e-9 || row.P > tc.p+1e-9) {
				t.Fatalf("p = %v, want %v", row.P, tc.p)
			}
			if (res.Regressions > 0) != tc.gate {
				t.Fatalf("regressions %d, gate %v", res.Regressions, tc.gate)
			}
			// The row's interval is the decision's (Welch at alpha over the
			// one gated row), and holds the change.
			if tc.outcome != decide.NoData && !(row.CILow == row.Decision.Low && row.CIHigh == row.Decision.High && row.CILow < row.Change && row.Change < row.CIHigh) {
				t.Fatalf("interval [%v, %v] of change %v, decision %+v", row.CILow, row.CIHigh, row.Change, row.Decision)
			}
			var b bytes.Buffer
			if err := res.Markdown(&b); err != nil {
				t.Fatal(err)
			}
			name := "p99_seconds"
			if tc.rate > 0 {
				name = "● p99_seconds"
			}
			if !strings.Contains(b.String(), "| nginx.fast.simple.quick | "+name+" |") {
				t.Fatalf("markdown lacks the row:\n%s", b.String())
			}
			if (tc.outcome == decide.NoData) != strings.Contains(b.String(), "Note: with 1 repeat on a side there is no spread") {
				t.Fatalf("one-repeat note mismatch:\n%s", b.String())
			}
		})
	}
}

// TestCompareMissingMetric: a metric one side never measured is no data,
// never gated, and not explained as too few repeats.
func TestCompareMissingMetric(t *testing.T) {
	t.Parallel()
	a := run("A", 1000, map[string][]float64{"nginx.fast": {.010, .011, .012}})
	b := run("B", 1000, map[string][]float64{"nginx.fast": {.010, .011, .012}})
	for i := range b.Cells {
		b.Cells[i].Latency.P99 = report.NaN()
	}
	o := DefaultOptions
	o.Metrics = []string{"p50_seconds", "p99_seconds"}
	res := Compare(a, b, o)
	if len(res.Rows) != 2 || res.Regressions != 0 {
		t.Fatalf("regressions %d, rows %+v", res.Regressions, res.Rows)
	}
	p99 := res.Rows[1]
	if p99.Verdict != Missing || p99.Gate || p99.Decision.Outcome != decide.NoData {
		t.Fatalf("p99 missing in B: %+v", p99)
	}
	var md bytes.Buffer
	if err := res.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| 3/0 | no data |") || strings.Contains(md.String(), "±0 %") || strings.Contains(md.String(), "Note: with 1 repeat") {
		t.Fatalf("markdown of a missing metric:\n%s", md.String())
	}
}

func TestCompareMissingCells(t *testing.T) {
	t.Parallel()
	a := run("A", 1000, map[string][]float64{"nginx.fast": {.01}, "caddy.go": {.01}})
	b := run("B", 1000, map[string][]float64{"nginx.fast": {.01}, "traefik.go": {.01}})
	res := Compare(a, b, DefaultOptions)
	if len(res.OnlyInA) != 1 || res.OnlyInA[0] != "caddy.go.simple.quick" || len(res.OnlyInB) != 1 || res.OnlyInB[0] != "traefik.go.simple.quick" {
		t.Fatalf("only in A %v, only in B %v", res.OnlyInA, res.OnlyInB)
	}
	// caddy.go is gone from B: a regression; traefik.go is new: listed only.
	if res.Regressions != 1 {
		t.Fatalf("%d regressions, want 1 (the cell missing in B)", res.Regressions)
	}
	st := map[string]KeyRow{}
	for _, k := range res.Keys {
		st[k.Key] = k
	}
	if k := st["caddy.go.simple.quick"]; k.Status != KeyMissing || !k.Gate {
		t.Errorf("caddy.go: %+v, want missing in B and gated", k)
	}
	if k := st["traefik.go.simple.quick"]; k.Status != KeyOnlyInB || k.Gate {
		t.Errorf("traefik.go: %+v, want only in B, not gated", k)
	}
}
