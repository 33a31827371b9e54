// Package diff owns comparing two runs for a CI gate. Per cell key
// (proxy.origin.scenario.tier) it first asks whether the candidate still
// measured what the baseline did: a key missing, failed or skipped in the
// candidate, or a rise in its share of invalid repeats, is a regression.
// Then, per key and metric, it compares the centre across repeats (median;
// mean for the error ratio), with the 95 % CI of each side and a two-sided
// Mann-Whitney U test over the repeats, and decides whether the change is a
// regression.
package diff

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/stats"
)

// Options tune the comparison.
type Options struct {
	Threshold           float64  // relative change that matters, e.g. 0.05
	ErrorThreshold      float64  // absolute error-ratio change that matters, e.g. 0.005
	Alpha               float64  // significance level, e.g. 0.05
	Metrics             []string // metrics compared; names from report.GroupMetrics
	RequireSignificance bool     // metric changes fail the gate only when significant (key gates and the error ratio always do)
}

// DefaultOptions are the documented defaults.
var DefaultOptions = Options{Threshold: 0.05, ErrorThreshold: 0.005, Alpha: 0.05,
	Metrics: []string{"goodput_rps", "rps", "p50_seconds", "p99_seconds", "error_ratio", "proxy_cpu_cores"}}

// Verdicts of one metric row.
const (
	Unchanged            = "unchanged"
	Improved             = "improved"
	Regressed            = "regressed"
	NotSignificant       = "not significant"
	ImprovedUnconfirmed  = "improved (too few repeats to confirm)"
	RegressedUnconfirmed = "regressed (too few repeats to confirm)"
	// RegressedErrors: the error ratio rose beyond ErrorThreshold without a
	// significant test; it gates all the same.
	RegressedErrors = "regressed (error ratio beyond threshold)"
	Missing         = "missing"
)

// Statuses of one cell key.
const (
	KeyOK         = "ok"
	KeyMissing    = "missing in B"
	KeyFailed     = "failed in B"
	KeySkipped    = "skipped in B"
	KeyInvalidUp  = "more invalid repeats in B"
	KeyOnlyInB    = "only in B"
	KeyFailedInAB = "failed in A and B"
)

// Side counts the repeats of one cell key in one run.
type Side struct {
	Repeats int      // measured cells (report.cells)
	Valid   int      // cells whose verdict is not invalid (suspect counts)
	Failed  int      // cells the loadgen marked failed or aborted
	NotRun  int      // repeats listed in report.not_run
	Reasons []string // distinct reasons: invalid flags of failed/invalid cells, then not_run reasons
}

// Planned is every repeat the run knows of: measured plus not run.
func (s Side) Planned() int { return s.Repeats + s.NotRun }

// Unusable counts the planned repeats that do not measure the proxy:
// invalid cells and repeats not run.
func (s Side) Unusable() int { return s.Planned() - s.Valid }

// String is "n valid of m" with what the others were.
func (s Side) String() string {
	if s.Planned() == 0 {
		return "–"
	}
	out := fmt.Sprintf("%d valid of %d", s.Valid, s.Planned())
	var extra []string
	if inv := s.Repeats - s.Valid - s.Failed; inv > 0 {
		extra = append(extra, fmt.Sprintf("%d invalid", inv))
	}
	if s.Failed > 0 {
		extra = append(extra, fmt.Sprintf("%d failed", s.Failed))
	}
	if s.NotRun > 0 {
		extra = append(extra, fmt.Sprintf("%d not run", s.NotRun))
	}
	if len(extra) > 0 {
		out += " (" + strings.Join(extra, ", ") + ")"
	}
	return out
}

// KeyRow is the verdict on one cell key as a whole.
type KeyRow struct {
	Key    string
	A, B   Side
	Status string // one of the Key* statuses
	Reason string // the status in words, e.g. "failed in B: proxy died"
	Gate   bool   // counts as a regression for the exit code
}

// Row is one cell key and metric.
type Row struct {
	Key    string
	Metric string
	A, B   []float64
	// MedA and MedB are the centres compared: the median, or the mean for
	// error_ratio (one erroring repeat must not hide behind a median).
	MedA, MedB       float64
	SpreadA, SpreadB float64 // half-width of the 95 % Student-t CI; NaN when n < 2
	Change           float64 // relative (B-A)/A; absolute for error_ratio
	P                float64 // NaN when untestable (n < 2 on a side)
	MinP             float64
	Verdict          string
	Gate             bool // counts as a regression for the exit code
}

// Result is the whole comparison.
type Result struct {
	A, B        string
	Keys        []KeyRow // every key of A, then keys only in B
	Rows        []Row    // metric rows of keys measured on both sides
	Regressions int      // gated keys plus gated rows
	OnlyInA     []string // keys with cells in A and none in B (missing or skipped in B)
	OnlyInB     []string // keys with cells in B and none in A: listed, never gated
	Opts        Options
}

