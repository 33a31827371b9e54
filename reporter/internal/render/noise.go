package render

import (
	"fmt"
	"math"
	"strings"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
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
		sec.Tables = append(sec.Tables, armTable(aa, "A/A control: "+aa.Key+" measured again next to its twin in each round", "plan", "copy", aaVerdict))
	}
	for _, a := range r.Arms {
		switch a.Arm {
		case cellid.ArmCandidate:
			sec.Tables = append(sec.Tables, armTable(a, "Duet: candidate against baseline, "+a.Key, "baseline", "candidate", duetAnswer))
		case cellid.ArmUnobserved:
			sec.Tables = append(sec.Tables, armTable(a, "Observer effect: "+a.Key+" with the observability stack paused against observed", "observed", "unobserved", observerVerdict))
		default:
			sec.Tables = append(sec.Tables, armTable(a, "Arm "+a.Arm+" against the plan's own cells, "+a.Key, "plan", a.Arm, observerVerdict))
		}
	}
	if len(nf.AA) > 0 || len(r.Arms) > 0 {
		sec.Text = append(sec.Text, "Each arm below is measured in the same run as the plan's own cells and compared with them pair by repeat (pair i = repeat i of both, measured next to each other), so the host's drift cancels in each pair. "+
			"Values are geometric means over the pairs; change = the geometric mean of the per-pair ratios − 1. Each metric is answered at the run's margin ±"+report.Pct(report.QuestionOf(r).Margin)+
			": worse or better by more than it, equivalent within it, or not resolved, on an interval whose gated metrics share α = "+fmt.Sprint(report.QuestionOf(r).Alpha)+"; \"resolves\" is the interval's half-width. "+
			"Latency comes from the loadgen's exact HdrHistogram when both cells of a pair have it.")
	}
	for _, arm := range report.ArmsOf(r.Cells) {
		switch arm {
		case cellid.ArmCandidate:
			sec.Text = append(sec.Text, "Duet: the candidate alternates with the baseline cell by cell (ABBA by repeat) until every gated metric is decided or the budget ends; a gated metric worse by more than the margin is a regression. "+
				"`reporter diff -run "+r.Run+"` gates on it (exit 4 on a regression).")
		case cellid.ArmUnobserved:
			sec.Text = append(sec.Text, "Observer study: the unobserved cells ran with the observability stack paused, so only the loadgen's own numbers (exact counts and HdrHistogram) measure them, on both sides of each pair; "+
				"they are suspect for the gap in Prometheus's scrapes, and compared all the same. The goal is equivalent within the margin. "+
				"`reporter diff -run "+r.Run+" -json FILE` writes the effect as JSON.")
		}
	}
	return sec
}

// floorLead is the report's opening statement of what the run resolved:
// the margin asked, and per headline metric the margin the run can
// resolve, from the duet's (or another arm's) intervals when it has
// arms, else from the spread of the repeats (the half-width of the
// interval of a difference between two cells' means, median over cells).
func floorLead(r *report.Report) string {
	nf := r.NoiseFloor
	q := report.QuestionOf(r)
	asked := "Margin asked: ±" + report.Pct(q.Margin) + ". "
	if len(r.Arms) > 0 {
		var parts []string
		for _, a := range r.Arms {
			for _, m := range armMetrics {
				if p, ok := a.Metrics[m.name]; ok && p.Gated {
					parts = append(parts, fmt.Sprintf("%s %s: %s (resolves %s)", a.Key, m.title, strings.SplitN(p.Decision.String(), ":", 2)[0], fmtResolution(p.Decision.Result)))
				}
			}
		}
		return asked + "Decided: " + report.AndList(parts) + " (section 7)."
	}
	switch {
	case nf == nil:
		return ""
	case nf.NotMeasured != "":
		return asked + "Resolved: nothing (" + nf.NotMeasured + "): no margin between proxies is decided, and no winner is marked; run REPEATS=3 or more (section 7)."
	}
	var parts []string
	for _, m := range noiseMetrics[:2] {
		if f := nf.Metrics[m.name].Spread; f.Known() {
			parts = append(parts, m.title+" ±"+report.Pct(float64(f)*math.Sqrt2))
		}
	}
	return asked + "Resolvable between two proxies with this run's repeats: " + report.AndList(parts) + " (section 7): a smaller margin is not resolved."
}

