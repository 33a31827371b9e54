// Package decide owns the answer every comparison of the lab ends in. Per
// metric it is exactly one of four outcomes, each with the interval it
// rests on:
//
//   - worse by more than the margin M: the whole interval lies beyond M
//     on the bad side;
//   - better by more than M: the whole interval lies beyond M on the good
//     side;
//   - equivalent within ±M: the whole interval lies inside ±M;
//   - not resolved: anything else (the interval straddles a margin).
//
// A relative metric is compared on log ratios, ln(B/A), so a margin of
// 5 % means a ratio beyond 1.05 or below 1/1.05 and a change and its
// inverse weigh the same; the error ratio is compared on absolute
// differences against an absolute margin.
//
// Two kinds of interval feed it. A comparison that stops once it is
// decided (the sequential duet) uses an anytime-valid interval: a
// confidence sequence (Sequence) that holds at every look at once, so
// stopping as soon as it decides keeps the false-alarm rate at its
// nominal level. A comparison of a fixed sample (two runs) uses the
// Student-t interval (Fixed). A family of k intervals that decide
// together shares alpha equally (Bonferroni: each holds at 1 - alpha/k),
// so the whole family is right with probability 1 - alpha.
//
// The loadgen (deciding when a duet may stop) and the reporter (the
// report's and diff's answers) call this one package, so both reach the
// same answer from the same pairs.
package decide

import (
	"fmt"
	"math"
	"sync"

	"proxybench/internal/stats"
)

// Outcome is the answer for one metric.
type Outcome string

// Outcomes.
const (
	Worse      Outcome = "worse"
	Better     Outcome = "better"
	Equivalent Outcome = "equivalent"
	Unresolved Outcome = "not resolved"
	// NoData: fewer than two pairs (or values on a side) with the metric
	// known: no interval at all.
	NoData Outcome = "no data"
)

// Decided says whether o settles the question (worse, better or
// equivalent).
func (o Outcome) Decided() bool { return o == Worse || o == Better || o == Equivalent }

// Defaults: the margin a comparison is decided at when the user names
// none, and the family's false-alarm rate.
const (
	DefaultMargin      = 0.05  // relative: 5 %
	DefaultErrorMargin = 0.005 // absolute error-ratio change: half a percentage point
	DefaultAlpha       = 0.05
)

