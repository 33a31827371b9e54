// Package diff owns comparing runs for a CI gate, in two modes.
//
// Two separate runs (Compare): per cell key (proxy.origin.scenario.tier)
// it first asks whether the candidate still measured what the baseline
// did: a key missing, failed or skipped in the candidate, or a rise in its
// share of invalid repeats, is a regression. Then, per key and metric, it
// compares the repeats of both runs with Welch's t test on log values (the
// ratio of geometric means), adjusts every p-value of the diff by Holm, and
// calls a regression only when the change is significant after Holm and,
// in the bad direction, larger than both runs' noise floors. Separate runs
// cannot cancel drift between them; the interleaved mode can.
//
// One run with arms (CompareRun): each arm besides the plan's own cells
// (the duet's candidate, the observer study's unobserved cells, the A/A
// control) against the plan's own cells of the same key, pair by repeat
// (report.CompareArm): the paired change, its 95 % interval, p and
// Holm-adjusted p. The candidate gates like a separate run, against the
// run's own noise floor; the other arms are measurements and never gate.
package diff

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
)

// Options tune the comparison.
type Options struct {
	// Threshold stands in for a run's noise floor where the run cannot
	// measure one (a single repeat): the relative change that counts.
	Threshold      float64
	ErrorThreshold float64 // absolute error-ratio change that counts, e.g. 0.005
	Alpha          float64 // significance level of the Holm-adjusted p-values, e.g. 0.05
	// Metrics compared; names from report.GroupMetrics.
	Metrics []string
	// RequireSignificance: a worse change that cannot be tested (one
	// repeat on a side) does not gate. Key gates and the error ratio
	// always do.
	RequireSignificance bool
}

// DefaultOptions are the documented defaults.
var DefaultOptions = Options{Threshold: 0.05, ErrorThreshold: 0.005, Alpha: 0.05, Metrics: report.CompareMetrics}

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

// Verdicts of the arms that never gate.
const (
	// The A/A control: its difference from its twin.
	NoDifference = "no difference"
	Differs      = "differs: drift inside the run"
	// The observer study: the effect of the observability stack.
	NoEffect          = "no significant effect"
	SignificantEffect = "significant effect"
	// An arm this build does not know.
	Compared = "compared (not gated)"
)

// Sources of the floor a change is held against (Row.FloorSource).
const (
	FloorThreshold = "threshold" // Options.Threshold or ErrorThreshold
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
// floor is measured alike.
func noiseOf(r *report.Report) report.NoiseFloor {
	return report.Noise(r.Cells, report.BuildGroups(r.Cells))
}

// floor is the change a metric must exceed to count: the largest of the
// given runs' noise floors (Options.Threshold for a run without one), the
// error threshold for the error ratio. src names the run ("A", "B", or ""
// for the interleaved run) and what set it, e.g. "B: spread".
func floor(o Options, metric string, runs map[string]report.NoiseFloor) (float64, string) {
	if report.Absolute(metric) {
		return o.ErrorThreshold, FloorThreshold
	}
	best, src := math.Inf(-1), ""
	for _, name := range []string{"", "A", "B"} {
		nf, ok := runs[name]
		if !ok {
			continue
		}
		f, measured := nf.Of(metric)
		what := nf.Metrics[metric].Source
		if !measured {
			f, what = o.Threshold, FloorThreshold
		}
		if f > best {
			best, src = f, what
			if name != "" && what != FloorThreshold {
				src = name + ": " + what
			}
		}
	}
	return best, src
}

// verdict judges one metric: its change against the floor, the direction,
// and the Holm-adjusted p-value (NaN: untestable).
func verdict(metric string, better int, change, fl, pHolm float64, o Options) (string, bool) {
	beyond := math.Abs(change) > fl
	if math.IsNaN(change) {
		beyond = false
	}
	worse := (better < 0 && change > 0) || (better > 0 && change < 0)
	v, gate := Unchanged, false
	switch {
	case !beyond:
	case math.IsNaN(pHolm):
		if worse {
			v, gate = RegressedUnconfirmed, !o.RequireSignificance
		} else {
			v = ImprovedUnconfirmed
		}
	case pHolm >= o.Alpha:
		v = NotSignificant
	case worse:
		v, gate = Regressed, true
	default:
		v = Improved
	}
	// More errors beyond the threshold always gate.
	if report.Absolute(metric) && beyond && worse && v != Regressed {
		v, gate = RegressedErrors, true
	}
	return v, gate
}

// better is the direction of improvement of a metric (+1 higher, -1 lower).
func better(metric string) int {
	m, _ := report.Metric(metric)
	return m.Better
}

// describe names a floor's source for a reader.
func describe(src string) string {
	if src == FloorThreshold {
		return "-threshold"
	}
	return report.SourceName(src)
}

// floorLine is a run's noise floor in words, for the outputs' headers.
func floorLine(nf report.NoiseFloor, metrics []string, o Options) string {
	if nf.NotMeasured != "" {
		return fmt.Sprintf("not measured (%s): -threshold %s stands in", nf.NotMeasured, report.Pct(o.Threshold))
	}
	var parts []string
	for _, m := range metrics {
		if report.Absolute(m) {
			continue
		}
		f, ok := nf.Of(m)
		if !ok {
			parts = append(parts, m+" not measured")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s ±%s (%s)", m, report.Pct(f), describe(nf.Metrics[m].Source)))
	}
	return report.AndList(parts)
}
