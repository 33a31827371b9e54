package stats

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= tol
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"one", []float64{3}, Summary{N: 1, Mean: 3, Median: 3, Stddev: math.NaN(), CV: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN(), Min: 3, Max: 3}},
		// Textbook sample: mean 5, s = sqrt(32/7), t(7) = 2.364624.
		{"eight", []float64{2, 4, 4, 4, 5, 5, 7, 9}, Summary{N: 8, Mean: 5, Median: 4.5, Stddev: 2.13809,
			CV: 0.427618, CILow: 5 - 1.78746, CIHigh: 5 + 1.78746, Min: 2, Max: 9}},
		{"nan ignored", []float64{1, math.NaN(), 3}, Summary{N: 2, Mean: 2, Median: 2, Stddev: math.Sqrt2,
			CV: math.Sqrt2 / 2, CILow: 2 - 12.7062, CIHigh: 2 + 12.7062, Min: 1, Max: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := Summarize(tc.in)
			if g.N != tc.want.N {
				t.Fatalf("N = %d, want %d", g.N, tc.want.N)
			}
			for _, f := range []struct {
				n    string
				g, w float64
			}{{"mean", g.Mean, tc.want.Mean}, {"median", g.Median, tc.want.Median}, {"stddev", g.Stddev, tc.want.Stddev},
				{"cv", g.CV, tc.want.CV}, {"cilow", g.CILow, tc.want.CILow}, {"cihigh", g.CIHigh, tc.want.CIHigh},
				{"min", g.Min, tc.want.Min}, {"max", g.Max, tc.want.Max}} {
				if !near(f.g, f.w, 1e-4) {
					t.Errorf("%s = %v, want %v", f.n, f.g, f.w)
				}
			}
		})
	}
}

func TestMannWhitney(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		a, b  []float64
		u, p  float64
		exact bool
	}{
		// Exact two-sided p-values: 2 / C(n1+n2, n1) for complete separation.
		{"3v3 separated", []float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0.1, true},
		{"4v4 separated", []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 0, 2.0 / 70, true},
		{"5v5 separated", []float64{10, 9, 8, 7, 6}, []float64{1, 2, 3, 4, 5}, 25, 2.0 / 252, true},
		// scipy.stats.mannwhitneyu([1,3,5],[2,4,6], method="exact"): U=3, p=0.7.
		{"3v3 interleaved", []float64{1, 3, 5}, []float64{2, 4, 6}, 3, 0.7, true},
		// Ties force the normal approximation with tie and continuity correction:
		// ranks of a are 1, 3, 3, 5.5 so U = 2.5; sigma = sqrt(12/12*(8-30/42)); p = erfc(3/sigma/sqrt2).
		{"ties", []float64{1, 2, 2, 3}, []float64{2, 3, 4}, 2.5, 0.26638, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := MannWhitney(tc.a, tc.b)
			if r.U != tc.u || r.Exact != tc.exact || !near(r.P, tc.p, 1e-3) {
				t.Fatalf("got U=%v p=%v exact=%v, want U=%v p=%v exact=%v", r.U, r.P, r.Exact, tc.u, tc.p, tc.exact)
			}
		})
	}
	if m := MannWhitney([]float64{1, 2}, []float64{3, 4}).MinP; !near(m, 1.0/3, 1e-9) {
		t.Fatalf("min p for 2v2 = %v, want 1/3", m)
	}
}

func TestSlopeAndT(t *testing.T) {
	t.Parallel()
	if s := Slope([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}); s != 2 {
		t.Fatalf("slope = %v, want 2", s)
	}
	if s := Slope([]float64{1, 1}, []float64{1, 2}); !math.IsNaN(s) {
		t.Fatalf("slope with one x = %v, want NaN", s)
	}
	for _, c := range []struct {
		df   int
		want float64
	}{{1, 12.7062}, {7, 2.3646}, {30, 2.0423}, {60, 2.0003}, {1000, 1.9623}} {
		if g := TQuantile975(c.df); !near(g, c.want, 1e-4) {
			t.Errorf("t(%d) = %v, want %v", c.df, g, c.want)
		}
	}
}

func FuzzMannWhitney(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, 4.0)
	f.Fuzz(func(t *testing.T, a, b, c, d float64) {
		r := MannWhitney([]float64{a, b}, []float64{c, d})
		if !math.IsNaN(r.P) && (r.P < 0 || r.P > 1) {
			t.Fatalf("p out of range: %v", r.P)
		}
	})
}
