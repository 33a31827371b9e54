package diff

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/reporter/internal/report"
)

// DriftNote is what every comparison of separate runs says about them.
const DriftNote = "Separate runs cannot cancel drift between them (the host's state, other load, caches, thermal): " +
	"the interval of each metric holds the noise between repeats, not a shift of the whole run, so a change smaller than the drift can be called. " +
	"To judge a change of a proxy, measure baseline and candidate interleaved in one run (the duet: `make duet`) and compare inside it: `reporter diff -run <id>`."

// Markdown writes the comparison of two runs: the gates that fired, every
// key's repeats ("n valid of m") and status, and the metric table.
func (res Result) Markdown(w io.Writer) error {
	var b strings.Builder
	o := res.Opts
	fmt.Fprintf(&b, "# proxybench diff: %s → %s\n\n", res.A, res.B)
	if len(res.Unlike) > 0 {
		b.WriteString("**Warning: the two runs measured differently, so this compares two setups, not two proxies or builds:**\n\n")
		for _, u := range res.Unlike {
			b.WriteString("- " + u + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Baseline A = %s, candidate B = %s: two separate runs. A cell key of A that is missing, failed or skipped in B, or whose share of invalid repeats rose, is a regression. "+
		"Each metric is answered at the margin ±%s (the error ratio: ±%s): worse or better by more than it, equivalent within it, or not resolved. "+
		"The answer rests on Welch's interval of the change on log values of the repeats (the error ratio: its values), each gated metric at its share of α = %g over the %d gated rows (Bonferroni); "+
		"only a gated metric (%s) worse by more than the margin fails the gate. Centres are geometric means (the error ratio: arithmetic); ± is each side's 95 %% CI half-width (n/a below 2 repeats).\n\n",
		res.A, res.B, report.Pct(o.Margin), pp(o.ErrorMargin), o.Alpha, gatedRows(res.Rows), gatedNames(res.Rows))
	fmt.Fprintf(&b, "Noise floor of A (shown, not used): %s.\n\nNoise floor of B: %s.\n\n", floorLine(res.FloorA, o.Metrics), floorLine(res.FloorB, o.Metrics))
	b.WriteString(DriftNote + "\n\n")
	gates := keyGates(res.Keys)
	for _, r := range res.Rows {
		if r.Gate {
			gates = append(gates, gateLine(r.Key, r.Metric, r.Verdict, r.CentreA, r.CentreB))
		}
	}
	writeGates(&b, gates, o)
	keyTable(&b, "##", res.Keys)
	few := false
	if len(res.Rows) > 0 {
		b.WriteString("## Metrics\n\n| cell | metric | A | ± A | B | ± B | change | interval | resolves | p | n A/B | answer |\n" +
			"|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|\n")
	}
	for _, r := range res.Rows {
		few = few || (r.Decision.Outcome == decide.NoData && r.Verdict != Missing)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |\n", r.Key, metricName(r.Metric, r.Gated),
			fmtVal(r.Metric, r.CentreA), fmtSpread(r.Metric, r.SpreadA, r.CentreA), fmtVal(r.Metric, r.CentreB), fmtSpread(r.Metric, r.SpreadB, r.CentreB),
			fmtChange(r.Metric, r.Change), fmtCI(r.Metric, r.CILow, r.CIHigh), fmtResolves(r.Decision), report.FormatP(r.P),
			len(r.A), len(r.B), bold(outcome(r.Decision), r.Gate))
	}
	if len(res.Rows) > 0 {
		b.WriteString("\n")
	}
	if few {
		b.WriteString("Note: with 1 repeat on a side there is no spread, so no interval: those metrics are not resolved (no data) and never gate. " +
			"Separate runs need several repeats each, and on a noisy host resolve only large changes (each answer says the margin it resolves); " +
			"to judge a change, measure both in one run: `make duet`.\n\n")
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
		"Per pair the log ratio arm / plan (the error ratio: the difference). Each metric is answered at the margin ±%s (the error ratio: ±%s): worse or better by more than it, equivalent within it, or not resolved. "+
		"The duet's candidate and the A/A control rest on anytime-valid intervals (Lai's t confidence sequence), the gated metrics of every key sharing α = %g (Bonferroni), so a duet that stopped as soon as it was decided keeps its false-alarm rate; "+
		"\"resolves\" is the interval's half-width, the margin the pairs can resolve so far. Values shown are geometric means over the pairs (the error ratio: arithmetic). "+
		"Latency percentiles are the loadgen's exact values when both cells of a pair have them (Prometheus's estimates on both sides otherwise).\n\n", report.Pct(o.Margin), pp(o.ErrorMargin), o.Alpha)
	fmt.Fprintf(&b, "Noise floor of the run (shown, not used): %s.\n\n", floorLine(res.Floor, o.Metrics))
	for _, set := range res.Arms {
		switch set.Arm {
		case cellid.ArmCandidate:
			b.WriteString("## Duet: candidate against baseline\n\n")
			fmt.Fprintf(&b, "A = the baseline (the plan's own cells), B = the candidate, alternating cell by cell (ABBA). A regression: a key the candidate misses, failed or measured with more invalid repeats, "+
				"or a gated metric (marked ●) worse by more than ±%s on its anytime-valid interval (a confidence sequence, valid however early the duet stopped).\n\n", report.Pct(o.Margin))
			gates := keyGates(set.Keys)
			for _, r := range set.Rows {
				if r.Gate {
					gates = append(gates, gateLine(r.Key, r.Metric, r.Verdict, float64(r.Base), float64(r.Paired.Arm)))
				}
			}
			writeGates(&b, gates, o)
			keyTable(&b, "###", set.Keys)
			b.WriteString("### Metrics\n\n")
			armTable(&b, set, "baseline", "candidate", "change")
		case cellid.ArmUnobserved:
			b.WriteString("## Observer effect: unobserved against observed\n\n")
			b.WriteString("The same cells measured with the observability stack paused (unobserved: the loadgen's own counts and HdrHistogram only), alternating with the observed ones. " +
				"A measurement, never a gate: the goal is equivalent within the margin.\n\n")
			var sig []string
			for _, r := range set.Rows {
				if strings.HasPrefix(r.Verdict, Differs) {
					sig = append(sig, fmt.Sprintf("%s %s %s", r.Key, r.Metric, fmtChange(r.Metric, float64(r.Change))))
				}
			}
			if len(sig) == 0 {
				fmt.Fprintf(&b, "**No observer effect beyond ±%s was shown.**\n\n", report.Pct(o.Margin))
			} else {
				fmt.Fprintf(&b, "**Observer effect beyond ±%s**: %s.\n\n", report.Pct(o.Margin), strings.Join(sig, "; "))
			}
			armTable(&b, set, "observed", "unobserved", "difference")
		case cellid.ArmControl:
			b.WriteString("## A/A control\n\n")
			b.WriteString("One group of the plan's cells measured a second time next to its twin: a difference that is truly zero. It must read equivalent or not resolved; " +
				"worse or better on a gated metric means the pairs drifted and no answer of this run is trusted.\n\n")
			if len(res.Drifted) > 0 {
				fmt.Fprintf(&b, "**The control differs beyond the margin (%s): the run's answers are not trusted.**\n\n", strings.Join(res.Drifted, "; "))
			}
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
		fmt.Fprintf(b, "| cell | metric | %s | %s | %s | interval | resolves | per-pair sd | pairs | answer |\n"+
			"|:---|:---|---:|---:|---:|---:|---:|---:|---:|:---|\n", base, arm, change)
	}
	for _, r := range set.Rows {
		d := r.Decision.Result
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", r.Key, metricName(r.Metric, r.Gated),
			fmtVal(r.Metric, float64(r.Base)), fmtVal(r.Metric, float64(r.Paired.Arm)), fmtChange(r.Metric, float64(r.Change)),
			fmtDecisionCI(r.Metric, d), fmtResolves(d), fmtSD(r.Metric, d.Test.SD), r.N, bold(outcome(d), r.Gate))
	}
	if len(set.Rows) > 0 {
		b.WriteString("\n")
	}
	if len(set.Unpaired) > 0 {
		fmt.Fprintf(b, "Left out of the pairs: %s.\n\n", strings.Join(set.Unpaired, "; "))
	}
}

// metricName marks a gated metric with ●.
func metricName(m string, gated bool) string {
	if gated {
		return "● " + m
	}
	return m
}

// outcome is a decision's outcome with its margin, e.g. "worse by > 5 %".
func outcome(d decide.Result) string {
	m := report.Pct(d.Margin)
	if d.Absolute {
		m = pp(d.Margin)
	}
	switch d.Outcome {
	case decide.Worse:
		return "worse by > " + m
	case decide.Better:
		return "better by > " + m
	case decide.Equivalent:
		return "equivalent within ±" + m
	case decide.NoData:
		return "no data"
	}
	return "not resolved at ±" + m
}

// fmtResolves is the interval's half-width: the margin it can resolve so
// far.
func fmtResolves(d decide.Result) string {
	if math.IsNaN(d.Resolution) {
		return "n/a"
	}
	if math.IsInf(d.Resolution, 1) {
		return "unbounded"
	}
	if d.Absolute {
		return "±" + pp(d.Resolution)
	}
	return "±" + report.Pct(d.Resolution)
}

// fmtDecisionCI is a decision's interval: unbounded while an anytime
// interval has too few pairs to bound it.
func fmtDecisionCI(metric string, d decide.Result) string {
	if math.IsInf(d.Test.HalfWidth, 1) {
		return "unbounded"
	}
	return fmtCI(metric, d.Low, d.High)
}

// fmtSD is the per-pair standard deviation: of the log ratio (shown as a
// relative spread) or, for the error ratio, of the difference.
func fmtSD(metric string, sd float64) string {
	switch {
	case math.IsNaN(sd):
		return "n/a"
	case report.Absolute(metric):
		return pp(sd)
	}
	return report.Pct(sd)
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

// gateLine is one gated metric: its answer and the two centres.
func gateLine(key, metric, verdict string, a, b float64) string {
	return fmt.Sprintf("- %s %s: %s (%s → %s)\n", key, metric, verdict, fmtVal(metric, a), fmtVal(metric, b))
}

func writeGates(b *strings.Builder, gates []string, o Options) {
	if len(gates) == 0 {
		fmt.Fprintf(b, "**No regression: no cell missing, failed or newly invalid, and no gated metric worse by more than ±%s.**\n\n", report.Pct(o.Margin))
		return
	}
	fmt.Fprintf(b, "**%d regression(s).**\n\n", len(gates))
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

// gatedRows counts the gated rows: the family sharing alpha.
func gatedRows(rows []Row) int {
	n := 0
	for _, r := range rows {
		if r.Gated {
			n++
		}
	}
	return n
}

// gatedNames lists the gated metrics of the rows.
func gatedNames(rows []Row) string {
	var names []string
	for _, r := range rows {
		if r.Gated && !slices.Contains(names, r.Metric) {
			names = append(names, r.Metric)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
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
	case report.Absolute(metric):
		return fmt.Sprintf("%.2f %%", v*100)
	case metric == "proxy_mem_peak_bytes":
		return fmt.Sprintf("%.1f MB", v/1e6)
	case metric == "proxy_cpu_cores":
		return fmt.Sprintf("%.2f", v)
	case metric == decide.CPUPerRequest: // CPU seconds per request, about 1e-4
		return fmt.Sprintf("%.3g µs", v*1e6)
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

// pp is an absolute share in percentage points.
func pp(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", 100*x), "0"), ".") + " pp"
}
