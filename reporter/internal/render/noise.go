package render

import (
	"fmt"
	"strings"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
)

// noiseMetrics are the metrics the noise section shows, headline first.
var noiseMetrics = []struct{ name, title string }{
	{"goodput_rps", "goodput req/s"}, {"p99_seconds", "p99"}, {"p50_seconds", "p50"},
}

// noiseSection states the run's noise floor, the A/A control's result,
// and the arms measured against the plan's own cells (the duet's
// candidate, the observer study).
func noiseSection(r *report.Report) Section {
	sec := Section{Title: "7. Noise floor"}
	nf := r.NoiseFloor
	if nf == nil {
		sec.Text = append(sec.Text, "Not measured: this report was built before the reporter measured noise floors; rebuild it (make report RUN="+r.Run+").")
		return sec
	}
	sec.Text = append(sec.Text, floorSentence(nf))
	if nf.NotMeasured == "" {
		sec.Tables = append(sec.Tables, floorTable(nf))
	}
	sec.Text = append(sec.Text, controlSentence(nf))
	for _, aa := range nf.AA {
		sec.Tables = append(sec.Tables, armTable(aa, "A/A control: "+aa.Key+" measured again at the end of each round", "plan", "copy", aaVerdict))
	}
	for _, a := range r.Arms {
		switch a.Arm {
		case cellid.ArmCandidate:
			sec.Tables = append(sec.Tables, armTable(a, "Duet: candidate against baseline, "+a.Key, "baseline", "candidate", duetVerdict(nf)))
		case cellid.ArmUnobserved:
			sec.Tables = append(sec.Tables, armTable(a, "Observer effect: "+a.Key+" with the observability stack paused against observed", "observed", "unobserved", observerVerdict))
		default:
			sec.Tables = append(sec.Tables, armTable(a, "Arm "+a.Arm+" against the plan's own cells, "+a.Key, "plan", a.Arm, observerVerdict))
		}
	}
	if len(nf.AA) > 0 || len(r.Arms) > 0 {
		sec.Text = append(sec.Text, "Each arm below is measured in the same run as the plan's own cells and compared with them pair by repeat (pair i = repeat i of both, measured next to each other), so the host's drift cancels in each pair. "+
			"Values are geometric means over the pairs; change = the geometric mean of the per-pair ratios − 1, with its paired Student-t 95 % interval; p adjusted by Holm over every test of the arm. "+
			"Latency comes from the loadgen's exact HdrHistogram when both cells of a pair have it.")
	}
	for _, arm := range report.ArmsOf(r.Cells) {
		switch arm {
		case cellid.ArmCandidate:
			sec.Text = append(sec.Text, "Duet: the candidate alternates with the baseline cell by cell (ABBA by repeat); a change significant after Holm and beyond the noise floor is called. "+
				"`reporter diff -run "+r.Run+"` gates on it (exit 4 on a regression).")
		case cellid.ArmUnobserved:
			sec.Text = append(sec.Text, "Observer study: the unobserved cells ran with the observability stack paused, so only the loadgen's own numbers (exact counts and HdrHistogram) measure them, on both sides of each pair; "+
				"they are suspect for the gap in Prometheus's scrapes, and compared all the same. The goal is no significant difference. "+
				"`reporter diff -run "+r.Run+" -json FILE` writes the effect as JSON.")
		}
	}
	return sec
}

// floorLead is the noise floor for the report's opening lines.
func floorLead(r *report.Report) string {
	nf := r.NoiseFloor
	switch {
	case nf == nil:
		return ""
	case nf.NotMeasured != "":
		return "Noise floor: not measured (" + nf.NotMeasured + "): margins between proxies get no verdict (section 7)."
	}
	var parts []string
	for _, m := range noiseMetrics[:2] {
		if f, ok := nf.Of(m.name); ok {
			parts = append(parts, m.title+" ±"+report.Pct(f))
		}
	}
	return "Noise floor of this run: " + report.AndList(parts) + " (section 7): a smaller margin or change is noise."
}

// floorSentence is the run's noise floor in one sentence.
func floorSentence(nf *report.NoiseFloor) string {
	if nf.NotMeasured != "" {
		return fmt.Sprintf("**Noise floor: not measured (%s).** With fewer than 2 usable repeats a cell shows no noise, so no margin or change can be told from it: "+
			"run REPEATS=3 or more (5 to let `make diff` judge significance).", nf.NotMeasured)
	}
	var parts []string
	for _, m := range noiseMetrics {
		if f, ok := nf.Of(m.name); ok {
			parts = append(parts, fmt.Sprintf("%s ±%s (%s)", m.title, report.Pct(f), report.SourceName(nf.Metrics[m.name].Source)))
		}
	}
	return "**Noise floor of this run: " + report.AndList(parts) + ".** A margin between proxies or a change smaller than this is noise. " +
		"Each is the larger of two measurements: the A/A control's 95 % interval end furthest from zero, and the median over cells of the half-width of the 95 % interval of the mean across repeats, relative to the mean."
}