// floorSentence is the run's noise floor in one sentence.
func floorSentence(nf *report.NoiseFloor) string {
	if nf.NotMeasured != "" {
		return fmt.Sprintf("**Noise floor: not measured (%s).** With fewer than 2 usable repeats a cell shows no noise, so no margin or change can be told from it: "+
			"run REPEATS=3 or more, or measure a change pair by pair until it is decided with `make duet`.", nf.NotMeasured)
	}
	var parts []string
	for _, m := range noiseMetrics {
		if f, ok := nf.Of(m.name); ok {
			parts = append(parts, fmt.Sprintf("%s ±%s (%s)", m.title, report.Pct(f), report.SourceName(nf.Metrics[m.name].Source)))
		}
	}
	return "**Noise floor of this run: " + report.AndList(parts) + ".** It describes the noise and decides nothing: comparisons are decided at the run's margin on their own intervals. " +
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
		return "No A/A control in this run (a run with repeats measures one group of its cells a second time next to its twin in each round)."
	}
	var out []string
	for _, aa := range nf.AA {
		var parts []string
		drift := false
		for _, m := range noiseMetrics[:2] {
			p := aa.Metrics[m.name]
			parts = append(parts, fmt.Sprintf("%s %s %s", m.title, report.SignedPct(float64(p.Change)), fmtInterval(p.Decision.Result)))
			drift = drift || p.Decision.Outcome == decide.Worse || p.Decision.Outcome == decide.Better
		}
		verdict := "equivalent or not resolved, as a control must be"
		if drift {
			verdict = "**beyond the margin: the pairs drifted, and the run's comparisons are not trusted**"
		}
		out = append(out, fmt.Sprintf("A/A control %s, %d pairs: %s: %s.", aa.Key, aa.Pairs, strings.Join(parts, ", "), verdict))
	}
	return strings.Join(out, " ")
}

// armTable shows an arm's paired comparison: each metric's answer at the
// run's margin, its interval and the margin the pairs resolve so far.
func armTable(a report.ArmResult, caption, base, arm string, verdict func(string, report.Paired) Cell) Table {
	t := Table{Caption: fmt.Sprintf("%s (%d pairs)", caption, a.Pairs),
		Header: []string{"metric", base, arm, "change", "interval", "resolves", "per-pair sd", "answer"},
		Right:  []bool{false, true, true, true, true, true, true, false}}
	for _, m := range armMetrics {
		p, ok := a.Metrics[m.name]
		if !ok {
			continue
		}
		title := m.title
		if p.Gated {
			title = "● " + title
		}
		d := p.Decision.Result
		t.Rows = append(t.Rows, []Cell{txt(title), txt(fmtMetric(m.name, p.Base)), txt(fmtMetric(m.name, p.Arm)), txt(report.SignedPct(float64(p.Change))),
			txt(fmtInterval(d)), txt(fmtResolution(d)), txt(fmtRel(report.Num(d.Test.SD))), verdict(m.name, p)})
	}
	t.Notes = append(t.Notes, "● marks the metrics that decide the arm; the interval is anytime-valid for the duet and the A/A control (a confidence sequence), fixed for the observer study.")
	if len(a.Unpaired) > 0 {
		t.Notes = append(t.Notes, "Left out of the pairs: "+strings.Join(a.Unpaired, "; ")+".")
	}
	return t
}

// armMetrics are the metrics an arm's table shows.
var armMetrics = []struct{ name, title string }{
	{"goodput_rps", "goodput req/s"}, {"p99_seconds", "p99"}, {"p50_seconds", "p50"}, {decide.CPUPerRequest, "proxy CPU per request"},
}

// answerCell is a decision in words: worse or better (flagged for a
// gated metric of the candidate), equivalent, not resolved.
func answerCell(p report.Paired, alarm bool) Cell {
	d := p.Decision.Result
	text := strings.SplitN(d.String(), ":", 2)[0]
	switch d.Outcome {
	case decide.NoData:
		return txt("n/a")
	case decide.Worse:
		if alarm {
			return Cell{Text: "✗ " + text, Class: "fail"}
		}
		return Cell{Text: "⚠ " + text, Class: "suspect"}
	case decide.Better:
		if alarm {
			return Cell{Text: "✓ " + text, Class: "pass"}
		}
		return Cell{Text: "⚠ " + text, Class: "suspect"}
	case decide.Equivalent:
		return Cell{Text: "✓ " + text, Class: "valid"}
	}
	return txt(text)
}

// aaVerdict and observerVerdict: anything beyond the margin is drift (the
// control) or an effect (the observer), never good news.
func aaVerdict(_ string, p report.Paired) Cell       { return answerCell(p, false) }
func observerVerdict(_ string, p report.Paired) Cell { return answerCell(p, false) }

// duetAnswer is the candidate's answer; a gated metric worse by more
// than the margin is the regression `reporter diff -run` gates on.
func duetAnswer(_ string, p report.Paired) Cell { return answerCell(p, p.Gated) }

// fmtInterval is a decision's interval, "[-3.1 %, +4.0 %]"; n/a without,
// unbounded while an anytime interval has too few pairs to bound it.
func fmtInterval(d decide.Result) string {
	if !d.Test.Known() {
		return "[n/a]"
	}
	if math.IsInf(d.Test.HalfWidth, 1) {
		return "unbounded"
	}
	return "[" + report.SignedPct(d.Low) + ", " + report.SignedPct(d.High) + "]"
}

// fmtResolution is the margin the interval resolves so far.
func fmtResolution(d decide.Result) string {
	if !d.Test.Known() {
		return "n/a"
	}
	if math.IsInf(d.Resolution, 1) {
		return "unbounded"
	}
	return "±" + report.Pct(d.Resolution)
}

func fmtMetric(metric string, v report.Num) string {
	if strings.HasSuffix(metric, "_seconds") {
		return fmtMs(v) + " ms"
	}
	if metric == decide.CPUPerRequest { // CPU seconds per request, about 1e-4
		return fmtNum(v*1e6, 1) + " µs"
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
