package diff

import (
	"math"
	"sort"

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
	// ratio; CILow and CIHigh bound it (95 %, Welch), NaN when n < 2 on a
	// side.
	Change, CILow, CIHigh float64
	// Floor is the change that counts: the larger of both runs' noise
	// floors for the metric (Options.Threshold for a run without one), the
	// error threshold for the error ratio. FloorSource says what set it,
	// e.g. "B: aa".
	Floor       float64
	FloorSource string
	P           float64 // Welch's two-sided p; NaN when untestable (n < 2 on a side)
	PHolm       float64 // P adjusted by Holm over every test of the diff
	Verdict     string
	Gate        bool // counts as a regression for the exit code
}

// Result is the comparison of two separate runs.
type Result struct {
	A, B             string
	FloorA, FloorB   report.NoiseFloor
	Keys             []KeyRow // every key of A, then keys only in B
	Rows             []Row    // metric rows of keys measured on both sides
	Regressions      int      // gated keys plus gated rows
	OnlyInA, OnlyInB []string // keys with cells on one side only; only in B is never gated
	Opts             Options
}

// Compare compares run b against baseline a, on the plan's own cells.
func Compare(a, b *report.Report, o Options) Result {
	res := Result{A: a.Run, B: b.Run, Opts: o, FloorA: noiseOf(a), FloorB: noiseOf(b)}
	floors := map[string]report.NoiseFloor{"A": res.FloorA, "B": res.FloorB}
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
		for _, m := range o.Metrics {
			row := compareSamples(k, m, values(ga[k], m), values(gb[k], m))
			row.Floor, row.FloorSource = floor(o, m, floors)
			res.Rows = append(res.Rows, row)
		}
	}
	// Holm over the family: every metric test of the diff.
	ps := make([]float64, len(res.Rows))
	for i, r := range res.Rows {
		ps[i] = r.P
	}
	for i, adj := range stats.Holm(ps) {
		r := &res.Rows[i]
		r.PHolm = adj
		if r.Verdict != Missing {
			r.Verdict, r.Gate = verdict(r.Metric, better(r.Metric), r.Change, r.Floor, r.PHolm, o)
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
