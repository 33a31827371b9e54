package diff

import (
	"fmt"
	"io"
	"math"
	"strings"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
)

// DriftNote is what every comparison of separate runs says about them.
const DriftNote = "Separate runs cannot cancel drift between them (the host's state, other load, caches, thermal): " +
	"a change is called only when it is significant after Holm and larger than both runs' noise floors, so a real change smaller than the drift goes unseen. " +
	"To judge a change of a proxy, measure baseline and candidate interleaved in one run (the duet: `make duet`) and compare inside it: `reporter diff -run <id>`."

// Markdown writes the comparison of two runs: the gates that fired, every
// key's repeats ("n valid of m") and status, and the metric table.
func (res Result) Markdown(w io.Writer) error {
	var b strings.Builder
	o := res.Opts
	fmt.Fprintf(&b, "# proxybench diff: %s → %s\n\n", res.A, res.B)
	fmt.Fprintf(&b, "Baseline A = %s, candidate B = %s: two separate runs. A cell key of A that is missing, failed or skipped in B, or whose share of invalid repeats rose, is a regression. "+
		"Metrics compare the repeats of the plan's own cells (valid repeats; the error ratio over every repeat): the geometric mean (the error ratio: the arithmetic mean), "+
		"the relative change (absolute percentage points for the error ratio) with its 95 %% Welch interval, ± the half-width of each side's 95 %% CI of the mean (n/a below 2 repeats). "+
		"Significance: Welch's t test on log values, p adjusted by Holm over the %d tests of this diff, at α = %g. "+
		"A change counts only when larger than the floor: the larger of both runs' noise floors (%s stands in for a run that could not measure one), %s for the error ratio; "+
		"a rise in the error ratio beyond it always gates.\n\n",
		res.A, res.B, tested(res.Rows), o.Alpha, report.Pct(o.Threshold), pp(o.ErrorThreshold))
	fmt.Fprintf(&b, "Noise floor of A: %s.\n\nNoise floor of B: %s.\n\n", floorLine(res.FloorA, o.Metrics, o), floorLine(res.FloorB, o.Metrics, o))
	b.WriteString(DriftNote + "\n\n")
	gates := keyGates(res.Keys)
	for _, r := range res.Rows {
		if r.Gate {
			gates = append(gates, gateLine(r.Key, r.Metric, r.Verdict, r.CentreA, r.CentreB, r.Change))
		}
	}
	writeGates(&b, gates)
	keyTable(&b, "##", res.Keys)
	few := false
	if len(res.Rows) > 0 {
		b.WriteString("## Metrics\n\n| cell | metric | A | ± A | B | ± B | change | 95 % CI | floor | p | p (Holm) | n A/B | verdict |\n" +
			"|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n")
	}
	for _, r := range res.Rows {
		few = few || strings.Contains(r.Verdict, "too few")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |\n", r.Key, r.Metric,
			fmtVal(r.Metric, r.CentreA), fmtSpread(r.Metric, r.SpreadA, r.CentreA), fmtVal(r.Metric, r.CentreB), fmtSpread(r.Metric, r.SpreadB, r.CentreB),
			fmtChange(r.Metric, r.Change), fmtCI(r.Metric, r.CILow, r.CIHigh), fmtFloor(r.Metric, r.Floor, r.FloorSource), report.FormatP(r.P), report.FormatP(r.PHolm),
			len(r.A), len(r.B), bold(r.Verdict, r.Gate))
	}
	if len(res.Rows) > 0 {
		b.WriteString("\n")
	}
	if few {
		b.WriteString("Note: with 1 repeat on a side there is no spread to test against, and no noise floor: such changes beyond -threshold are reported as *too few repeats to confirm*. " +
			"Run with REPEATS=5 to judge.\n\n")
	}
	if len(res.OnlyInB) > 0 {
		fmt.Fprintf(&b, "Only in %s (not gated): %s\n\n", res.B, strings.Join(res.OnlyInB, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown writes the interleaved comparison of one run: per arm, its
// gates (the candidate only) and its paired rows.
func (res RunResult) Markdown(w io.Writer) error {
	var b strings.Builder
	o := res.Opts
	fmt.Fprintf(&b, "# proxybench diff: run %s, interleaved arms\n\n", res.Run)
	fmt.Fprintf(&b, "Interleaved mode: every cell of an arm was measured next to the plan's own cell of the same key and repeat, so the host's drift cancels in the pair. "+
		"Per pair the log ratio arm / plan (the error ratio: the difference); the paired Student-t test gives the change (the geometric mean of the ratios − 1), its 95 %% interval and p; "+
		"p adjusted by Holm over every test of the arm, at α = %g. Values shown are geometric means over the pairs (the error ratio: arithmetic). "+
		"Latency percentiles are the loadgen's exact values when both cells of a pair have them (Prometheus's estimates on both sides otherwise).\n\n", o.Alpha)
	fmt.Fprintf(&b, "Noise floor of the run: %s.\n\n", floorLine(res.Floor, o.Metrics, o))
	for _, set := range res.Arms {
		switch set.Arm {
		case cellid.ArmCandidate:
			b.WriteString("## Duet: candidate against baseline\n\n")
			fmt.Fprintf(&b, "A = the baseline (the plan's own cells), B = the candidate, alternating cell by cell. A regression: a key the candidate misses, failed or measured with more invalid repeats, "+
				"or a change significant after Holm and worse by more than the run's noise floor (%s for the error ratio, whose rise beyond it always gates).\n\n", pp(o.ErrorThreshold))
			gates := keyGates(set.Keys)
			for _, r := range set.Rows {
				if r.Gate {
					gates = append(gates, gateLine(r.Key, r.Metric, r.Verdict, float64(r.Base), float64(r.Paired.Arm), float64(r.Change)))
				}
			}
			writeGates(&b, gates)
			keyTable(&b, "###", set.Keys)
			b.WriteString("### Metrics\n\n")
			armTable(&b, set, "baseline", "candidate", "change")
		case cellid.ArmUnobserved:
			b.WriteString("## Observer effect: unobserved against observed\n\n")
			b.WriteString("The same cells measured with the observability stack paused (unobserved: the loadgen's own counts and HdrHistogram only), alternating with the observed ones. " +
				"A measurement, never a gate: the goal is no significant difference.\n\n")
			var sig []string
			for _, r := range set.Rows {
				if r.Verdict == SignificantEffect {
					sig = append(sig, fmt.Sprintf("%s %s %s", r.Key, r.Metric, fmtChange(r.Metric, float64(r.Change))))
				}
			}
			if len(sig) == 0 {
				fmt.Fprintf(&b, "**No significant observer effect** (Holm-adjusted p ≥ %g for every cell and metric).\n\n", o.Alpha)
			} else {
				fmt.Fprintf(&b, "**Significant observer effect**: %s.\n\n", strings.Join(sig, "; "))
			}
			armTable(&b, set, "observed", "unobserved", "difference")
		case cellid.ArmControl:
			b.WriteString("## A/A control\n\n")
			b.WriteString("One group of the plan's cells measured a second time in each round: a difference that is truly zero. Its interval sets the run's noise floor; a significant difference is drift inside the run.\n\n")
			armTable(&b, set, "plan", "copy", "difference")
		default:
			fmt.Fprintf(&b, "## Arm %s against the plan's own cells\n\n", set.Arm)
			armTable(&b, set, "plan", set.Arm, "change")
		}
	}
	if res.Regressions > 0 {
		fmt.Fprintf(&b, "**%d regression(s) of the candidate.**\n", res.Regressions)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func armTable(b *strings.Builder, set ArmSet, base, arm, change string) {
	if len(set.Rows) == 0 {
		b.WriteString("No pair to compare.\n\n")
	} else {
		fmt.Fprintf(b, "| cell | metric | %s | %s | %s | 95 %% CI | floor | p | p (Holm) | pairs | verdict |\n"+
			"|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n", base, arm, change)
	}
	for _, r := range set.Rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", r.Key, r.Metric,
			fmtVal(r.Metric, float64(r.Base)), fmtVal(r.Metric, float64(r.Paired.Arm)), fmtChange(r.Metric, float64(r.Change)),
			fmtCI(r.Metric, float64(r.CILow), float64(r.CIHigh)), fmtFloor(r.Metric, r.Floor, r.FloorSource), report.FormatP(float64(r.P)), report.FormatP(float64(r.PHolm)),
			r.N, bold(r.Verdict, r.Gate))
	}
	if len(set.Rows) > 0 {
		b.WriteString("\n")
	}
	if len(set.Unpaired) > 0 {
		fmt.Fprintf(b, "Left out of the pairs: %s.\n\n", strings.Join(set.Unpaired, "; "))
	}
}

// keyGates lists the gated keys, one line each.
func keyGates(keys []KeyRow) []string {
	var out []string
	for _, k := range keys {
		if k.Gate {
			out = append(out, fmt.Sprintf("- %s: %s\n", k.Key, k.Reason))
		}
	}
	return out
}

// gateLine is one gated metric: its verdict, the two centres and the change.
func gateLine(key, metric, verdict string, a, b, change float64) string {
	return fmt.Sprintf("- %s %s: %s (%s → %s, %s)\n", key, metric, verdict, fmtVal(metric, a), fmtVal(metric, b), fmtChange(metric, change))
}

func writeGates(b *strings.Builder, gates []string) {
	if len(gates) == 0 {
		b.WriteString("**No regression beyond the noise floor.**\n\n")
		return
	}
	fmt.Fprintf(b, "**%d regression(s) beyond the noise floor.**\n\n", len(gates))
	for _, g := range gates {
		b.WriteString(g)
	}
	b.WriteString("\n")
}

// keyTable lists every key's repeats and status under a heading of the
// given level.
func keyTable(b *strings.Builder, level string, keys []KeyRow) {
	if len(keys) == 0 {
		return
	}
	b.WriteString(level + " Cells\n\n| cell | A | B | status |\n|:---|:---|:---|:---|\n")
	for _, k := range keys {
		st := k.Reason
		if st == "" {
			st = k.Status
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", k.Key, k.A, k.B, cellText(bold(st, k.Gate)))
	}
	b.WriteString("\n")
}

// tested counts the rows with a test.
func tested(rows []Row) int {
	n := 0
	for _, r := range rows {
		if !math.IsNaN(r.P) {
			n++
		}
	}
	return n
}

func bold(s string, on bool) string {
	if on {
		return "**" + s + "**"
	}
	return s
}

// cellText keeps a table cell on one row.
func cellText(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func fmtVal(metric string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
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
	case report.Absolute(metric):
		return fmt.Sprintf("±%.2f pp", h*100)
	case centre == 0:
		return "–"
	default:
		return fmt.Sprintf("±%.1f %%", 100*h/math.Abs(centre))
	}
}

// fmtChange is a relative change in percent, the error ratio's in
// percentage points.
func fmtChange(metric string, c float64) string {
	switch {
	case math.IsNaN(c):
		return "–"
	case math.IsInf(c, 0):
		return "from 0"
	case report.Absolute(metric):
		return fmt.Sprintf("%+.2f pp", c*100)
	}
	return report.SignedPct(c)
}

// fmtCI is a change's 95 % interval; n/a without one.
func fmtCI(metric string, lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "n/a"
	}
	return "[" + fmtChange(metric, lo) + ", " + fmtChange(metric, hi) + "]"
}

// fmtFloor is the floor a change is held against and what set it.
func fmtFloor(metric string, f float64, src string) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	v := "±" + report.Pct(f)
	if report.Absolute(metric) {
		v = "±" + pp(f)
	}
	if src != "" && src != FloorThreshold {
		v += " (" + src + ")"
	}
	return v
}

// pp is an absolute share in percentage points.
func pp(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", 100*x), "0"), ".") + " pp"
}
