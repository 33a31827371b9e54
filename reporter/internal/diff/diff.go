// Package diff owns comparing two runs: per cell key and metric, the change
// of the median across repeats, its significance (two-sided Mann-Whitney U
// over the repeats), and whether it is a regression a CI gate should stop.
package diff

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/stats"
)

// Options tune the comparison.
type Options struct {
	Threshold           float64  // relative change that matters, e.g. 0.05
	ErrorThreshold      float64  // absolute error-ratio change that matters, e.g. 0.005
	Alpha               float64  // significance level, e.g. 0.05
	Metrics             []string // metrics compared; names from report.GroupMetrics
	RequireSignificance bool     // only significant regressions fail the gate
}

// DefaultOptions are the documented defaults.
var DefaultOptions = Options{Threshold: 0.05, ErrorThreshold: 0.005, Alpha: 0.05,
	Metrics: []string{"rps", "p50_seconds", "p99_seconds", "error_ratio", "proxy_cpu_cores"}}

// Verdicts of one row.
const (
	Unchanged            = "unchanged"
	Improved             = "improved"
	Regressed            = "regressed"
	NotSignificant       = "not significant"
	ImprovedUnconfirmed  = "improved (too few repeats to confirm)"
	RegressedUnconfirmed = "regressed (too few repeats to confirm)"
	Missing              = "missing"
)

// Row is one cell key and metric.
type Row struct {
	Key     string
	Metric  string
	A, B    []float64
	MedA    float64
	MedB    float64
	Change  float64 // relative (B-A)/A; absolute for error_ratio
	P       float64 // NaN when untestable
	MinP    float64
	Verdict string
	Gate    bool // counts as a regression for the exit code
}

// Result is the whole comparison.
type Result struct {
	A, B        string
	Rows        []Row
	Regressions int
	OnlyInA     []string
	OnlyInB     []string
	Opts        Options
}

// Compare compares run b against baseline a.
func Compare(a, b *report.Report, o Options) Result {
	res := Result{A: a.Run, B: b.Run, Opts: o}
	ga, gb := index(a), index(b)
	var keys []string
	for k := range ga {
		if _, ok := gb[k]; ok {
			keys = append(keys, k)
		} else {
			res.OnlyInA = append(res.OnlyInA, k)
		}
	}
	for k := range gb {
		if _, ok := ga[k]; !ok {
			res.OnlyInB = append(res.OnlyInB, k)
		}
	}
	sort.Strings(keys)
	sort.Strings(res.OnlyInA)
	sort.Strings(res.OnlyInB)
	for _, k := range keys {
		for _, m := range o.Metrics {
			better := 0
			for _, gm := range report.GroupMetrics {
				if gm.Name == m {
					better = gm.Better
				}
			}
			row := compareOne(k, m, better, values(ga[k], m), values(gb[k], m), o)
			if row.Gate {
				res.Regressions++
			}
			res.Rows = append(res.Rows, row)
		}
	}
	return res
}

func compareOne(key, metric string, better int, a, b []float64, o Options) Row {
	r := Row{Key: key, Metric: metric, A: a, B: b, P: math.NaN(), MedA: stats.Median(a), MedB: stats.Median(b)}
	if len(a) == 0 || len(b) == 0 {
		r.Verdict = Missing
		return r
	}
	var matters bool
	if metric == "error_ratio" {
		r.Change = r.MedB - r.MedA
		matters = math.Abs(r.Change) > o.ErrorThreshold
	} else {
		if r.MedA == 0 {
			r.Change = math.NaN()
			matters = r.MedB != 0
		} else {
			r.Change = (r.MedB - r.MedA) / math.Abs(r.MedA)
			matters = math.Abs(r.Change) > o.Threshold
		}
	}
	mw := stats.MannWhitney(a, b)
	r.P, r.MinP = mw.P, mw.MinP
	worse := (better < 0 && r.MedB > r.MedA) || (better > 0 && r.MedB < r.MedA)
	switch {
	case !matters:
		r.Verdict = Unchanged
	case r.MinP > o.Alpha: // no outcome of this test could reach alpha
		if worse {
			r.Verdict, r.Gate = RegressedUnconfirmed, !o.RequireSignificance
		} else {
			r.Verdict = ImprovedUnconfirmed
		}
	case r.P >= o.Alpha:
		r.Verdict = NotSignificant
	case worse:
		r.Verdict, r.Gate = Regressed, true
	default:
		r.Verdict = Improved
	}
	return r
}

