package report

import (
	"sort"

	"proxybench/reporter/internal/stats"
)

// GroupMetrics are the per-cell numbers summarised across repeats; diff
// compares the same names. Better says which direction is an improvement.
var GroupMetrics = []struct {
	Name   string
	Better int // +1 higher is better, -1 lower is better
	Get    func(*Cell) Num
}{
	{"rps", +1, func(c *Cell) Num { return c.RPS }},
	{"p50_seconds", -1, func(c *Cell) Num { return pick(c.Latency.P50, c.Latency.Exact, func(e *Exact) Num { return e.P50 }) }},
	{"p99_seconds", -1, func(c *Cell) Num { return pick(c.Latency.P99, c.Latency.Exact, func(e *Exact) Num { return e.P99 }) }},
	{"p99_9_seconds", -1, func(c *Cell) Num { return pick(c.Latency.P999, c.Latency.Exact, func(e *Exact) Num { return e.P999 }) }},
	{"error_ratio", -1, func(c *Cell) Num { return c.ErrorRatio }},
	{"proxy_cpu_cores", -1, func(c *Cell) Num { return c.ProxyRes.CPUMeanCores }},
	{"proxy_mem_peak_bytes", -1, func(c *Cell) Num { return c.ProxyRes.MemPeakBytes }},
	{"goodput_rps", +1, func(c *Cell) Num { return c.GoodputRPS }},
}

// pick prefers the exact manifest value when there is one.
func pick(prom Num, e *Exact, f func(*Exact) Num) Num {
	if e != nil && f(e).Known() {
		return f(e)
	}
	return prom
}

// BuildGroups summarises repeats of each cell key, in first-seen order.
func BuildGroups(cells []Cell) []Group {
	idx := map[string]int{}
	var groups []Group
	members := map[string][]*Cell{}
	for i := range cells {
		c := &cells[i]
		k := c.GroupKey()
		if _, ok := idx[k]; !ok {
			idx[k] = len(groups)
			groups = append(groups, Group{Key: k, Proxy: c.Proxy, Origin: c.Origin, Scenario: c.Scenario, Tier: c.Tier})
		}
		members[k] = append(members[k], c)
	}
	for gi := range groups {
		g := &groups[gi]
		ms := members[g.Key]
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Repeat < ms[j].Repeat })
		g.Repeats = len(ms)
		var use []*Cell
		for _, c := range ms {
			if c.Validity.Verdict != Invalid {
				use = append(use, c)
			}
		}
		g.Valid = len(use)
		g.Invalid = g.Repeats - g.Valid
		if len(use) == 0 {
			use = ms
		}
		g.Metrics = map[string]Stat{}
		for _, m := range GroupMetrics {
			xs := make([]float64, 0, len(use))
			vals := make([]Num, 0, len(use))
			for _, c := range use {
				v := m.Get(c)
				vals = append(vals, v)
				xs = append(xs, float64(v))
			}
			s := stats.Summarize(xs)
			g.Metrics[m.Name] = Stat{N: s.N, Mean: orNaN(s.N, s.Mean), Median: orNaN(s.N, s.Median), Stddev: orNaN(s.N, s.Stddev),
				CV: orNaN(s.N, s.CV), CILow: orNaN(s.N, s.CILow), CIHigh: orNaN(s.N, s.CIHigh), Values: vals}
		}
	}
	return groups
}

// orNaN is v, unknown for an empty sample (stats.Summarize leaves its
// fields zero). The spread of a single value is already NaN: not measured.
func orNaN(n int, v float64) Num {
	if n == 0 {
		return NaN()
	}
	return Num(v)
}

// Tally counts verdicts and SLO failures into r.Summary.
func Tally(r *Report) {
	s := Summary{Cells: len(r.Cells)}
	for i := range r.Cells {
		switch r.Cells[i].Validity.Verdict {
		case Valid:
			s.Valid++
		case Suspect:
			s.Suspect++
		default:
			s.Invalid++
		}
		if !r.Cells[i].SLOPassed() {
			s.SLOFailed++
		}
	}
	r.Summary = s
}
