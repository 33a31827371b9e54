package decide

import (
	"errors"
	"fmt"
	"math"
)

// Options state the question: the margin, the family's false-alarm rate
// and the kind of interval.
type Options struct {
	Margin      float64 // relative margin, e.g. 0.05 (5 %)
	ErrorMargin float64 // absolute margin of the error ratio, e.g. 0.005
	Alpha       float64 // the family's false-alarm rate
	// Anytime asks for confidence sequences (a comparison that may stop
	// as soon as it decides); TOpt is the number of pairs they are
	// tightest at.
	Anytime bool
	TOpt    float64
}

// Defaults are the documented defaults for a fixed sample.
var Defaults = Options{Margin: DefaultMargin, ErrorMargin: DefaultErrorMargin, Alpha: DefaultAlpha}

// Validate names a bad option and what to do.
func (o Options) Validate() error {
	var errs []error
	if !(o.Margin > 0 && o.Margin < 1) {
		errs = append(errs, fmt.Errorf("margin %g: a relative change between 0 and 1, e.g. 0.05 for 5 %%", o.Margin))
	}
	if !(o.ErrorMargin > 0 && o.ErrorMargin < 1) {
		errs = append(errs, fmt.Errorf("error margin %g: an absolute error-ratio change between 0 and 1, e.g. 0.005", o.ErrorMargin))
	}
	if !(o.Alpha > 0 && o.Alpha < 0.5) {
		errs = append(errs, fmt.Errorf("alpha %g: a false-alarm rate between 0 and 0.5, e.g. 0.05", o.Alpha))
	}
	return errors.Join(errs...)
}

// Series is one metric's pairs: Base[i] and Cand[i] measured next to each
// other.
type Series struct {
	Name     string
	Better   int  // +1 higher is better, -1 lower is better
	Absolute bool // compared on differences (the error ratio), not log ratios
	Base     []float64
	Cand     []float64
	// Ratios, when set, is each pair's own log ratio in Base's order, for
	// a pair whose ratio is better known than the ratio of its two values
	// (an arm pair of a sliced duet: SliceRatio over its slices); a NaN
	// entry, and every pair of a series without Ratios, is ln(Cand/Base).
	Ratios []float64
}

// LogRatios is s's per-pair log ratios: a pair's own (Ratios) where it
// has one, else ln(Cand/Base); pairs with neither are left out.
func (s Series) LogRatios() []float64 {
	var out []float64
	for i := range min(len(s.Base), len(s.Cand)) {
		if i < len(s.Ratios) && !math.IsNaN(s.Ratios[i]) && !math.IsInf(s.Ratios[i], 0) {
			out = append(out, s.Ratios[i])
			continue
		}
		out = append(out, LogRatios(s.Base[i:i+1], s.Cand[i:i+1])...)
	}
	return out
}

// Result is one metric's answer.
type Result struct {
	Name    string   `json:"metric"`
	Outcome Outcome  `json:"outcome"`
	Test    Interval `json:"interval"` // on the test's scale (log ratio or difference)
	// Change, Low and High are the change and its interval as a reader
	// reads them: relative (+0.10 = 10 % higher) or, for the error ratio,
	// absolute.
	Change float64 `json:"change"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	// Margin is the margin asked (relative, or absolute for the error
	// ratio); Resolution is the half-width of the interval on the same
	// scale: an interval this narrow decides any margin the true change
	// is at least this far from.
	Margin     float64 `json:"margin"`
	Resolution float64 `json:"resolution"`
	Absolute   bool    `json:"absolute,omitempty"`
}

// Decide answers every series as one family: each interval holds at
// 1 - alpha/len(series).
func Decide(series []Series, o Options) []Result {
	alpha := Share(o.Alpha, len(series))
	out := make([]Result, 0, len(series))
	for _, s := range series {
		out = append(out, One(s, alpha, o))
	}
	return out
}

// One answers a single series at the given alpha (its share of a family).
func One(s Series, alpha float64, o Options) Result {
	var x []float64
	if s.Absolute {
		x = Differences(s.Base, s.Cand)
	} else {
		x = s.LogRatios()
	}
	var iv Interval
	if o.Anytime {
		iv = Sequence(x, alpha, o.TOpt)
	} else {
		iv = Fixed(x, alpha)
	}
	return FromInterval(s.Name, s.Better, s.Absolute, iv, o)
}

// FromInterval is the answer an interval on the test's scale gives.
func FromInterval(name string, better int, absolute bool, iv Interval, o Options) Result {
	r := Result{Name: name, Test: iv, Absolute: absolute}
	if absolute {
		r.Margin = o.ErrorMargin
		r.Outcome = Judge(iv, o.ErrorMargin, better)
		r.Change, r.Low, r.High, r.Resolution = iv.Mean, iv.Low, iv.High, iv.HalfWidth
		return r
	}
	r.Margin = o.Margin
	r.Outcome = Judge(iv, LogMargin(o.Margin), better)
	r.Change, r.Low, r.High = Relative(iv.Mean), Relative(iv.Low), Relative(iv.High)
	r.Resolution = Relative(iv.HalfWidth)
	if math.IsNaN(iv.HalfWidth) {
		r.Resolution = math.NaN()
	}
	return r
}

// String is the answer in words, e.g. "worse by more than 5 %: +9.8 %
// [+6.1 %, +13.6 %]".
func (r Result) String() string {
	m, chg := Pct(r.Margin), fmt.Sprintf("%s [%s, %s]", Pct(r.Change), Pct(r.Low), Pct(r.High))
	if r.Absolute {
		m = fmt.Sprintf("%.2g", r.Margin)
		chg = fmt.Sprintf("%+.4f [%+.4f, %+.4f]", r.Change, r.Low, r.High)
	}
	if math.IsInf(r.Test.HalfWidth, 1) {
		chg = Pct(r.Change) + " [unbounded: too few pairs yet]"
		if r.Absolute {
			chg = fmt.Sprintf("%+.4f [unbounded: too few pairs yet]", r.Change)
		}
	}
	m = trimSign(m)
	switch r.Outcome {
	case Worse:
		return "worse by more than " + m + ": " + chg
	case Better:
		return "better by more than " + m + ": " + chg
	case Equivalent:
		return "equivalent within ±" + m + ": " + chg
	case NoData:
		return "no data: fewer than 2 pairs"
	}
	return fmt.Sprintf("not resolved at ±%s: %s", m, chg)
}

func trimSign(s string) string {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		return s[1:]
	}
	return s
}

// DefaultTOpt is the number of pairs the anytime intervals are tightest
// at: about what a duet needs to resolve a 5 % margin on the lab's quiet
// metrics.
const DefaultTOpt = 20

// Names of the metrics a comparison decides on (as report.json names
// them).
const (
	Goodput       = "goodput_rps"
	P50           = "p50_seconds"
	P99           = "p99_seconds"
	CPUPerRequest = "proxy_cpu_seconds_per_request"
	ErrorRatio    = "error_ratio"
)

// Gated names the metrics whose answer decides a comparison (a "worse"
// among them fails the gate); every other metric is shown, never gated.
// A closed loop is decided by goodput (its latency follows from its
// throughput); a fixed offered rate by p50, p99 and the proxy's CPU per
// request (the cost of the same work).
func Gated(closed bool) []string {
	if closed {
		return []string{Goodput}
	}
	return []string{P50, P99, CPUPerRequest}
}
