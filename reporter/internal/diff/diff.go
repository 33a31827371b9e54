// Package diff owns comparing runs for a CI gate, in two modes, each
// ending per metric in a decision at the user's margin (package decide):
// worse or better by more than the margin, equivalent within it, or not
// resolved, with the interval it rests on. Only "worse" on a gated metric
// (decide.Gated) fails the gate, and so do the key gates below.
//
// Two separate runs (Compare): per cell key (proxy.origin.scenario.tier)
// it first asks whether the candidate still measured what the baseline
// did: a key missing, failed or skipped in the candidate, or a rise in its
// share of invalid repeats, is a regression. Then, per key and metric, the
// repeats of both runs are compared on log values by Welch's interval,
// each at its share of alpha over the gated metrics of every key
// (Bonferroni). Separate runs cannot cancel drift between them; the
// interleaved mode can, and the comparison warns when the runs differ in
// what they measured (plan, placement, host).
//
// One run with arms (CompareRun): each arm besides the plan's own cells
// (the duet's candidate, the observer study's unobserved cells, the A/A
// control) against the plan's own cells of the same key, pair by repeat
// (report.CompareArm), on anytime-valid intervals for the candidate and
// the control (a duet stops as soon as it is decided). The candidate
// gates; the other arms are measurements, and a control that reads
// anything but equivalent or not resolved says the run's pairs drifted.
package diff

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"proxybench/internal/decide"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
)

// Options state the comparison's question.
type Options struct {
	// Margin is the relative change that matters (0.05 = 5 %): each
	// metric is answered worse or better by more than it, equivalent
	// within it, or not resolved (package decide).
	Margin      float64
	ErrorMargin float64 // the error ratio's margin, absolute (0.005 = half a percentage point)
	Alpha       float64 // the family's false-alarm rate: the gated metrics of every key share it
	// Metrics compared; names from report.GroupMetrics. The gated ones
	// among them are decide.Gated's for each key's loop.
	Metrics []string
}

// DefaultOptions are the documented defaults.
var DefaultOptions = Options{Margin: decide.DefaultMargin, ErrorMargin: decide.DefaultErrorMargin, Alpha: decide.DefaultAlpha, Metrics: report.CompareMetrics}

// Question is the options as the report's comparisons take them.
func (o Options) Question() report.Question {
	return report.Question{Margin: o.Margin, ErrorMargin: o.ErrorMargin, Alpha: o.Alpha}
}

// questionFor is the options' question about run r's cells, which pairs
// them as r's plan did (keep_disturbed).
func (o Options) questionFor(r *report.Report) report.Question {
	q := o.Question()
	q.KeepDisturbed = report.QuestionOf(r).KeepDisturbed
	return q
}

// Verdicts of a metric row besides the decision's own outcomes.
const (
	Missing = "missing"
	// Differs is the A/A control's or the observer arm's answer beyond
	// the margin: drift inside the run (control) or an effect (observer).
	Differs = "differs by more than the margin"
)

// Load reads run id's report.json from results/<id>/, else from
// results/history/<id>/.
func Load(results, id string) (*report.Report, error) {
	p := filepath.Join(results, id, "report.json")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		p = filepath.Join(results, "history", id, "report.json")
	}
	return output.Read(p)
}

// noiseOf is a report's noise floor, measured again from its cells, so
// that a report built before the floor existed has one too and every
// floor is measured alike. It is shown, never used as a minimum effect.
func noiseOf(r *report.Report, o Options) report.NoiseFloor {
	return report.Noise(r.Cells, report.BuildGroups(r.Cells), o.questionFor(r))
}

// answer is a metric row's verdict: the decision's outcome in words, and
// whether it gates (a gated metric of the candidate worse by more than
// the margin).
func answer(d decide.Result, gated bool) (string, bool) {
	return d.String(), gated && d.Outcome == decide.Worse
}

// floorLine is a run's noise floor in words, for the outputs' headers.
func floorLine(nf report.NoiseFloor, metrics []string) string {
	if nf.NotMeasured != "" {
		return fmt.Sprintf("not measured (%s)", nf.NotMeasured)
	}
	var parts []string
	for _, m := range metrics {
		if report.Absolute(m) {
			continue
		}
		f, ok := nf.Of(m)
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s ±%s (%s)", m, report.Pct(f), report.SourceName(nf.Metrics[m].Source)))
	}
	if len(parts) == 0 {
		return "not measured"
	}
	return report.AndList(parts)
}
