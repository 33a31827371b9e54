package diff

import (
	"bytes"
	"strings"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
)

func run(id string, p99s map[string][]float64) *report.Report {
	r := &report.Report{Run: id}
	for key, vs := range p99s {
		parts := strings.Split(key, ".")
		for i, v := range vs {
			r.Cells = append(r.Cells, report.Cell{Key: cellid.Key{Proxy: parts[0], Origin: parts[1], Scenario: "simple", Tier: "quick", Repeat: i + 1},
				RPS: report.Num(1000), ErrorRatio: 0, Latency: report.Latency{P50: report.Num(v / 2), P99: report.Num(v)},
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
		opts    func(*Options)
		verdict string
		gate    bool
		p       float64
	}{
		{"regressed", []float64{.010, .011, .012, .013, .014}, []float64{.020, .021, .022, .023, .024}, nil, Regressed, true, 8.84222298521496e-05},
		{"improved", []float64{.020, .021, .022, .023, .024}, []float64{.010, .011, .012, .013, .014}, nil, Improved, false, 8.84222298521496e-05},
		{"within threshold", []float64{.010, .0101, .0102}, []float64{.0102, .0103, .0101}, nil, Unchanged, false, -1},
		// +12 %, beyond both runs' spread floors (9.8 %), but Welch's p is 0.054.
		{"beyond the floor, not significant", base, up12, nil, NotSignificant, false, 0.0537946550979610},
		// Within the noise floor (the spread of these repeats is ±68 %).
		{"noisy", []float64{.010, .030, .012, .028, .011}, []float64{.013, .029, .014, .027, .012}, nil, Unchanged, false, -1},
		{"one repeat", []float64{.010}, []float64{.020}, nil, RegressedUnconfirmed, true, -1},
		{"one repeat, significance required", []float64{.010}, []float64{.020}, func(o *Options) { o.RequireSignificance = true }, RegressedUnconfirmed, false, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := DefaultOptions
			o.Metrics = []string{"p99_seconds"}
			if tc.opts != nil {
				tc.opts(&o)
			}
			res := Compare(run("A", map[string][]float64{"nginx.fast": tc.a}), run("B", map[string][]float64{"nginx.fast": tc.b}), o)
			if len(res.Rows) != 1 {
				t.Fatalf("%d rows", len(res.Rows))
			}
			row := res.Rows[0]
			if row.Verdict != tc.verdict || row.Gate != tc.gate {
				t.Fatalf("verdict %q gate %v, want %q %v (row %+v)", row.Verdict, row.Gate, tc.verdict, tc.gate, row)
			}
			if tc.p >= 0 && (row.P < tc.p-1e-9 || row.P > tc.p+1e-9) {
				t.Fatalf("p = %v, want %v", row.P, tc.p)
			}
			if (res.Regressions > 0) != tc.gate {
				t.Fatalf("regressions %d, gate %v", res.Regressions, tc.gate)
			}
			var b bytes.Buffer
			if err := res.Markdown(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "| nginx.fast.simple.quick | p99_seconds |") {
				t.Fatalf("markdown lacks the row:\n%s", b.String())
			}
			if strings.Contains(tc.verdict, "too few") != strings.Contains(b.String(), "no spread to test against") {
				t.Fatalf("too-few-repeats note mismatch:\n%s", b.String())
			}
		})
	}
}

func TestCompareMissingCells(t *testing.T) {
	t.Parallel()
	a := run("A", map[string][]float64{"nginx.fast": {.01}, "caddy.go": {.01}})
	b := run("B", map[string][]float64{"nginx.fast": {.01}, "traefik.go": {.01}})
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
