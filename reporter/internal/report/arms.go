package report

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/internal/stats"
)

// Alpha is the significance level of the report's arm comparisons (diff
// takes its own, -alpha).
const Alpha = 0.05

// ArmResult compares one arm of one plan key with the plan's own cells
// ("" arm) of the same key, pair by repeat: pair i is repeat i of both,
// measured next to each other in the run, so slow drift of the host
// cancels in the pair.
type ArmResult struct {
	Arm      string `json:"arm"`
	Key      string `json:"key"` // cellid.Key.PlanKey: what both arms measure
	Proxy    string `json:"proxy"`
	Origin   string `json:"origin"`
	Scenario string `json:"scenario"`
	Tier     string `json:"tier"`
	Repeats  int    `json:"repeats"` // cells of the arm
	Pairs    int    `json:"pairs"`   // repeats usable (not invalid) in both arms
	// Unpaired says why a repeat of the arm has no usable pair, e.g.
	// "r3: the aa cell is invalid (loadgen_bound)".
	Unpaired []string          `json:"unpaired,omitempty"`
	Metrics  map[string]Paired `json:"metrics"`
}

// Paired is one metric of an ArmResult: the paired t test of the arm
// against the plan's own cells. Relative metrics are tested on the per-pair
// log ratios ln(arm/base), so Change is the geometric mean of the ratios
// minus 1 (+0.10 = the arm is 10 % higher); the error ratio (Absolute) on
// the per-pair differences, in absolute terms.
type Paired struct {
	N      int `json:"n"`    // pairs with the metric known on both sides (latency from the same instrument)
	Base   Num `json:"base"` // the plan's own cells over those pairs: geometric mean (arithmetic for the error ratio)
	Arm    Num `json:"arm"`
	Change Num `json:"change"`
	CILow  Num `json:"ci95_low"` // 95 % Student-t interval of Change; null below 2 pairs
	CIHigh Num `json:"ci95_high"`
	P      Num `json:"p"`      // two-sided, against no change; null below 2 pairs
	PHolm  Num `json:"p_holm"` // Holm-adjusted over every test of the arm in the run
	// Decision is the answer at the run's margin (package decide), on the
	// arm's interval: anytime-valid for the duet's candidate and the A/A
	// control, whose family is the gated metrics of every key of the arm.
	Decision Decision `json:"decision"`
	// Gated: a metric that decides the arm (decide.Gated); the others are
	// decided at the same level and shown, never gated.
	Gated bool `json:"gated,omitempty"`

	base, arm []float64 // the pairs' values, for the decision
	ratios    []float64 // a sliced pair's own log ratio (PairRatio), else NaN
}

// series is p's pairs as package decide takes them.
func (p Paired) series(m GroupMetric) decide.Series {
	return decide.Series{Name: m.Name, Better: m.Better, Absolute: Absolute(m.Name), Base: p.base, Cand: p.arm, Ratios: p.ratios}
}

// Significant says whether the change passes Holm's test at alpha.
func (p Paired) Significant(alpha float64) bool { return p.PHolm.Known() && float64(p.PHolm) < alpha }

