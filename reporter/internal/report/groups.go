package report

import (
	"sort"

	"proxybench/internal/decide"
	"proxybench/internal/stats"
)

// GroupMetric is a per-cell number summarised across repeats and compared
// by diff and between arms. Better says which direction is an
// improvement. Get prefers the loadgen's exact value (manifest) where a
// latency has one; Estimate and Exact read the two sources apart, so a
// comparison can take both sides from the same instrument.
type GroupMetric struct {
	Name   string
	Better int // +1 higher is better, -1 lower is better
	Get    func(*Cell) Num
	// Latency percentiles only (nil otherwise): Prometheus's estimate and
	// the manifest's exact value.
	Estimate func(*Cell) Num
	Exact    func(*Exact) Num
}

// latency is a percentile metric: exact when the manifest has it.
func latency(name string, est func(*Latency) Num, ex func(*Exact) Num) GroupMetric {
	m := GroupMetric{Name: name, Better: -1, Estimate: func(c *Cell) Num { return est(&c.Latency) }, Exact: ex}
	m.Get = func(c *Cell) Num { return pick(est(&c.Latency), c.Latency.Exact, ex) }
	return m
}

// GroupMetrics are the per-cell numbers summarised across repeats; diff
// compares the same names.
var GroupMetrics = []GroupMetric{
	{Name: "rps", Better: +1, Get: func(c *Cell) Num { return c.RPS }},
	latency("p50_seconds", func(l *Latency) Num { return l.P50 }, func(e *Exact) Num { return e.P50 }),
	latency("p99_seconds", func(l *Latency) Num { return l.P99 }, func(e *Exact) Num { return e.P99 }),
	latency("p99_9_seconds", func(l *Latency) Num { return l.P999 }, func(e *Exact) Num { return e.P999 }),
	{Name: "error_ratio", Better: -1, Get: func(c *Cell) Num { return c.ErrorRatio }},
	{Name: "late_error_ratio", Better: -1, Get: func(c *Cell) Num { return c.LateErrorRatio }},
	{Name: "proxy_cpu_cores", Better: -1, Get: func(c *Cell) Num { return c.ProxyRes.CPUMeanCores }},
	{Name: "proxy_mem_peak_bytes", Better: -1, Get: func(c *Cell) Num { return c.ProxyRes.MemPeakBytes }},
	{Name: "goodput_rps", Better: +1, Get: func(c *Cell) Num { return c.GoodputRPS }},
	{Name: decide.CPUPerRequest, Better: -1, Get: cpuPerRequest},
}

// CompareMetrics are the metrics diff compares by default and the report
// compares between arms, in the order they are shown.
var CompareMetrics = []string{"goodput_rps", "rps", "p50_seconds", "p99_seconds", "error_ratio", "late_error_ratio", "proxy_cpu_cores", decide.CPUPerRequest}

// Metric finds a GroupMetric by name.
func Metric(name string) (GroupMetric, bool) {
	for _, m := range GroupMetrics {
		if m.Name == name {
			return m, true
		}
	}
	return GroupMetric{}, false
}

// Absolute says whether a metric changes in absolute terms (the error
// ratios: percentage points, they are often 0) rather than relative ones.
func Absolute(metric string) bool { return metric == "error_ratio" || metric == "late_error_ratio" }

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
			groups = append(groups, Group{Key: k, Group: c.Key.Group()})
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
