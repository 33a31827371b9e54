package diff

import (
	"fmt"
	"sort"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
)

// ArmRow is one plan key and metric of an arm against the plan's own
// cells of one run, pair by repeat.
type ArmRow struct {
	Arm    string
	Key    string // the plan key
	Metric string
	report.Paired
	Floor       float64 // the run's noise floor for the metric (Options.Threshold when not measured; ErrorThreshold for the error ratio)
	FloorSource string
	Verdict     string
	Gate        bool
}

// ArmSet is every row of one arm, its Holm family.
type ArmSet struct {
	Arm      string
	Rows     []ArmRow
	Keys     []KeyRow // the candidate's key gates: a key the candidate misses, failed or measured with more invalid repeats
	Unpaired []string // "<key> r3: ..." for every repeat left out of the pairs
}

// RunResult is the interleaved comparison of one run's arms.
type RunResult struct {
	Run         string
	Floor       report.NoiseFloor
	Arms        []ArmSet // the candidate, the observer's arm, any other, the A/A control last
	Regressions int      // gated candidate keys and rows
	Opts        Options
}

// CompareRun compares each arm of r besides the plan's own cells with the
// plan's own cells, pair by repeat, per plan key and metric. The
// candidate (cellid.ArmCandidate) gates: a key it misses, failed or
// measured with a larger share of invalid repeats, and a metric whose
// change is significant after Holm (over every test of the arm) and worse
// by more than the run's noise floor. Every other arm is a measurement:
// the observer effect, the A/A control's difference.
func CompareRun(r *report.Report, o Options) RunResult {
	res := RunResult{Run: r.Run, Opts: o, Floor: pairedFloor(noiseOf(r))}
	floors := map[string]report.NoiseFloor{"": res.Floor}
	g := map[string][]*report.Cell{}
	for i := range r.Cells {
		c := &r.Cells[i]
		g[c.GroupKey()] = append(g[c.GroupKey()], c)
	}
	sd := sides(r, g)
	arms := report.ArmsOf(r.Cells)
	if len(arms) > 0 && arms[0] == cellid.ArmControl { // the question first, its control last
		arms = append(arms[1:], arms[0])
	}
	for _, arm := range arms {
		set := ArmSet{Arm: arm}
		results := report.CompareArm(r.Cells, arm, o.Metrics)
		if arm == cellid.ArmCandidate {
			set.Keys = candidateKeys(g, sd)
			for _, k := range set.Keys {
				if k.Gate {
					res.Regressions++
				}
			}
		}
		for _, ar := range results {
			for _, u := range ar.Unpaired {
				set.Unpaired = append(set.Unpaired, ar.Key+" "+u)
			}
			for _, m := range o.Metrics {
				p, ok := ar.Metrics[m]
				if !ok {
					continue
				}
				row := ArmRow{Arm: arm, Key: ar.Key, Metric: m, Paired: p}
				row.Floor, row.FloorSource = floor(o, m, floors)
				row.Verdict, row.Gate = armVerdict(arm, m, p, row.Floor, o)
				if row.Gate {
					res.Regressions++
				}
				set.Rows = append(set.Rows, row)
			}
		}
		res.Arms = append(res.Arms, set)
	}
	return res
}

// candidateKeys judges every plan key of the plan's own cells: the
// candidate must have measured it as well as the baseline did.
func candidateKeys(g map[string][]*report.Cell, sd map[string]Side) []KeyRow {
	var keys []string
	for k, cells := range g {
		if cells[0].Arm == "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]KeyRow, 0, len(keys))
	for _, k := range keys {
		out = append(out, judgeKey(k, sd[k], sd[k+"."+cellid.ArmCandidate]))
	}
	return out
}

// armVerdict judges one row of an arm.
func armVerdict(arm, metric string, p report.Paired, fl float64, o Options) (string, bool) {
	sig := p.Significant(o.Alpha)
	switch {
	case p.N == 0:
		return Missing, false
	case arm == cellid.ArmCandidate:
		return verdict(metric, better(metric), float64(p.Change), fl, float64(p.PHolm), o)
	case arm == cellid.ArmControl:
		if sig {
			return Differs, false
		}
		return NoDifference, false
	case arm == cellid.ArmUnobserved:
		if sig {
			return SignificantEffect, false
		}
		return NoEffect, false
	}
	return Compared, false
}

// ErrNoArms is CompareRun's complaint about a run with nothing to pair.
func ErrNoArms(run string) error {
	return fmt.Errorf("run %s has no cells besides the plan's own (no A/A control, duet candidate or observer arm): "+
		"nothing to compare inside it; compare two runs with -a and -b", run)
}

// pairedFloor is the floor of an interleaved comparison: where the run's
// A/A control measured a metric, its bound alone, because the control is
// paired round by round like the arms are and so sees the noise a pair
// sees; the spread across repeats also holds the drift over the run, which
// pairing cancels, and stands in only where the run has no control.
func pairedFloor(nf report.NoiseFloor) report.NoiseFloor {
	out := nf
	out.Metrics = make(map[string]report.MetricFloor, len(nf.Metrics))
	for name, mf := range nf.Metrics {
		if mf.AABound.Known() {
			mf.Floor, mf.Source = mf.AABound, report.FloorFromAA
		}
		out.Metrics[name] = mf
	}
	return out
}
