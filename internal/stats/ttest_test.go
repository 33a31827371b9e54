package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Reference values from mpmath 1.3 at 30 digits (betainc regularized, and
// the t distribution through it; findroot for the quantiles).

func TestRegIncBeta(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ a, b, x, want float64 }{
		{2, 3, 0.5, 0.6875},
		{0.5, 0.5, 0.3, 0.36901011956554538},
		{5, 0.5, 0.9, 0.31664291502001231},
		{50, 0.5, 0.99, 0.31730439787419737},
		{1.5, 10, 0.02, 0.062650593982969632},
		{100, 100, 0.47, 0.19815420142409227},
		{3, 4, 0, 0},
		{3, 4, 1, 1},
	} {
		if g := RegIncBeta(c.a, c.b, c.x); !near(g, c.want, 1e-13) {
			t.Errorf("I_%v(%v, %v) = %.17g, want %.17g", c.x, c.a, c.b, g, c.want)
		}
	}
	for _, bad := range [][3]float64{{0, 1, 0.5}, {1, -1, 0.5}, {1, 1, 1.5}, {1, 1, math.NaN()}} {
		if g := RegIncBeta(bad[0], bad[1], bad[2]); !math.IsNaN(g) {
			t.Errorf("I_%v(%v, %v) = %v, want NaN", bad[2], bad[0], bad[1], g)
		}
	}
}

func TestTDistribution(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ t, df, want float64 }{
		{2.0, 3, 0.93033701572057841},
		{-1.5, 7.5, 0.087240285293232117},
		{0.5, 1, 0.64758361765043327},
		{10, 2, 0.99507377148833715},
		{3.3, 40, 0.99898059388877578},
		{0, 5, 0.5},
		{math.Inf(1), 5, 1},
	} {
		if g := TCDF(c.t, c.df); !near(g, c.want, 1e-13) {
			t.Errorf("TCDF(%v, %v) = %.17g, want %.17g", c.t, c.df, g, c.want)
		}
		if c.t > 0 && !math.IsInf(c.t, 0) {
			if g := TTwoSidedP(-c.t, c.df); !near(g, 2*(1-c.want), 1e-13) {
				t.Errorf("TTwoSidedP(%v, %v) = %v, want %v", -c.t, c.df, g, 2*(1-c.want))
			}
		}
	}
	for _, c := range []struct{ df, want float64 }{
		{1, 12.7062047361747}, {2, 4.30265272974946}, {4, 2.77644510519779}, {9, 2.26215716279821},
		{30, 2.04227245630124}, {4.37, 2.68614810004089}, {200, 1.97189622363391},
	} {
		if g := TQuantile(0.975, c.df); !near(g, c.want, 1e-9) {
			t.Errorf("TQuantile(0.975, %v) = %.15g, want %.15g", c.df, g, c.want)
		}
		if g := TQuantile(0.025, c.df); !near(g, -c.want, 1e-9) {
			t.Errorf("TQuantile(0.025, %v) = %v, want %v", c.df, g, -c.want)
		}
	}
}

// TestTQuantileInvertsCDF: a property over random degrees of freedom and
// probabilities.
func TestTQuantileInvertsCDF(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		df := 0.5 + 60*rng.Float64()
		p := 0.001 + 0.998*rng.Float64()
		q := TQuantile(p, df)
		if g := TCDF(q, df); !near(g, p, 1e-9) {
			t.Fatalf("TCDF(TQuantile(%v, %v) = %v) = %v", p, df, q, g)
		}
	}
}

func TestOneSampleAndWelch(t *testing.T) {
	t.Parallel()
	w := Welch([]float64{10.2, 9.8, 10.5, 10.1, 9.9}, []float64{11.0, 10.6, 11.4, 10.9, 11.2})
	if w.N != 10 || !near(w.Mean, 0.92, 1e-12) || !near(w.DF, 7.91795017389453, 1e-9) || !near(w.P, 0.00104104154158118, 1e-11) ||
		!near(w.CILow, 0.497800993172254, 1e-9) || !near(w.CIHigh, 1.34219900682775, 1e-9) {
		t.Errorf("Welch 5 v 5 = %+v", w)
	}
	w = Welch([]float64{1, 2, 3, 4}, []float64{2, 4, 6, 8, 10, 12})
	if !near(w.Mean, 4.5, 1e-12) || !near(w.DF, 6.59467097295115, 1e-9) || !near(w.P, 0.0318244437808415, 1e-11) {
		t.Errorf("Welch 4 v 6 = %+v", w)
	}
	o := OneSample([]float64{0.05, 0.02, 0.08, -0.01, 0.04})
	if o.N != 5 || o.DF != 4 || !near(o.Mean, 0.036, 1e-12) || !near(o.P, 0.0747864185498709, 1e-11) {
		t.Errorf("OneSample = %+v", o)
	}
	for name, r := range map[string]TTest{
		"one value":      OneSample([]float64{0.3}),
		"welch 1 v 3":    Welch([]float64{1}, []float64{1, 2, 3}),
		"welch empty":    Welch(nil, []float64{1, 2}),
		"paired too few": PairedLog([]float64{1, -1}, []float64{2, 2}),
	} {
		if !math.IsNaN(r.P) || !math.IsNaN(r.CILow) {
			t.Errorf("%s: %+v, want no test (NaN p and interval)", name, r)
		}
	}
	// Every difference alike: a zero-width interval.
	if r := OneSample([]float64{0, 0, 0}); r.P != 1 || r.CILow != 0 || r.CIHigh != 0 {
		t.Errorf("no difference at all: %+v", r)
	}
	if r := OneSample([]float64{0.1, 0.1, 0.1}); r.P > 1e-20 || !near(r.CILow, 0.1, 1e-12) {
		t.Errorf("the same difference every time: %+v", r)
	}
	if r := Welch([]float64{5, 5}, []float64{5, 5, 5}); r.P != 1 || r.DF != 3 {
		t.Errorf("Welch of constants: %+v", r)
	}
}

