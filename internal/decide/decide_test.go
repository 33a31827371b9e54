package decide

import (
	"math"
	"math/rand/v2"
	"testing"

	"proxybench/internal/stats"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	m := 0.05
	for _, tc := range []struct {
		name     string
		lo, hi   float64
		better   int
		want     Outcome
		decision bool
	}{
		{"higher latency beyond the margin", 0.06, 0.20, -1, Worse, true},
		{"lower goodput beyond the margin", -0.20, -0.06, +1, Worse, true},
		{"lower latency beyond the margin", -0.20, -0.06, -1, Better, true},
		{"inside the margin", -0.04, 0.04, -1, Equivalent, true},
		{"straddles the margin", 0.02, 0.09, -1, Unresolved, false},
		{"straddles both margins", -0.09, 0.09, +1, Unresolved, false},
		{"on the margin exactly", 0.05, 0.08, -1, Unresolved, false},
		{"no interval", math.NaN(), math.NaN(), -1, NoData, false},
	} {
		got := Judge(Interval{Low: tc.lo, High: tc.hi}, m, tc.better)
		if got != tc.want || got.Decided() != tc.decision {
			t.Errorf("%s: %q (decided %v), want %q", tc.name, got, got.Decided(), tc.want)
		}
	}
}

// TestFixedIsTheTInterval: the fixed interval is Student's, against the
// stats package's own paired test.
func TestFixedIsTheTInterval(t *testing.T) {
	t.Parallel()
	x := []float64{0.01, -0.03, 0.05, 0.02, 0.00, 0.04}
	iv := Fixed(x, 0.05)
	tt := stats.OneSample(x)
	if math.Abs(iv.Low-tt.CILow) > 1e-9 || math.Abs(iv.High-tt.CIHigh) > 1e-9 {
		t.Fatalf("fixed [%g, %g], t test [%g, %g]", iv.Low, iv.High, tt.CILow, tt.CIHigh)
	}
	if w := Welch([]float64{1, 2, 3}, []float64{2, 3, 4, 5}, 0.05); !(w.Low < 1.5 && w.High > 1.5) || math.Abs(w.Mean-1.5) > 1e-12 {
		t.Fatalf("welch %+v", w)
	}
}

// TestSequenceHoldsUnderOptionalStopping: the question a confidence
// sequence answers is "does the interval ever miss the true mean, at any
// look?"; a fixed t interval looked at after every pair misses it far more
// often than alpha. Normal and heavy-tailed (t with 4 df, the shape of the
// lab's log ratios under steal) pairs, looked at from 3 to 80 pairs.
func TestSequenceHoldsUnderOptionalStopping(t *testing.T) {
	t.Parallel()
	const runs, maxN, alpha = 2000, 80, 0.05
	rng := rand.New(rand.NewPCG(1, 2))
	draws := map[string]func() float64{
		"normal": rng.NormFloat64,
		"t4": func() float64 { // Student t, 4 df, scaled to unit variance
			z := rng.NormFloat64()
			c := 0.0
			for range 4 {
				g := rng.NormFloat64()
				c += g * g
			}
			return z / math.Sqrt(c/4) / math.Sqrt2
		},
	}
	for name, draw := range draws {
		missSeq, missFixed := 0, 0
		for range runs {
			x := make([]float64, 0, maxN)
			seqOK, fixOK := true, true
			for n := 1; n <= maxN; n++ {
				x = append(x, 0.14*draw())
				if n < 3 {
					continue
				}
				if iv := Sequence(x, alpha, 20); iv.Low > 0 || iv.High < 0 {
					seqOK = false
				}
				if iv := Fixed(x, alpha); iv.Low > 0 || iv.High < 0 {
					fixOK = false
				}
			}
			if !seqOK {
				missSeq++
			}
			if !fixOK {
				missFixed++
			}
		}
		seq, fix := float64(missSeq)/runs, float64(missFixed)/runs
		t.Logf("%s: ever missed at some look: sequence %.3f, fixed t %.3f", name, seq, fix)
		if seq > alpha {
			t.Errorf("%s: the confidence sequence missed the mean at some look in %.3f of runs, want <= %.2f", name, seq, alpha)
		}
		if fix < 2*alpha {
			t.Errorf("%s: the fixed interval looked at every pair missed in only %.3f: the control does not show the problem", name, fix)
		}
	}
}