func index(r *report.Report) map[string][]*report.Cell {
	m := map[string][]*report.Cell{}
	for i := range r.Cells {
		c := &r.Cells[i]
		m[c.Key()] = append(m[c.Key()], c)
	}
	return m
}

// values are the metric over valid repeats (all repeats when none is valid).
func values(cells []*report.Cell, metric string) []float64 {
	var get func(*report.Cell) report.Num
	for _, gm := range report.GroupMetrics {
		if gm.Name == metric {
			get = gm.Get
		}
	}
	if get == nil {
		return nil
	}
	pick := func(ok func(*report.Cell) bool) []float64 {
		var out []float64
		for _, c := range cells {
			if v := get(c); ok(c) && v.Known() {
				out = append(out, float64(v))
			}
		}
		return out
	}
	v := pick(func(c *report.Cell) bool { return c.Validity.Verdict != report.Invalid })
	if len(v) == 0 {
		v = pick(func(*report.Cell) bool { return true })
	}
	return v
}

// Markdown writes the comparison as a readable table.
func (res Result) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# proxybench diff: %s → %s\n\n", res.A, res.B)
	fmt.Fprintf(&b, "Baseline A = %s, candidate B = %s. Change is of the median across valid repeats (relative; absolute percentage points for the error ratio). "+
		"Significance: two-sided Mann-Whitney U at α = %g. A change smaller than %g %% (%g pp for errors) is *unchanged*.\n\n",
		res.A, res.B, res.Opts.Alpha, res.Opts.Threshold*100, res.Opts.ErrorThreshold*100)
	if res.Regressions > 0 {
		fmt.Fprintf(&b, "**%d regression(s) beyond the threshold.**\n\n", res.Regressions)
	} else {
		b.WriteString("**No regression beyond the threshold.**\n\n")
	}
	few := false
	b.WriteString("| cell | metric | A median | B median | change | p | repeats A/B | verdict |\n|:---|:---|---:|---:|---:|---:|---:|:---|\n")
	for _, r := range res.Rows {
		p := "–"
		if !math.IsNaN(r.P) {
			p = fmt.Sprintf("%.3f", r.P)
		}
		v := r.Verdict
		if r.Gate {
			v = "**" + v + "**"
		}
		if strings.Contains(r.Verdict, "too few") {
			few = true
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d/%d | %s |\n", r.Key, r.Metric, fmtVal(r.Metric, r.MedA), fmtVal(r.Metric, r.MedB),
			fmtChange(r), p, len(r.A), len(r.B), v)
	}
	b.WriteString("\n")
	if few {
		b.WriteString("Note: with n repeats on each side the smallest two-sided Mann-Whitney p-value is 2/C(2n, n) (1.0 for n = 1, 0.33 for n = 2, 0.10 for n = 3, 0.029 for n = 4): " +
			"fewer than 4 repeats per side cannot show significance at α = 0.05, so such changes are reported as *too few repeats to confirm*. Run with REPEATS=5 to judge.\n\n")
	}
	if len(res.OnlyInA) > 0 {
		fmt.Fprintf(&b, "Only in %s: %s\n\n", res.A, strings.Join(res.OnlyInA, ", "))
	}
	if len(res.OnlyInB) > 0 {
		fmt.Fprintf(&b, "Only in %s: %s\n\n", res.B, strings.Join(res.OnlyInB, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtVal(metric string, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	switch {
	case strings.HasSuffix(metric, "_seconds"):
		return fmt.Sprintf("%.3g ms", v*1e3)
	case metric == "error_ratio":
		return fmt.Sprintf("%.2f %%", v*100)
	case metric == "proxy_mem_peak_bytes":
		return fmt.Sprintf("%.1f MB", v/1e6)
	case metric == "proxy_cpu_cores":
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func fmtChange(r Row) string {
	if math.IsNaN(r.Change) {
		return "–"
	}
	if r.Metric == "error_ratio" {
		return fmt.Sprintf("%+.2f pp", r.Change*100)
	}
	return fmt.Sprintf("%+.1f %%", r.Change*100)
}
