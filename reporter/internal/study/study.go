// Package study owns `reporter study`: a lab study's record
// (results/<study-run>/study.json, written by `loadgen study`) turned into
// its summary (per condition × variant × metric: n, mean, median, standard
// deviation, range, 95 % confidence interval of the mean and an
// order-statistic interval of the median; the difference of every variant
// from the baseline with Welch's 95 % interval and a Holm-adjusted p,
// significant or kept as a negative result), the report (Markdown and
// HTML), one SVG figure per metric, summary.json and samples.csv, and the
// study's entry in the history index.
package study

import (
	"math"
	"sort"
	"time"

	"proxybench/internal/stats"
	"proxybench/internal/studydata"
	"proxybench/reporter/internal/report"
)

// SummarySchema versions summary.json.
const SummarySchema = "proxybench.study-summary/v1"

// Alpha is the significance level of the comparisons (after Holm).
const Alpha = 0.05

// Num is a float that encodes NaN (not measured, or no spread) as null.
type Num = report.Num

// Summary is summary.json: everything the report says, as data.
type Summary struct {
	Schema    string                `json:"schema"`
	Run       string                `json:"run"`
	Study     string                `json:"study"`
	Title     string                `json:"title"`
	Scale     string                `json:"scale"`
	Status    string                `json:"status"`
	Error     string                `json:"error,omitempty"`
	Start     time.Time             `json:"start"`
	End       time.Time             `json:"end"`
	Generated time.Time             `json:"generated"`
	Host      studydata.Host        `json:"host"`
	Baseline  string                `json:"baseline,omitempty"`
	Samples   int                   `json:"samples"` // good samples
	Failed    int                   `json:"failed_samples"`
	ChecksOK  bool                  `json:"checks_ok"`
	Checks    []studydata.Check     `json:"checks"`
	Stats     []Stat                `json:"stats"`
	Diffs     []Diff                `json:"diffs"`
	NA        []studydata.NA        `json:"na,omitempty"`
	Original  []Original            `json:"original,omitempty"`
	Metrics   []studydata.Metric    `json:"metrics"`
	Groups    []studydata.Group     `json:"groups"`
	Variants  []studydata.Variant   `json:"variants"`
	Method    []string              `json:"method"`
	Notes     []string              `json:"notes,omitempty"`
	Question  string                `json:"question"`
	Reference []studydata.Reference `json:"-"`
}

// Stat summarises one metric of one variant in one group.
type Stat struct {
	Group   string `json:"group"`
	Variant string `json:"variant"`
	Metric  string `json:"metric"`
	N       int    `json:"n"`
	Failed  int    `json:"failed"` // failed samples of the group × variant
	Mean    Num    `json:"mean"`
	CILow   Num    `json:"ci95_low"` // 95 % Student-t interval of the mean; null when n < 2
	CIHigh  Num    `json:"ci95_high"`
	Median  Num    `json:"median"`
	Stddev  Num    `json:"stddev"` // sample standard deviation; null when n < 2
	CV      Num    `json:"cv"`
	Min     Num    `json:"min"`
	Max     Num    `json:"max"`
	// MedianLow and MedianHigh are the order-statistic interval of the
	// median with at least 95 % coverage, or the whole range when the
	// sample is too small for that; MedianCoverage is its exact coverage.
	MedianLow      Num `json:"median_ci_low"`
	MedianHigh     Num `json:"median_ci_high"`
	MedianCoverage Num `json:"median_ci_coverage"`
}

// Diff is one variant against the baseline in one group, on one metric
// that has a direction (Metric.Better).
type Diff struct {
	Group    string `json:"group"`
	Variant  string `json:"variant"`
	Baseline string `json:"baseline"`
	Metric   string `json:"metric"`
	Delta    Num    `json:"delta"` // mean(variant) - mean(baseline), in the metric's unit
	Low      Num    `json:"ci95_low"`
	High     Num    `json:"ci95_high"`
	Relative Num    `json:"relative"` // delta / mean(baseline)
	P        Num    `json:"p"`        // Welch, two-sided
	PHolm    Num    `json:"p_holm"`   // Holm-adjusted over every comparison of the study
	// Verdict is "higher", "lower", "no significant difference" or
	// "untestable" (fewer than two samples on a side).
	Verdict string `json:"verdict"`
}

// Original is a finding of the original study beside ours.
type Original struct {
	studydata.Reference
	Ours       Num    `json:"ours_mean"`
	OursMedian Num    `json:"ours_median"`
	OursUnit   string `json:"ours_unit"`
	OursN      int    `json:"ours_n"`
}

// Verdicts.
const (
	VerdictHigher     = "higher"
	VerdictLower      = "lower"
	VerdictNone       = "no significant difference"
	VerdictUntestable = "untestable"
)

