package diff

import (
	"fmt"
	"sort"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/reporter/internal/report"
)

// ArmRow is one plan key and metric of an arm against the plan's own
// cells of one run, pair by repeat.
type ArmRow struct {
	Arm    string
	Key    string // the plan key
	Metric string
	report.Paired
	Verdict string
	Gate    bool
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
	// Drifted lists the A/A control's gated metrics that read worse or
	// better by more than the margin: the pairs are not exchangeable and
	// no answer of the run is trusted.
	Drifted []string
	Opts    Options
}

// CompareRun compares each arm of r besides the plan's own cells with the
// plan's own cells, pair by repeat, per plan key and metric, and answers
// each at o's margin. The candidate (cellid.ArmCandidate) gates: a key it
// misses, failed or measured with a larger share of invalid repeats, and
// a gated metric worse by more than the margin. Every other arm is a
// measurement: the observer effect, the A/A control's difference.
func CompareRun(r *report.Report, o Options) RunResult {
	res := RunResult{Run: r.Run, Opts: o, Floor: noiseOf(r, o)}
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
		results := report.CompareArm(r.Cells, arm, o.Metrics, o.questionFor(r))
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
				row.Verdict, row.Gate = armVerdict(arm, p)
				if row.Gate {
					res.Regressions++
				}
				if arm == cellid.ArmControl && p.Gated && (p.Decision.Outcome == decide.Worse || p.Decision.Outcome == decide.Better) {
					res.Drifted = append(res.Drifted, ar.Key+" "+m)
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

// armVerdict is one row's answer: the candidate's gates on a gated
// metric worse by more than the margin; the control's and the
// observer's answers beyond the margin say the arm differs.
func armVerdict(arm string, p report.Paired) (string, bool) {
	switch {
	case p.N == 0:
		return Missing, false
	case arm == cellid.ArmCandidate:
		return answer(p.Decision.Result, p.Gated)
	}
	v, _ := answer(p.Decision.Result, false)
	if o := p.Decision.Outcome; o == decide.Worse || o == decide.Better {
		v = Differs + ": " + v
	}
	return v, false
}

// ErrNoArms is CompareRun's complaint about a run with nothing to pair.
func ErrNoArms(run string) error {
	return fmt.Errorf("run %s has no cells besides the plan's own (no A/A control, duet candidate or observer arm): "+
		"nothing to compare inside it; compare two runs with -a and -b", run)
}