// ArmsOf lists the arms of cells besides the plan's own: the A/A control,
// the duet's candidate and the observer's arm first, then any other in
// name order.
func ArmsOf(cells []Cell) []string {
	seen := map[string]bool{}
	for _, c := range cells {
		if c.Arm != "" {
			seen[c.Arm] = true
		}
	}
	var out []string
	for _, a := range []string{cellid.ArmControl, cellid.ArmCandidate, cellid.ArmUnobserved} {
		if seen[a] {
			out = append(out, a)
			delete(seen, a)
		}
	}
	rest := make([]string, 0, len(seen))
	for a := range seen {
		rest = append(rest, a)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// CompareArm compares every plan key that has cells of arm with the plan's
// own cells of that key, for each of metrics (GroupMetrics names), and
// adjusts the p-values by Holm over all of them. Keys are in first-seen
// order. A cell usable in a pair is one whose verdict is not invalid: a
// suspect cell counts, so the observer study's cells, measured while
// Prometheus was paused (prometheus_gap or no_server_side_series, suspect
// while the manifest holds their counts and exact latency), are compared
// on the loadgen's own numbers.
//
// Every metric is also decided at q's margin (Paired.Decision): the gated
// ones of every key (decide.Gated, by the key's loop) form the arm's
// family and share q.Alpha; the others are decided at the same level.
func CompareArm(cells []Cell, arm string, metrics []string, q Question) []ArmResult {
	type slot struct{ base, arm map[int]*Cell }
	var order []string
	by := map[string]*slot{}
	for i := range cells {
		c := &cells[i]
		if c.Arm != "" && c.Arm != arm {
			continue
		}
		k := c.PlanKey()
		s := by[k]
		if s == nil {
			s = &slot{base: map[int]*Cell{}, arm: map[int]*Cell{}}
			by[k] = s
			order = append(order, k)
		}
		if c.Arm == "" {
			s.base[c.Repeat] = c
		} else {
			s.arm[c.Repeat] = c
		}
	}
	var out []ArmResult
	var ps []float64
	closed := map[string]bool{}
	for _, k := range order {
		s := by[k]
		if len(s.arm) == 0 {
			continue
		}
		reps := make([]int, 0, len(s.arm))
		for r := range s.arm {
			reps = append(reps, r)
		}
		sort.Ints(reps)
		first := s.arm[reps[0]]
		res := ArmResult{Arm: arm, Key: k, Proxy: first.Proxy, Origin: first.Origin, Scenario: first.Scenario, Tier: first.Tier,
			Repeats: len(reps), Metrics: map[string]Paired{}}
		var pairs [][2]*Cell
		for _, r := range reps {
			a, b := s.base[r], s.arm[r]
			switch {
			case b.Validity.Verdict == Invalid:
				res.Unpaired = append(res.Unpaired, fmt.Sprintf("r%d: the %s cell is invalid (%s)", r, arm, invalidCodes(b)))
			case a == nil:
				res.Unpaired = append(res.Unpaired, fmt.Sprintf("r%d: no cell of the plan's own to pair with", r))
			case a.Validity.Verdict == Invalid:
				res.Unpaired = append(res.Unpaired, fmt.Sprintf("r%d: the plan's own cell is invalid (%s)", r, invalidCodes(a)))
			case a.Disturbed != "" && !q.KeepDisturbed:
				res.Unpaired = append(res.Unpaired, fmt.Sprintf("r%d: the host disturbed the plan's own cell: %s", r, a.Disturbed))
			case b.Disturbed != "" && !q.KeepDisturbed:
				res.Unpaired = append(res.Unpaired, fmt.Sprintf("r%d: the host disturbed the %s cell: %s", r, arm, b.Disturbed))
			default:
				pairs = append(pairs, [2]*Cell{a, b})
			}
		}
		res.Pairs = len(pairs)
		closed[k] = first.Closed()
		for _, name := range metrics {
			m, ok := Metric(name)
			if !ok {
				continue
			}
			res.Metrics[name] = comparePairs(m, pairs)
		}
		out = append(out, res)
	}
	// Holm over the family: every test of this arm in the run.
	type at struct {
		i int
		m string
	}
	var where []at
	for i := range out {
		for _, name := range metrics {
			if p, ok := out[i].Metrics[name]; ok {
				where = append(where, at{i, name})
				ps = append(ps, float64(p.P))
			}
		}
	}
	for j, adj := range stats.Holm(ps) {
		p := out[where[j].i].Metrics[where[j].m]
		p.PHolm = Num(adj)
		out[where[j].i].Metrics[where[j].m] = p
	}
	decideArm(out, closed, q.Options(arm))
	return out
}

// decideArm decides every metric of an arm's results: the gated ones of
// every key are one family sharing o.Alpha.
func decideArm(out []ArmResult, closed map[string]bool, o decide.Options) {
	family := 0
	for i := range out {
		for _, g := range decide.Gated(closed[out[i].Key]) {
			if _, ok := out[i].Metrics[g]; ok {
				family++
			}
		}
	}
	alpha := decide.Share(o.Alpha, family)
	for i := range out {
		gated := decide.Gated(closed[out[i].Key])
		for name, p := range out[i].Metrics {
			m, _ := Metric(name)
			p.Decision.Result = decide.One(p.series(m), alpha, o)
			p.Gated = slices.Contains(gated, name)
			out[i].Metrics[name] = p
		}
	}
}

// comparePairs tests one metric over the usable pairs.
func comparePairs(m GroupMetric, pairs [][2]*Cell) Paired {
	var base, arm, ratios []float64
	for _, p := range pairs {
		a, b := pairValues(m, p[0], p[1])
		if !a.Known() || !b.Known() || (!Absolute(m.Name) && (a <= 0 || b <= 0)) {
			continue
		}
		base, arm = append(base, float64(a)), append(arm, float64(b))
		ratios = append(ratios, PairRatio(m.Name, p[0].Sliced, p[1].Sliced))
	}
	var t stats.TTest
	out := Paired{N: len(base), base: base, arm: arm, ratios: ratios}
	if Absolute(m.Name) {
		d := make([]float64, len(base))
		for i := range base {
			d[i] = arm[i] - base[i]
		}
		t = stats.OneSample(d)
		out.Base, out.Arm = Num(stats.Mean(base)), Num(stats.Mean(arm))
	} else {
		t = stats.OneSample(out.series(m).LogRatios()).Ratio()
		out.Base, out.Arm = Num(stats.GeoMean(base)), Num(stats.GeoMean(arm))
	}
	out.Change, out.CILow, out.CIHigh, out.P, out.PHolm = Num(t.Mean), Num(t.CILow), Num(t.CIHigh), Num(t.P), NaN()
	if len(base) == 0 {
		out.Base, out.Arm, out.Change = NaN(), NaN(), NaN()
	}
	return out
}

// pairValues reads a metric from both cells of a pair from the same
// instrument: a latency percentile is the loadgen's exact value when both
// have one, else Prometheus's estimate on both sides (one side of an
// estimate against the other's exact value would compare the instruments).
func pairValues(m GroupMetric, a, b *Cell) (Num, Num) {
	if m.Exact == nil {
		return m.Get(a), m.Get(b)
	}
	exact := func(c *Cell) bool { return c.Latency.Exact != nil && m.Exact(c.Latency.Exact).Known() }
	if exact(a) && exact(b) {
		return m.Exact(a.Latency.Exact), m.Exact(b.Latency.Exact)
	}
	return m.Estimate(a), m.Estimate(b)
}

// invalidCodes names the flags that made a cell invalid.
func invalidCodes(c *Cell) string {
	var codes []string
	for _, f := range c.Validity.Flags {
		if f.Severity == Invalid && !slices.Contains(codes, f.Code) {
			codes = append(codes, f.Code)
		}
	}
	if len(codes) == 0 {
		return "no reason recorded"
	}
	return AndList(codes)
}

// relHalfWidth is the half-width of a group statistic's 95 % interval
// relative to its mean; NaN without an interval or with a zero mean.
func relHalfWidth(s Stat) float64 {
	if !s.CILow.Known() || !s.CIHigh.Known() || !s.Mean.Known() || s.Mean == 0 {
		return math.NaN()
	}
	return float64(s.CIHigh-s.CILow) / 2 / math.Abs(float64(s.Mean))
}