// Summarize computes the summary of a record.
func Summarize(r *studydata.Record, now time.Time) *Summary {
	s := &Summary{Schema: SummarySchema, Run: r.Run, Study: r.Study, Title: r.Title, Scale: r.Scale, Status: r.Status,
		Error: r.Error, Start: r.Start, End: r.End, Generated: now.UTC(), Host: r.Host, Baseline: r.Baseline,
		Checks: r.Checks, NA: r.NA, Metrics: r.Metrics, Groups: r.Groups, Variants: r.Variants, Method: r.Method,
		Notes: r.Notes, Question: r.Question, ChecksOK: true}
	for _, c := range r.Checks {
		s.ChecksOK = s.ChecksOK && c.OK
	}
	for _, x := range r.Samples {
		if x.Error != "" {
			s.Failed++
		} else {
			s.Samples++
		}
	}
	groups := groupNames(r.Groups)
	for _, g := range groups {
		for _, v := range r.Variants {
			for _, m := range r.Metrics {
				xs := r.Values(g, v.Name, m.Name)
				if len(xs) == 0 && r.Failed(g, v.Name) == 0 {
					continue
				}
				x := stats.Summarize(xs)
				st := Stat{Group: g, Variant: v.Name, Metric: m.Name, N: x.N, Failed: r.Failed(g, v.Name),
					Mean: Num(x.Mean), CILow: Num(x.CILow), CIHigh: Num(x.CIHigh), Median: Num(x.Median),
					Stddev: Num(x.Stddev), CV: Num(x.CV), Min: Num(x.Min), Max: Num(x.Max)}
				if x.N == 0 {
					st.Mean, st.Median, st.Min, st.Max = report.NaN(), report.NaN(), report.NaN(), report.NaN()
				}
				lo, hi, cov := MedianCI(xs, 0.95)
				st.MedianLow, st.MedianHigh, st.MedianCoverage = Num(lo), Num(hi), Num(cov)
				s.Stats = append(s.Stats, st)
			}
		}
	}
	if r.Baseline != "" {
		for _, g := range groups {
			for _, v := range r.Variants {
				if v.Name == r.Baseline {
					continue
				}
				for _, m := range r.Metrics {
					if m.Better == "" {
						continue // a check value, not a result to compare
					}
					a, b := r.Values(g, r.Baseline, m.Name), r.Values(g, v.Name, m.Name)
					if len(a) == 0 || len(b) == 0 {
						continue
					}
					t := stats.Welch(a, b)
					d := Diff{Group: g, Variant: v.Name, Baseline: r.Baseline, Metric: m.Name, Delta: Num(t.Mean),
						Low: Num(t.CILow), High: Num(t.CIHigh), P: Num(t.P), Relative: report.NaN()}
					if ma := stats.Mean(a); ma != 0 {
						d.Relative = Num(t.Mean / math.Abs(ma))
					}
					s.Diffs = append(s.Diffs, d)
				}
			}
		}
		ps := make([]float64, len(s.Diffs))
		for i, d := range s.Diffs {
			ps[i] = float64(d.P)
		}
		adj := stats.Holm(ps)
		for i := range s.Diffs {
			d := &s.Diffs[i]
			d.PHolm = Num(adj[i])
			switch {
			case !d.PHolm.Known():
				d.Verdict = VerdictUntestable
			case d.PHolm < Alpha && d.Delta > 0:
				d.Verdict = VerdictHigher
			case d.PHolm < Alpha && d.Delta < 0:
				d.Verdict = VerdictLower
			default:
				d.Verdict = VerdictNone
			}
		}
	}
	unit := map[string]string{}
	for _, m := range r.Metrics {
		unit[m.Name] = m.Unit
	}
	for _, ref := range r.Original {
		xs := r.Values(ref.Group, ref.Variant, ref.Metric)
		o := Original{Reference: ref, Ours: report.NaN(), OursMedian: report.NaN(), OursUnit: unit[ref.Metric], OursN: len(xs)}
		if len(xs) > 0 {
			o.Ours, o.OursMedian = Num(stats.Mean(xs)), Num(stats.Median(xs))
		}
		s.Original = append(s.Original, o)
	}
	return s
}

// groupNames lists the groups' names in order, "" when there are none.
func groupNames(gs []studydata.Group) []string {
	if len(gs) == 0 {
		return []string{""}
	}
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Name
	}
	return out
}

// Stat returns the summary of group × variant × metric.
func (s *Summary) Stat(group, variant, metric string) (Stat, bool) {
	for _, x := range s.Stats {
		if x.Group == group && x.Variant == variant && x.Metric == metric {
			return x, true
		}
	}
	return Stat{}, false
}

// MedianCI is the distribution-free interval of the median: the order
// statistics x(k) and x(n+1-k) with the largest k whose coverage
// 1 - 2·P(Binomial(n, ½) < k) is at least level; with too few values for
// that level, the whole range and its coverage (n = 5: 93.75 %). NaN
// without values.
func MedianCI(xs []float64, level float64) (lo, hi, coverage float64) {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	n := len(v)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	sort.Float64s(v)
	// cdf[j] = P(X <= j) for X ~ Binomial(n, 1/2).
	cdf := make([]float64, n+1)
	p := math.Pow(0.5, float64(n))
	sum := 0.0
	for j := 0; j <= n; j++ {
		if j > 0 {
			p = p * float64(n-j+1) / float64(j)
		}
		sum += p
		cdf[j] = sum
	}
	k := 1 // the whole range
	for c := 2; c <= (n+1)/2; c++ {
		if 1-2*cdf[c-1] >= level {
			k = c
		} else {
			break
		}
	}
	return v[k-1], v[n-k], 1 - 2*cdf[k-1]
}