func floorTable(nf *report.NoiseFloor) Table {
	t := Table{Caption: "Noise floor per metric (relative)", Header: []string{"metric", "floor", "set by", "A/A control: 95 % CI end furthest from 0", "spread: median 95 % CI half-width", "cells"},
		Right: []bool{false, true, false, true, true, true}}
	for _, m := range noiseMetrics {
		f := nf.Metrics[m.name]
		t.Rows = append(t.Rows, []Cell{txt(m.title), txt(fmtRel(f.Floor)), txt(report.SourceName(f.Source)), txt(fmtRel(f.AABound)), txt(fmtRel(f.Spread)), txt(fmt.Sprint(f.SpreadGroups))})
	}
	t.Notes = []string{"n/a where the measurement is missing: no A/A control with 2 or more usable pairs, or no cell with 2 or more usable repeats."}
	return t
}

// controlSentence says what the A/A control found.
func controlSentence(nf *report.NoiseFloor) string {
	if len(nf.AA) == 0 {
		return "No A/A control in this run (a run with repeats measures one group of its cells a second time at the end of each round)."
	}
	var out []string
	for _, aa := range nf.AA {
		var parts []string
		differs := false
		for _, m := range noiseMetrics[:2] {
			p := aa.Metrics[m.name]
			parts = append(parts, fmt.Sprintf("%s %s %s", m.title, report.SignedPct(float64(p.Change)), fmtCIRel(p)))
			differs = differs || p.Significant(report.Alpha)
		}
		verdict := fmt.Sprintf("no difference (Holm-adjusted p ≥ %g)", report.Alpha)
		if differs {
			verdict = "**a significant difference: the run drifted between the two measurements**"
		}
		out = append(out, fmt.Sprintf("A/A control %s, %d pairs: %s: %s.", aa.Key, aa.Pairs, strings.Join(parts, ", "), verdict))
	}
	return strings.Join(out, " ")
}

// armTable shows an arm's paired comparison for the headline metrics.
func armTable(a report.ArmResult, caption, base, arm string, verdict func(string, report.Paired) Cell) Table {
	t := Table{Caption: fmt.Sprintf("%s (%d pairs)", caption, a.Pairs),
		Header: []string{"metric", base, arm, "change", "95 % CI", "p", "p (Holm)", "verdict"},
		Right:  []bool{false, true, true, true, true, true, true, false}}
	for _, m := range noiseMetrics {
		p := a.Metrics[m.name]
		t.Rows = append(t.Rows, []Cell{txt(m.title), txt(fmtMetric(m.name, p.Base)), txt(fmtMetric(m.name, p.Arm)), txt(report.SignedPct(float64(p.Change))),
			txt(fmtCIRel(p)), txt(report.FormatP(float64(p.P))), txt(report.FormatP(float64(p.PHolm))), verdict(m.name, p)})
	}
	if len(a.Unpaired) > 0 {
		t.Notes = append(t.Notes, "Left out of the pairs: "+strings.Join(a.Unpaired, "; ")+".")
	}
	return t
}

// sigVerdict is a measurement's verdict: whether the change is
// significant after Holm, in the arm's words.
func sigVerdict(no, yes string) func(string, report.Paired) Cell {
	return func(_ string, p report.Paired) Cell {
		switch {
		case !p.P.Known():
			return txt("n/a")
		case p.Significant(report.Alpha):
			return Cell{Text: "⚠ " + yes, Class: "suspect"}
		}
		return Cell{Text: "✓ " + no, Class: "valid"}
	}
}

var (
	aaVerdict       = sigVerdict("no difference", "differs: drift inside the run")
	observerVerdict = sigVerdict("not significant", "significant")
)

// duetVerdict calls a change a regression or an improvement when it is
// significant after Holm and beyond the run's noise floor, as `reporter
// diff -run` does.
func duetVerdict(nf *report.NoiseFloor) func(string, report.Paired) Cell {
	return func(metric string, p report.Paired) Cell {
		fl, ok := nf.Of(metric)
		m, _ := report.Metric(metric)
		switch {
		case !p.P.Known():
			return txt("n/a")
		case !ok:
			return txt("noise floor not measured")
		case float64(p.Change) <= fl && float64(p.Change) >= -fl:
			return txt("within the noise floor")
		case !p.Significant(report.Alpha):
			return txt("not significant")
		case float64(p.Change)*float64(m.Better) < 0:
			return Cell{Text: "✗ regressed", Class: "fail"}
		}
		return Cell{Text: "✓ improved", Class: "pass"}
	}
}

func fmtMetric(metric string, v report.Num) string {
	if strings.HasSuffix(metric, "_seconds") {
		return fmtMs(v) + " ms"
	}
	return fmtNum(v, 0)
}

// fmtRel is a relative floor, "±6.57 %"; "n/a" when unknown.
func fmtRel(v report.Num) string {
	if !v.Known() {
		return "n/a"
	}
	return "±" + report.Pct(float64(v))
}

func fmtCIRel(p report.Paired) string {
	if !p.CILow.Known() || !p.CIHigh.Known() {
		return "[n/a]"
	}
	return "[" + report.SignedPct(float64(p.CILow)) + ", " + report.SignedPct(float64(p.CIHigh)) + "]"
}
