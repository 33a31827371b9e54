package stats

import "math"

// TTest is a Student-t comparison: of paired differences against zero
// (OneSample, PairedLog) or of two independent samples (Welch, WelchLog).
// Mean is the estimated difference, b minus a; on log values (the *Log
// tests) it is the log of a ratio, which Ratio turns into a relative
// change.
type TTest struct {
	N      int     `json:"n"`        // pairs, or values of a plus values of b
	DF     float64 `json:"df"`       // degrees of freedom (fractional for Welch)
	Mean   float64 `json:"mean"`     // estimated difference b - a
	CILow  float64 `json:"ci95_low"` // 95 % Student-t interval of Mean
	CIHigh float64 `json:"ci95_high"`
	P      float64 `json:"p"` // two-sided p-value against no difference; NaN when untestable
}

// untestable is a test without a spread to judge by: fewer than two values
// (on a side).
func untestable(n int, mean float64) TTest {
	return TTest{N: n, DF: math.NaN(), Mean: mean, CILow: math.NaN(), CIHigh: math.NaN(), P: math.NaN()}
}

// tFrom finishes a test from its difference, standard error and degrees
// of freedom. A zero standard error (every difference alike) has a
// zero-width interval, and p is 1 for no difference and 0 for any other.
func tFrom(n int, mean, se, df float64) TTest {
	r := TTest{N: n, DF: df, Mean: mean}
	if se == 0 {
		r.CILow, r.CIHigh, r.P = mean, mean, 1
		if mean != 0 {
			r.P = 0
		}
		return r
	}
	h := TQuantile(0.975, df) * se
	r.CILow, r.CIHigh = mean-h, mean+h
	r.P = TTwoSidedP(mean/se, df)
	return r
}

// OneSample tests whether the mean of d differs from zero (the paired t
// test when d holds per-pair differences). NaN values are left out.
func OneSample(d []float64) TTest {
	d = finite(d)
	n := len(d)
	if n < 2 {
		return untestable(n, Mean(d))
	}
	return tFrom(n, Mean(d), Stddev(d)/math.Sqrt(float64(n)), float64(n-1))
}

// Welch tests whether the means of a and b differ without assuming equal
// variances (Welch-Satterthwaite degrees of freedom). Mean is mean(b) -
// mean(a). NaN values are left out.
func Welch(a, b []float64) TTest {
	a, b = finite(a), finite(b)
	na, nb := len(a), len(b)
	n := na + nb
	if na == 0 || nb == 0 {
		return untestable(n, math.NaN())
	}
	mean := Mean(b) - Mean(a)
	if na < 2 || nb < 2 {
		return untestable(n, mean)
	}
	va := Stddev(a) * Stddev(a) / float64(na)
	vb := Stddev(b) * Stddev(b) / float64(nb)
	se := math.Sqrt(va + vb)
	df := float64(na + nb - 2) // both variances zero: the pooled value
	if va+vb > 0 {
		df = (va + vb) * (va + vb) / (va*va/float64(na-1) + vb*vb/float64(nb-1))
	}
	return tFrom(n, mean, se, df)
}

// PairedLog is OneSample over the per-pair log ratios ln(b[i]/a[i]): the
// paired test of a relative change. Pairs where either value is not
// positive and finite are left out; a and b must have the same length
// (extra values of the longer are ignored).
func PairedLog(a, b []float64) TTest {
	n := min(len(a), len(b))
	d := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		if positive(a[i]) && positive(b[i]) {
			d = append(d, math.Log(b[i])-math.Log(a[i]))
		}
	}
	return OneSample(d)
}

// WelchLog is Welch over the logs of a and b: the test of the ratio of
// their geometric means. Values that are not positive and finite are left
// out.
func WelchLog(a, b []float64) TTest {
	return Welch(logs(a), logs(b))
}

// Ratio turns a test on log values into relative terms: Mean, CILow and
// CIHigh become exp(x) - 1 (+0.10 = b is 10 % above a).
func (t TTest) Ratio() TTest {
	r := t
	r.Mean, r.CILow, r.CIHigh = math.Expm1(t.Mean), math.Expm1(t.CILow), math.Expm1(t.CIHigh)
	return r
}

// Bound is the end of the 95 % interval furthest from zero, as a
// magnitude: how large a difference the data cannot rule out. NaN without
// an interval.
func (t TTest) Bound() float64 {
	return math.Max(math.Abs(t.CILow), math.Abs(t.CIHigh))
}

// GeoMean is the geometric mean of the positive finite values of xs; NaN
// when there are none.
func GeoMean(xs []float64) float64 {
	l := logs(xs)
	if len(l) == 0 {
		return math.NaN()
	}
	return math.Exp(Mean(l))
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

func logs(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if positive(x) {
			out = append(out, math.Log(x))
		}
	}
	return out
}
