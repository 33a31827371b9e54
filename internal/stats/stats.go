// Package stats owns the small statistics the reporter needs: summaries
// across repeats (mean, median, sample standard deviation, coefficient of
// variation, Student-t confidence interval), Student's t distribution
// (through the regularized incomplete beta function), the t tests diff and
// the noise floor use (paired on log ratios, Welch on log values), the
// Holm-Bonferroni adjustment for multiple comparisons, the Mann-Whitney U
// test, and the least-squares slope used for memory growth.
package stats

import (
	"math"
	"sort"
)

// Summary describes a sample of repeat measurements.
type Summary struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Stddev float64 `json:"stddev"`    // sample (n-1) standard deviation; NaN when n < 2
	CV     float64 `json:"cv"`        // stddev / |mean|; 0 when the mean is 0, NaN when n < 2
	CILow  float64 `json:"ci95_low"`  // 95 % Student-t interval of the mean; NaN when n < 2
	CIHigh float64 `json:"ci95_high"` // (one value has no measured spread, not a zero one)
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize computes a Summary; NaN inputs are ignored.
func Summarize(xs []float64) Summary {
	v := finite(xs)
	s := Summary{N: len(v)}
	if s.N == 0 {
		return s
	}
	s.Mean = Mean(v)
	s.Median = Median(v)
	s.Min, s.Max = v[0], v[0]
	for _, x := range v {
		s.Min = math.Min(s.Min, x)
		s.Max = math.Max(s.Max, x)
	}
	s.Stddev, s.CV, s.CILow, s.CIHigh = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if s.N >= 2 {
		s.CV = 0
		s.Stddev = Stddev(v)
		if s.Mean != 0 {
			s.CV = s.Stddev / math.Abs(s.Mean)
		}
		h := TQuantile975(s.N-1) * s.Stddev / math.Sqrt(float64(s.N))
		s.CILow, s.CIHigh = s.Mean-h, s.Mean+h
	}
	return s
}

func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// Mean is the arithmetic mean; NaN for an empty sample.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Median is the middle value (mean of the two middle values for even n).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	v := append([]float64(nil), xs...)
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Stddev is the sample standard deviation (n-1 denominator).
func Stddev(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// TQuantile975 is the two-sided 95 % critical value of Student's t with
// df degrees of freedom; NaN for df < 1.
func TQuantile975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	return TQuantile(0.975, float64(df))
}

// Slope is the ordinary least-squares slope of y over x; NaN with fewer than
// two distinct x values.
func Slope(x, y []float64) float64 {
	n := len(x)
	if n != len(y) || n < 2 {
		return math.NaN()
	}
	mx, my := Mean(x), Mean(y)
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}
