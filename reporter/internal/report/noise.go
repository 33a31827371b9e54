package report

import (
	"math"

	"proxybench/internal/cellid"
	"proxybench/internal/stats"
)

// NoiseFloor is the smallest relative change a run can tell from its own
// noise, per metric, measured two ways: the A/A control (one group of the
// plan's cells measured a second time in the same run, arm "aa", paired
// repeat by repeat with its twin: the interval of a difference that is
// truly zero), and the spread of the repeats of every group. A margin
// between proxies or a change between runs smaller than the floor is
// noise.
type NoiseFloor struct {
	// NotMeasured says why the run has no floor ("1 repeat"); "" when it
	// has one.
	NotMeasured string `json:"not_measured,omitempty"`
	// Repeats is the most repeats of any group of the plan's own cells.
	Repeats int `json:"repeats"`
	// AA is the A/A control's result: each control group against its
	// twin, pair by repeat (usually one group; empty without a control).
	AA      []ArmResult            `json:"aa,omitempty"`
	Metrics map[string]MetricFloor `json:"metrics,omitempty"`
}

// MetricFloor is one metric's noise floor, relative (0.05 = 5 %).
type MetricFloor struct {
	// Floor = max(AABound, Spread): null when neither is measured.
	Floor  Num    `json:"floor"`
	Source string `json:"source,omitempty"` // FloorFromAA or FloorFromSpread: which one set it
	// AABound is the end of the A/A change's 95 % interval furthest from
	// zero (the largest over control groups): a difference the control
	// cannot tell from none. Null without a control of 2 or more pairs.
	AABound Num `json:"aa_bound"`
	// Spread is the median over groups of the plan's own cells with 2 or
	// more usable repeats of the half-width of the 95 % Student-t interval
	// of the mean, relative to the mean; SpreadGroups counts those groups.
	Spread       Num `json:"spread"`
	SpreadGroups int `json:"spread_groups"`
}

// Which measurement set a floor (MetricFloor.Source).
const (
	FloorFromAA     = "aa"
	FloorFromSpread = "spread"
)

// SourceName names a floor's source (MetricFloor.Source) for a reader.
func SourceName(src string) string {
	switch src {
	case FloorFromAA:
		return "A/A control"
	case FloorFromSpread:
		return "spread"
	}
	return src
}

// NotMeasuredOneRepeat is NoiseFloor.NotMeasured for a run without repeats.
const NotMeasuredOneRepeat = "1 repeat"

// Of is the floor of metric, and whether it was measured.
func (n *NoiseFloor) Of(metric string) (float64, bool) {
	if n == nil {
		return math.NaN(), false
	}
	f, ok := n.Metrics[metric]
	if !ok || !f.Floor.Known() {
		return math.NaN(), false
	}
	return float64(f.Floor), true
}

// MeasureNoise sets r.NoiseFloor from r's cells and groups, and r.Arms
// from its arms other than the plan's own and the A/A control.
func MeasureNoise(r *Report) {
	q := QuestionOf(r)
	r.Question = &q
	nf := Noise(r.Cells, r.Groups, q)
	r.NoiseFloor = &nf
	r.Arms = nil
	for _, arm := range ArmsOf(r.Cells) {
		if arm != cellid.ArmControl {
			r.Arms = append(r.Arms, CompareArm(r.Cells, arm, CompareMetrics, q)...)
		}
	}
}

// Noise measures the noise floor of the relative metrics of
// CompareMetrics from cells and their groups (BuildGroups).
func Noise(cells []Cell, groups []Group, q Question) NoiseFloor {
	nf := NoiseFloor{Metrics: map[string]MetricFloor{}}
	for _, g := range groups {
		if g.Arm == "" {
			nf.Repeats = max(nf.Repeats, g.Repeats)
		}
	}
	nf.AA = CompareArm(cells, cellid.ArmControl, CompareMetrics, q)
	measured := false
	for _, name := range CompareMetrics {
		if Absolute(name) {
			continue
		}
		mf := MetricFloor{Floor: NaN(), AABound: NaN(), Spread: NaN()}
		for _, aa := range nf.AA {
			if p, ok := aa.Metrics[name]; ok && p.CILow.Known() {
				b := Num(math.Max(math.Abs(float64(p.CILow)), math.Abs(float64(p.CIHigh))))
				if !mf.AABound.Known() || b > mf.AABound {
					mf.AABound = b
				}
			}
		}
		var hw []float64
		for _, g := range groups {
			if g.Arm != "" || g.Valid < 2 {
				continue
			}
			if h := relHalfWidth(g.Metrics[name]); !math.IsNaN(h) {
				hw = append(hw, h)
			}
		}
		mf.SpreadGroups = len(hw)
		if len(hw) > 0 {
			mf.Spread = Num(stats.Median(hw))
		}
		switch {
		case mf.AABound.Known() && (!mf.Spread.Known() || mf.AABound >= mf.Spread):
			mf.Floor, mf.Source = mf.AABound, FloorFromAA
		case mf.Spread.Known():
			mf.Floor, mf.Source = mf.Spread, FloorFromSpread
		}
		measured = measured || mf.Floor.Known()
		nf.Metrics[name] = mf
	}
	switch {
	case measured:
	case nf.Repeats <= 1:
		nf.NotMeasured = NotMeasuredOneRepeat
	default:
		nf.NotMeasured = "fewer than 2 usable repeats in every cell"
	}
	return nf
}
