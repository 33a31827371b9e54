package diff

import (
	"math"
	"slices"
	"sort"

	"proxybench/internal/decide"
	"proxybench/internal/stats"
	"proxybench/reporter/internal/report"
)

// Row is one cell key and metric of two separate runs.
type Row struct {
	Key    string
	Metric string
	A, B   []float64
	// CentreA and CentreB are the centres compared: the geometric mean
	// across the repeats, or the arithmetic mean for the error ratio (and
	// for a metric with a value <= 0, which has no logarithm).
	CentreA, CentreB float64
	SpreadA, SpreadB float64 // half-width of the 95 % Student-t CI of the mean; NaN when n < 2
	// Change is relative (CentreB / CentreA - 1), absolute for the error
	// ratio; CILow and CIHigh bound it (Welch, at the row's share of
	// alpha: Decision's interval), NaN when n < 2 on a side.
	Change, CILow, CIHigh float64
	P                     float64 // Welch's two-sided p; NaN when untestable (n < 2 on a side)
	PHolm                 float64 // P adjusted by Holm over every test of the diff
	// Decision is the answer at the margin; Gated: a metric that decides
	// the key (decide.Gated).
	Decision decide.Result
	Gated    bool
	Verdict  string
	Gate     bool // counts as a regression for the exit code
}

// Result is the comparison of two separate runs.
type Result struct {
	A, B             string
	FloorA, FloorB   report.NoiseFloor
	Keys             []KeyRow // every key of A, then keys only in B
	Rows             []Row    // metric rows of keys measured on both sides
	Regressions      int      // gated keys plus gated rows
	OnlyInA, OnlyInB []string // keys with cells on one side only; only in B is never gated
	// Unlike lists what the two runs measured differently (plan,
	// placement, host): the comparison is then of two setups, not of
	// two proxies or builds.
	Unlike []string
	Opts   Options
}

// Compare compares run b against baseline a, on the plan's own cells.
func Compare(a, b *report.Report, o Options) Result {
	res := Result{A: a.Run, B: b.Run, Opts: o, FloorA: noiseOf(a, o), FloorB: noiseOf(b, o), Unlike: unlike(a, b)}
	ga, gb := index(a), index(b)
	sa, sb := sides(a, ga), sides(b, gb)
	var keys []string
	for k := range ga {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kr := judgeKey(k, sa[k], sb[k])
		res.Keys = append(res.Keys, kr)
		if len(gb[k]) == 0 {
			res.OnlyInA = append(res.OnlyInA, k)
			continue
		}
		if kr.Status == KeyFailed || kr.Status == KeyFailedInAB {
			continue // a failed window's numbers say nothing about the proxy
		}
		gated := decide.Gated(ga[k][0].Closed())
		for _, m := range o.Metrics {
			row := compareSamples(k, m, values(ga[k], m), values(gb[k], m))
			row.Gated = slices.Contains(gated, m)
			res.Rows = append(res.Rows, row)
		}
	}
	family := 0
	for _, r := range res.Rows {
		if r.Gated {
			family++
		}
	}
	alpha := decide.Share(o.Alpha, family)
	// Holm over the family: every metric test of the diff.
	ps := make([]float64, len(res.Rows))
	for i, r := range res.Rows {
		ps[i] = r.P
	}
	for i, adj := range stats.Holm(ps) {
		r := &res.Rows[i]
		r.PHolm = adj
		r.Decision = decideSamples(r.Metric, r.A, r.B, alpha, o) // no data for a missing metric
		if r.Verdict != Missing {
			r.Verdict, r.Gate = answer(r.Decision, r.Gated)
			if r.Decision.Test.Known() {
				r.CILow, r.CIHigh = r.Decision.Low, r.Decision.High
			}
		}
	}
	for _, k := range res.Keys {
		if k.Gate {
			res.Regressions++
		}
	}
	for _, r := range res.Rows {
		if r.Gate {
			res.Regressions++
		}
	}
	for k := range gb {
		if _, ok := ga[k]; !ok {
			res.OnlyInB = append(res.OnlyInB, k)
		}
	}
	sort.Strings(res.OnlyInB)
	for _, k := range res.OnlyInB {
		res.Keys = append(res.Keys, KeyRow{Key: k, A: sa[k], B: sb[k], Status: KeyOnlyInB, Reason: "only in B (not gated)"})
	}
	return res
}

// compareSamples measures one metric of two runs: centres, spreads, the
// change and Welch's test, on log values for a relative metric whose
// values are all positive.
func compareSamples(key, metric string, a, b []float64) Row {
	r := Row{Key: key, Metric: metric, A: a, B: b, Change: math.NaN(), CILow: math.NaN(), CIHigh: math.NaN(),
		P: math.NaN(), PHolm: math.NaN(), CentreA: math.NaN(), CentreB: math.NaN()}
	r.SpreadA, r.SpreadB = spread(a), spread(b)
	if len(a) == 0 || len(b) == 0 {
		r.Verdict = Missing
		r.CentreA, r.CentreB = stats.Mean(a), stats.Mean(b)
		return r
	}
	var t stats.TTest
	switch {
	case report.Absolute(metric):
		t = stats.Welch(a, b)
		r.CentreA, r.CentreB = stats.Mean(a), stats.Mean(b)
	case allPositive(a) && allPositive(b):
		t = stats.WelchLog(a, b).Ratio()
		r.CentreA, r.CentreB = stats.GeoMean(a), stats.GeoMean(b)
	default:
		// A zero (or negative) value has no logarithm: the relative change
		// of the arithmetic means, the test on the values themselves.
		t = stats.Welch(a, b)
		r.CentreA, r.CentreB = stats.Mean(a), stats.Mean(b)
		if r.CentreA == 0 {
			r.P = t.P
			if r.CentreB != 0 {
				r.Change = math.Inf(1) * math.Copysign(1, r.CentreB)
			} else {
				r.Change = 0
			}
			return r
		}
		s := math.Abs(r.CentreA)
		t.Mean, t.CILow, t.CIHigh = t.Mean/s, t.CILow/s, t.CIHigh/s
	}
	r.Change, r.CILow, r.CIHigh, r.P = t.Mean, t.CILow, t.CIHigh, t.P
	return r
}

// decideSamples answers one metric of two runs at alpha: Welch's interval
// on log values (on the values for the error ratio, or where a value is
// not positive: then only the error ratio's absolute margin applies, and a
// relative metric with a zero is not resolved).
func decideSamples(metric string, a, b []float64, alpha float64, o Options) decide.Result {
	m, _ := report.Metric(metric)
	do := decide.Options{Margin: o.Margin, ErrorMargin: o.ErrorMargin, Alpha: o.Alpha}
	switch {
	case report.Absolute(metric):
		return decide.FromInterval(metric, m.Better, true, decide.Welch(a, b, alpha), do)
	case allPositive(a) && allPositive(b):
		return decide.FromInterval(metric, m.Better, false, decide.Welch(logs(a), logs(b), alpha), do)
	}
	r := decide.FromInterval(metric, m.Better, false, decide.Welch(nil, nil, alpha), do)
	if len(a) >= 2 && len(b) >= 2 {
		r.Outcome = decide.Unresolved // below 2 values a side there is no interval: no data
	}
	return r
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

func allPositive(xs []float64) bool {
	for _, x := range xs {
		if !(x > 0) {
			return false
		}
	}
	return true
}

// spread is the half-width of the 95 % CI of the mean; NaN when n < 2.
func spread(xs []float64) float64 {
	s := stats.Summarize(xs)
	if s.N < 2 {
		return math.NaN()
	}
	return (s.CIHigh - s.CILow) / 2
}