func TestDecideShareAndWords(t *testing.T) {
	t.Parallel()
	base := []float64{100, 101, 99, 100, 102, 98, 100, 101}
	worse := make([]float64, len(base))
	for i, b := range base {
		worse[i] = b * (0.80 + 0.002*float64(i%3))
	}
	rs := Decide([]Series{
		{Name: "goodput_rps", Better: +1, Base: base, Cand: worse},
		{Name: "error_ratio", Better: -1, Absolute: true, Base: []float64{0, 0, 0}, Cand: []float64{0, 0.0001, 0}},
	}, Defaults)
	if rs[0].Outcome != Worse || rs[0].Test.Level != 0.975 {
		t.Fatalf("goodput 20 %% lower: %s (level %g)", rs[0], rs[0].Test.Level)
	}
	if rs[1].Outcome != Equivalent {
		t.Fatalf("error ratio: %s", rs[1])
	}
	if got := rs[0].String(); got[:len("worse by more than 5.0 %")] != "worse by more than 5.0 %" {
		t.Fatalf("words %q", got)
	}
	if err := (Options{Margin: 5, ErrorMargin: 0.005, Alpha: 0.05}).Validate(); err == nil {
		t.Fatal("a margin of 5 (500 %) was accepted")
	}
}

// TestSequenceUnboundedAtFewValues: below the pairs Lai's sequence needs,
// the interval is unbounded for any sample, a constant one too (not
// "no data": there are values), so it decides nothing; with enough
// values a constant sample's interval is the point itself.
func TestSequenceUnboundedAtFewValues(t *testing.T) {
	t.Parallel()
	for _, x := range [][]float64{{0, 0, 0, 0, 0}, {-0.36, -0.35, -0.37, -0.36, -0.35}} {
		iv := Sequence(x, 0.025, DefaultTOpt)
		if !iv.Known() || !math.IsInf(iv.HalfWidth, 1) || !math.IsInf(iv.Low, -1) || !math.IsInf(iv.High, 1) {
			t.Fatalf("%v: %+v, want an unbounded interval", x, iv)
		}
		if o := Judge(iv, LogMargin(0.05), +1); o != Unresolved {
			t.Fatalf("%v: %q, want not resolved", x, o)
		}
	}
	zero := make([]float64, 12)
	if iv := Sequence(zero, 0.025, DefaultTOpt); iv.HalfWidth != 0 || iv.Low != 0 || iv.High != 0 || Judge(iv, 0.005, -1) != Equivalent {
		t.Fatalf("12 zero differences: %+v, want [0, 0] and equivalent", iv)
	}
}

// TestSliceRatioCancelsDrift: two arms' slices in ABBA order on a host
// whose speed drifts by up to ±30 % between neighbouring slice pairs; the
// candidate is 10 % slower than its neighbour in every pair. The ratio
// of the arms' medians carries the drift, the slice-by-slice ratio is
// exactly the 10 %; one slice the host stalled does not move it; a
// series uses a pair's own ratio where it has one and ln(Cand/Base)
// elsewhere.
func TestSliceRatioCancelsDrift(t *testing.T) {
	t.Parallel()
	a := []float64{100, 120, 80, 125, 90, 110, 70, 130}
	b := make([]float64, len(a))
	for i := range a {
		b[i] = 0.9 * a[i]
	}
	b[3] = 20 // a stall in one of the candidate's slices
	if got := SliceRatio(a, b); math.Abs(got-math.Log(0.9)) > 1e-12 {
		t.Fatalf("slice ratio %.4f, want ln 0.9 = %.4f", got, math.Log(0.9))
	}
	// The arms' own medians: the stall and the drift move them apart.
	if armed := math.Log(stats.Median(b) / stats.Median(a)); math.Abs(armed-math.Log(0.9)) < 0.05 {
		t.Fatalf("the arms' medians read %.4f: the sample shows no drift to cancel", armed)
	}
	if got := SliceRatio([]float64{1, math.NaN()}, []float64{math.NaN(), 2}); !math.IsNaN(got) {
		t.Fatalf("no slice pair with both values: %g, want NaN", got)
	}
	s := Series{Base: []float64{100, 100, 100}, Cand: []float64{50, 50, 50}, Ratios: []float64{math.Log(0.9), math.NaN()}}
	got := s.LogRatios()
	want := []float64{math.Log(0.9), math.Log(0.5), math.Log(0.5)}
	for i := range want {
		if len(got) != len(want) || math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("series log ratios %v, want %v", got, want)
		}
	}
}