// Interval is a two-sided interval for a mean difference on the scale the
// metric is tested on: log ratios for a relative metric, absolute
// differences for the error ratio.
type Interval struct {
	N         int     `json:"n"`
	Mean      float64 `json:"mean"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	SD        float64 `json:"sd"`    // per-pair (or pooled) standard deviation of the differences
	Level     float64 `json:"level"` // the confidence each interval holds after the family's share, e.g. 0.975 for 2 metrics at alpha 0.05
	Anytime   bool    `json:"anytime"`
	HalfWidth float64 `json:"half_width"`
}

// Known says whether the interval exists (two values at least).
func (iv Interval) Known() bool { return !math.IsNaN(iv.Low) && !math.IsNaN(iv.High) }

func unknown(n int, mean float64) Interval {
	return Interval{N: n, Mean: mean, Low: math.NaN(), High: math.NaN(), SD: math.NaN(), HalfWidth: math.NaN()}
}

// Judge decides iv against margin (on iv's scale, > 0) for a metric whose
// better direction is better (+1: higher is better, -1: lower is better).
// An interval exactly on a margin does not decide it.
func Judge(iv Interval, margin float64, better int) Outcome {
	if !iv.Known() {
		return NoData
	}
	// Worse-ness: positive when the change is in the bad direction.
	lo, hi := iv.Low, iv.High
	if better > 0 {
		lo, hi = -iv.High, -iv.Low
	}
	switch {
	case lo > margin:
		return Worse
	case hi < -margin:
		return Better
	case lo > -margin && hi < margin:
		return Equivalent
	}
	return Unresolved
}

// Share is each of k intervals' alpha when a family of k decides together
// (Bonferroni).
func Share(alpha float64, k int) float64 {
	if k < 1 {
		k = 1
	}
	return alpha / float64(k)
}

// Sequence is the anytime-valid 1 - alpha interval for the mean of x (a
// confidence sequence): Lai's (1976) t confidence sequence for a normal
// mean with unknown variance, shown valid by Wang and Ramdas (2023,
// "Anytime-valid t-tests and confidence sequences for Gaussian means with
// unknown variance"). It is the set of means m whose scale-invariant
// mixture likelihood ratio
//
//	(1 + n*c2)^(-1/2) * (1 - n*c2/(1+n*c2) * T^2/(n-1+T^2))^(-n/2)
//
// (T the t statistic of x against m) stays below 1/alpha; by Ville's
// inequality the true mean leaves it at some n with probability at most
// alpha, so a caller may look after every value and stop when it likes.
// c2 is chosen to make the interval tightest at tOpt values. Unlike a
// plug-in (asymptotic) sequence it needs no large sample: the variance's
// own uncertainty is in the ratio. At 20 values it is about 1.6 times as
// wide as the fixed t interval.
func Sequence(x []float64, alpha, tOpt float64) Interval {
	x = finite(x)
	n := len(x)
	if n < 2 {
		return unknown(n, stats.Mean(x))
	}
	mean, sd := stats.Mean(x), stats.Stddev(x)
	h := math.Inf(1) // still unbounded: at so few values no sample, not even a constant one, bounds it
	if t := laiT(n, mixture(alpha, tOpt), alpha); !math.IsInf(t, 1) {
		h = sd / math.Sqrt(float64(n)) * t
	}
	return Interval{N: n, Mean: mean, Low: mean - h, High: mean + h, SD: sd, Level: 1 - alpha, Anytime: true, HalfWidth: h}
}

// laiT is the largest |T| inside Lai's sequence at n values with mixture
// width c2: +Inf while the sequence is still unbounded.
func laiT(n int, c2, alpha float64) float64 {
	nf := float64(n)
	b := nf * c2 / (1 + nf*c2)
	q := math.Pow(alpha/math.Sqrt(1+nf*c2), 2/nf)
	k := (1 - q) / b
	if k >= 1 {
		return math.Inf(1)
	}
	return math.Sqrt(k * (nf - 1) / (1 - k))
}

var mixCache sync.Map

// mixture is the c2 that makes Lai's sequence tightest at tOpt values
// (a search over a log grid, remembered).
func mixture(alpha, tOpt float64) float64 {
	n := max(2, int(math.Round(tOpt)))
	k := tqKey{alpha, float64(n)}
	if v, ok := mixCache.Load(k); ok {
		return v.(float64)
	}
	best, bestT := 1.0, math.Inf(1)
	for e := -120; e <= 60; e++ {
		c2 := math.Pow(10, float64(e)/30)
		if t := laiT(n, c2, alpha); t < bestT {
			best, bestT = c2, t
		}
	}
	mixCache.Store(k, best)
	return best
}

// Fixed is the 1 - alpha Student-t interval for the mean of x: for a
// sample whose size was fixed before it was looked at.
func Fixed(x []float64, alpha float64) Interval {
	x = finite(x)
	n := len(x)
	if n < 2 {
		return unknown(n, stats.Mean(x))
	}
	mean, sd := stats.Mean(x), stats.Stddev(x)
	h := tQuantile(1-alpha/2, float64(n-1)) * sd / math.Sqrt(float64(n))
	return Interval{N: n, Mean: mean, Low: mean - h, High: mean + h, SD: sd, Level: 1 - alpha, HalfWidth: h}
}

// Welch is the 1 - alpha Welch interval for mean(b) - mean(a): two
// independent fixed samples (two runs). SD is the pooled per-value
// standard deviation, sqrt((sa^2 + sb^2)/2).
func Welch(a, b []float64, alpha float64) Interval {
	a, b = finite(a), finite(b)
	na, nb := len(a), len(b)
	if na < 2 || nb < 2 {
		m := math.NaN()
		if na > 0 && nb > 0 {
			m = stats.Mean(b) - stats.Mean(a)
		}
		return unknown(na+nb, m)
	}
	sa, sb := stats.Stddev(a), stats.Stddev(b)
	va, vb := sa*sa/float64(na), sb*sb/float64(nb)
	df := float64(na + nb - 2)
	if va+vb > 0 {
		df = (va + vb) * (va + vb) / (va*va/float64(na-1) + vb*vb/float64(nb-1))
	}
	mean := stats.Mean(b) - stats.Mean(a)
	h := tQuantile(1-alpha/2, df) * math.Sqrt(va+vb)
	return Interval{N: na + nb, Mean: mean, Low: mean - h, High: mean + h, SD: math.Sqrt((sa*sa + sb*sb) / 2), Level: 1 - alpha, HalfWidth: h}
}

// LogRatios is ln(b[i]/a[i]) for every pair with both values positive and
// finite.
func LogRatios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if a[i] > 0 && b[i] > 0 && !math.IsInf(a[i], 0) && !math.IsInf(b[i], 0) {
			out = append(out, math.Log(b[i]/a[i]))
		}
	}
	return out
}

// SliceRatio is one sliced pair's log ratio: the median over its slices,
// taken in order, of ln(b[i]/a[i]) (slices whose values are not both
// positive and finite are left out; NaN when none is left). The i-th
// slices of the two arms of a sliced duet ran next to each other, and in
// ABBA order each arm goes first in every other one, so their ratio
// cancels the host's drift over the seconds between one arm's slices,
// which the ratio of the arms' own medians keeps; the median keeps a
// slice the host disturbed from moving it. On the lab's recorded sliced
// duets it cut the per-pair sd of goodput's log ratio by a third to a
// half (docs/decisions.md).
func SliceRatio(a, b []float64) float64 { return stats.Median(LogRatios(a, b)) }

// Differences is b[i] - a[i] for every pair with both values finite.
func Differences(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if d := b[i] - a[i]; !math.IsNaN(d) && !math.IsInf(d, 0) {
			out = append(out, d)
		}
	}
	return out
}

// LogMargin is a relative margin (0.05 = 5 %) on the log-ratio scale.
func LogMargin(m float64) float64 { return math.Log1p(m) }

// Relative turns a log-ratio value into a relative change (+0.10 = 10 %
// higher).
func Relative(v float64) float64 { return math.Expm1(v) }

// Pct is a relative change as a signed percentage, e.g. "+4.2 %".
func Pct(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%+.1f %%", 100*v)
}

func finite(xs []float64) []float64 {
	out := xs[:0:0]
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

var tqCache sync.Map

type tqKey struct{ p, df float64 }

// tQuantile is stats.TQuantile, remembered: a sequential look asks the
// same few quantiles again and again.
func tQuantile(p, df float64) float64 {
	k := tqKey{p, df}
	if v, ok := tqCache.Load(k); ok {
		return v.(float64)
	}
	v := stats.TQuantile(p, df)
	tqCache.Store(k, v)
	return v
}