func TestLogTests(t *testing.T) {
	t.Parallel()
	// b is a exactly 20 % higher, pair by pair: no spread in the ratios.
	a := []float64{100, 120, 90, 110}
	b := []float64{120, 144, 108, 132}
	p := PairedLog(a, b).Ratio()
	if !near(p.Mean, 0.2, 1e-12) || p.P > 1e-20 || !near(p.CILow, 0.2, 1e-12) {
		t.Errorf("PairedLog of a 20 %% rise = %+v", p)
	}
	// A non-positive value drops its pair.
	if p := PairedLog([]float64{100, 0, 90}, []float64{110, 5, 99}); p.N != 2 {
		t.Errorf("PairedLog kept %d pairs, want 2", p.N)
	}
	w := WelchLog(a, b).Ratio()
	if !near(w.Mean, 0.2, 1e-12) || w.P > 0.2 || w.CILow > 0.2 || w.CIHigh < 0.2 {
		t.Errorf("WelchLog of a 20 %% rise (spread between values) = %+v", w)
	}
	if g := GeoMean([]float64{1, 4, math.NaN(), -1}); !near(g, 2, 1e-15) {
		t.Errorf("GeoMean = %v, want 2", g)
	}
	if b := (TTest{CILow: -0.03, CIHigh: 0.05}).Bound(); b != 0.05 {
		t.Errorf("Bound = %v", b)
	}
}

// TestWelchCoverage: over many A/A draws (both samples from one normal
// distribution), Welch rejects at 5 % about 5 % of the time and the
// interval holds the true difference (0) about 95 % of the time.
func TestWelchCoverage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	const trials = 4000
	reject, miss := 0, 0
	for i := 0; i < trials; i++ {
		a, b := make([]float64, 5), make([]float64, 5)
		for j := range a {
			a[j], b[j] = 10+rng.NormFloat64(), 10+2*rng.NormFloat64()
		}
		w := Welch(a, b)
		if w.P < 0.05 {
			reject++
		}
		if w.CILow > 0 || w.CIHigh < 0 {
			miss++
		}
	}
	// Welch is slightly conservative at these sizes; 4000 trials give a
	// standard error of 0.34 points.
	if r := float64(reject) / trials; r < 0.03 || r > 0.065 {
		t.Errorf("A/A rejection rate %.3f, want about 0.05", r)
	}
	if reject != miss {
		t.Errorf("%d rejections but %d intervals without 0: p < 0.05 and the 95 %% interval must agree", reject, miss)
	}
}

func TestHolm(t *testing.T) {
	t.Parallel()
	// Textbook: m = 4, p = 0.01, 0.04, 0.03, 0.005 -> sorted 0.005 (x4 =
	// 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, raised
	// to 0.06 to keep the order).
	got := Holm([]float64{0.01, 0.04, math.NaN(), 0.03, 0.005})
	want := []float64{0.03, 0.06, math.NaN(), 0.06, 0.02}
	for i := range want {
		if !near(got[i], want[i], 1e-12) {
			t.Errorf("Holm[%d] = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	if g := Holm([]float64{0.5, 0.9}); g[0] != 1 || g[1] != 1 {
		t.Errorf("Holm caps at 1: %v", g)
	}
	if g := Holm(nil); len(g) != 0 {
		t.Errorf("Holm(nil) = %v", g)
	}
}

// TestMannWhitneyCannotRejectUnderHolm records why diff uses t tests on
// log values: 5 v 5 repeats give Mann-Whitney a smallest two-sided p of
// 2/252 = 0.0079, which Holm over 10 tests raises to 0.079 at best.
func TestMannWhitneyCannotRejectUnderHolm(t *testing.T) {
	t.Parallel()
	a, b := []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}
	mw := MannWhitney(a, b)
	ps := make([]float64, 10)
	for i := range ps {
		ps[i] = mw.P
	}
	if adj := Holm(ps); adj[0] < 0.05 {
		t.Fatalf("Holm-adjusted Mann-Whitney p %v: expected no rejection", adj[0])
	}
	if w := Welch(a, b); w.P*10 >= 0.05 {
		t.Fatalf("Welch p %v: a complete separation should survive Holm over 10 tests", w.P)
	}
}

func FuzzTTests(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, 4.0, 5.0)
	f.Add(0.0, 0.0, 0.0, 1e300, -1e300)
	f.Fuzz(func(t *testing.T, a, b, c, d, e float64) {
		for _, r := range []TTest{Welch([]float64{a, b}, []float64{c, d, e}), OneSample([]float64{a, b, c}),
			PairedLog([]float64{a, b, c}, []float64{c, d, e}), WelchLog([]float64{a, b}, []float64{d, e})} {
			if !math.IsNaN(r.P) && (r.P < 0 || r.P > 1) {
				t.Fatalf("p out of [0, 1]: %+v", r)
			}
			if !math.IsNaN(r.CILow) && r.CILow > r.CIHigh {
				t.Fatalf("interval reversed: %+v", r)
			}
		}
		if p := TTwoSidedP(a, math.Abs(b)+0.1); !math.IsNaN(p) && (p < 0 || p > 1) {
			t.Fatalf("TTwoSidedP(%v, %v) = %v", a, b, p)
		}
	})
}