// Load reads run id's report.json from results/<id>/, else from
// results/history/<id>/.
func Load(results, id string) (*report.Report, error) {
	p := filepath.Join(results, id, "report.json")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		p = filepath.Join(results, "history", id, "report.json")
	}
	return output.Read(p)
}

// Compare compares run b against baseline a.
func Compare(a, b *report.Report, o Options) Result {
	res := Result{A: a.Run, B: b.Run, Opts: o}
	ga, gb := index(a), index(b)
	sa, sb := sides(a, ga), sides(b, gb)
	var keys []string
	for k := range ga {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kr := judgeKey(k, sa[k], sb[k])
		if kr.Gate {
			res.Regressions++
		}
		res.Keys = append(res.Keys, kr)
		if len(gb[k]) == 0 {
			res.OnlyInA = append(res.OnlyInA, k)
			continue
		}
		if kr.Status == KeyFailed || kr.Status == KeyFailedInAB {
			continue // a failed window's numbers say nothing about the proxy
		}
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

// judgeKey decides the key-level status of a key that has cells in A.
func judgeKey(key string, a, b Side) KeyRow {
	kr := KeyRow{Key: key, A: a, B: b, Status: KeyOK}
	measuredA := a.Repeats > a.Failed // A measured something to lose
	why := func(s Side) string {
		if len(s.Reasons) == 0 {
			return "no reason recorded"
		}
		return strings.Join(s.Reasons, "; ")
	}
	switch {
	case b.Repeats == 0 && b.NotRun == 0:
		kr.Status, kr.Reason, kr.Gate = KeyMissing, KeyMissing, true
	case b.Repeats == 0:
		kr.Status, kr.Reason, kr.Gate = KeySkipped, KeySkipped+": "+why(b), true
	case b.Failed == b.Repeats && !measuredA:
		kr.Status, kr.Reason = KeyFailedInAB, KeyFailedInAB+": "+why(b)
	case b.Failed == b.Repeats:
		kr.Status, kr.Reason, kr.Gate = KeyFailed, KeyFailed+": "+why(b), true
	case b.Unusable()*a.Planned() > a.Unusable()*b.Planned(): // share of unusable repeats rose
		kr.Status, kr.Gate = KeyInvalidUp, true
		kr.Reason = fmt.Sprintf("invalid repeats %d/%d → %d/%d: %s", a.Unusable(), a.Planned(), b.Unusable(), b.Planned(), why(b))
	}
	if (kr.Status == KeyMissing || kr.Status == KeySkipped) && !measuredA {
		kr.Gate = false
		kr.Reason += " (failed in A too)"
	}
	return kr
}

func compareOne(key, metric string, better int, a, b []float64, o Options) Row {
	r := Row{Key: key, Metric: metric, A: a, B: b, P: math.NaN(), MinP: 1}
	centre := stats.Median
	if metric == "error_ratio" {
		centre = stats.Mean
	}
	r.MedA, r.MedB = centre(a), centre(b)
	r.SpreadA, r.SpreadB = spread(a), spread(b)
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
	// With one repeat on a side there is no spread to test against.
	if len(a) >= 2 && len(b) >= 2 {
		mw := stats.MannWhitney(a, b)
		r.P, r.MinP = mw.P, mw.MinP
	}
	worse := (better < 0 && r.MedB > r.MedA) || (better > 0 && r.MedB < r.MedA)
	switch {
	case !matters:
		r.Verdict = Unchanged
	case math.IsNaN(r.P) || r.MinP > o.Alpha: // no outcome of this test could reach alpha
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
	// More errors beyond the threshold always gate.
	if metric == "error_ratio" && matters && worse && r.Verdict != Regressed {
		r.Verdict, r.Gate = RegressedErrors, true
	}
	return r
}

// spread is the half-width of the 95 % CI of the mean; NaN when n < 2.
func spread(xs []float64) float64 {
	s := stats.Summarize(xs)
	if s.N < 2 {
		return math.NaN()
	}
	return (s.CIHigh - s.CILow) / 2
}

func index(r *report.Report) map[string][]*report.Cell {
	m := map[string][]*report.Cell{}
	for i := range r.Cells {
		c := &r.Cells[i]
		m[c.GroupKey()] = append(m[c.GroupKey()], c)
	}
	return m
}

// repeatSuffix ends a cell id: proxy.origin.scenario.tier.r<N>.
var repeatSuffix = regexp.MustCompile(`\.r[0-9]+$`)

// sides counts each key's repeats: cells from g, not-run repeats from
// r.NotRun (whose ids carry the key).
func sides(r *report.Report, g map[string][]*report.Cell) map[string]Side {
	out := map[string]Side{}
	for k, cells := range g {
		s := Side{Repeats: len(cells)}
		for _, c := range cells {
			if c.Validity.Verdict != report.Invalid {
				s.Valid++
				continue
			}
			failed := c.Failed
			for _, f := range c.Validity.Flags {
				switch {
				case f.Code == report.FlagFailed:
					failed = true
					s.addReason(f.Reason)
				case f.Severity == report.Invalid:
					s.addReason(f.Code + ": " + f.Reason)
				}
			}
			if failed {
				s.Failed++
			}
		}
		out[k] = s
	}
	for _, nr := range r.NotRun {
		k := repeatSuffix.ReplaceAllString(nr.ID, "")
		s := out[k]
		s.NotRun++
		reason := nr.Reason
		if reason == "" {
			reason = "not run"
		}
		s.addReason(reason)
		out[k] = s
	}
	return out
}

// addReason adds a reason once; empty says nothing and is left out.
func (s *Side) addReason(reason string) {
	if reason != "" && !slices.Contains(s.Reasons, reason) {
		s.Reasons = append(s.Reasons, reason)
	}
}

// values are the metric over the key's repeats: valid repeats (all when
// none is valid), except the error ratio, which counts every repeat that has
// one: errors are what an invalid repeat must not hide.
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
	all := func(*report.Cell) bool { return true }
	if metric == "error_ratio" {
		return pick(all)
	}
	v := pick(func(c *report.Cell) bool { return c.Validity.Verdict != report.Invalid })
	if len(v) == 0 {
		v = pick(all)
	}
	return v
}

// Markdown writes the comparison: the gates that fired, every key's repeats
// ("n valid of m") and status, and the metric table.
func (res Result) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# proxybench diff: %s → %s\n\n", res.A, res.B)
	fmt.Fprintf(&b, "Baseline A = %s, candidate B = %s. A cell key of A that is missing, failed or skipped in B, or whose share of invalid repeats rose, is a regression. "+
		"Metrics compare the median across valid repeats (the error ratio: the mean over every repeat), relative change (absolute percentage points for the error ratio), "+
		"± is the half-width of the 95 %% CI (n/a below 2 repeats). Significance: two-sided Mann-Whitney U at α = %g. "+
		"A change smaller than %g %% (%g pp for errors) is *unchanged*; a rise in the error ratio beyond it always gates.\n\n",
		res.A, res.B, res.Opts.Alpha, res.Opts.Threshold*100, res.Opts.ErrorThreshold*100)
	if res.Regressions > 0 {
		fmt.Fprintf(&b, "**%d regression(s) beyond the threshold.**\n\n", res.Regressions)
		for _, k := range res.Keys {
			if k.Gate {
				fmt.Fprintf(&b, "- %s: %s\n", k.Key, k.Reason)
			}
		}
		for _, r := range res.Rows {
			if r.Gate {
				fmt.Fprintf(&b, "- %s %s: %s (%s → %s, %s)\n", r.Key, r.Metric, r.Verdict, fmtVal(r.Metric, r.MedA), fmtVal(r.Metric, r.MedB), fmtChange(r))
			}
		}
		b.WriteString("\n")
	} else {
		b.WriteString("**No regression beyond the threshold.**\n\n")
	}

	b.WriteString("## Cells\n\n| cell | A | B | status |\n|:---|:---|:---|:---|\n")
	for _, k := range res.Keys {
		st := k.Reason
		if st == "" {
			st = k.Status
		}
		if k.Gate {
			st = "**" + st + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", k.Key, k.A, k.B, cellText(st))
	}
	b.WriteString("\n")

	few := false
	if len(res.Rows) > 0 {
		b.WriteString("## Metrics\n\n| cell | metric | A | ± A | B | ± B | change | p | n A/B | verdict |\n|:---|:---|---:|---:|---:|---:|---:|---:|---:|:---|\n")
	}
	for _, r := range res.Rows {
		p := "n/a"
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
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |\n", r.Key, r.Metric, fmtVal(r.Metric, r.MedA), fmtSpread(r.Metric, r.SpreadA, r.MedA),
			fmtVal(r.Metric, r.MedB), fmtSpread(r.Metric, r.SpreadB, r.MedB), fmtChange(r), p, len(r.A), len(r.B), v)
	}
	if len(res.Rows) > 0 {
		b.WriteString("\n")
	}
	if few {
		b.WriteString("Note: with n repeats on each side the smallest two-sided Mann-Whitney p-value is 2/C(2n, n) (0.33 for n = 2, 0.10 for n = 3, 0.029 for n = 4; no test at all for n = 1): " +
			"fewer than 4 repeats per side cannot show significance at α = 0.05, so such changes are reported as *too few repeats to confirm*. Run with REPEATS=5 to judge.\n\n")
	}
	if len(res.OnlyInB) > 0 {
		fmt.Fprintf(&b, "Only in %s (not gated): %s\n\n", res.B, strings.Join(res.OnlyInB, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cellText keeps a table cell on one row.
func cellText(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
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

// fmtSpread shows the CI half-width relative to the centre (pp for the
// error ratio); n/a when there is none.
func fmtSpread(metric string, h, centre float64) string {
	switch {
	case math.IsNaN(h) || math.IsNaN(centre):
		return "n/a"
	case metric == "error_ratio":
		return fmt.Sprintf("±%.2f pp", h*100)
	case centre == 0:
		return "–"
	default:
		return fmt.Sprintf("±%.1f %%", 100*h/math.Abs(centre))
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
