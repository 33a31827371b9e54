package synth

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"proxybench/internal/metricdefs"
)

func (r *Run) gcSeries(b *strings.Builder, ts []time.Time, ex string, w func(string, string, float64, time.Time)) {
	var gp []string
	for _, p := range r.proxies() {
		if goProxy[p] {
			gp = append(gp, p)
		}
	}
	gl := func(p string) string { return fmt.Sprintf(`%s,container="proxybench-%s",service="%s"`, ex, p, p) }
	for _, m := range []struct {
		def  *metricdefs.Def
		f    func(*Cell) float64
		idle float64
	}{{metricdefs.GCCycles, func(c *Cell) float64 { return float64(c.GCCyclesPerS) }, 0},
		{metricdefs.GCCPU, func(c *Cell) float64 { return c.GCCPUPerS }, 0}} {
		typeLine(b, m.def)
		for _, p := range gp {
			integrate(ts, func(mid time.Time) float64 {
				if c := r.cellAt(p, mid); c != nil {
					return m.f(c)
				}
				return m.idle
			}, func(v float64, t time.Time) { w(m.def.Name, gl(p), v, t) })
		}
	}
	typeLine(b, metricdefs.GCGOMAXPROCS)
	for _, p := range gp {
		for _, t := range ts {
			w(metricdefs.GCGOMAXPROCS.Name, gl(p), 2, t)
		}
	}
	typeLine(b, metricdefs.GCHeapLive)
	for _, p := range gp {
		for _, t := range ts {
			w(metricdefs.GCHeapLive.Name, gl(p), r.heapAt(p, t)*1e6, t)
		}
	}
	typeLine(b, metricdefs.GCPause)
	for _, p := range gp {
		var cells []*Cell
		for i := range r.Cells {
			if r.Cells[i].Proxy == p {
				cells = append(cells, &r.Cells[i])
			}
		}
		histSeries(b, metricdefs.GCPause.Name, gl(p), PauseBuckets, ts, cells, func(c *Cell) []float64 { return c.Pauses }, frac)
	}
}

// typeLine opens the OpenMetrics family of d.
func typeLine(b *strings.Builder, d *metricdefs.Def) {
	fmt.Fprintf(b, "# TYPE %s %s\n", d.Family(), d.Type)
}

// cellAt is the cell of proxy p whose window (start, end] holds t.
func (r *Run) cellAt(p string, t time.Time) *Cell {
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Proxy == p && t.After(c.Start) && !t.After(c.End) {
			return c
		}
	}
	return nil
}

// memAt is the working set (MB): linear inside a cell, flat between cells.
func (r *Run) memAt(p string, t time.Time) float64 {
	v := 15.0
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Proxy != p || t.Before(c.Start) {
			continue
		}
		el := math.Min(t.Sub(c.Start).Seconds(), c.End.Sub(c.Start).Seconds())
		v = c.MemStartMB + c.MemSlopeMBPerS*el
	}
	return v
}

func (r *Run) heapAt(p string, t time.Time) float64 {
	v := 5.0
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Proxy != p || t.Before(c.Start) {
			continue
		}
		el := math.Min(t.Sub(c.Start).Seconds(), c.End.Sub(c.Start).Seconds())
		v = c.HeapMB + c.HeapSlopeMBPerS*el
	}
	return v
}

func (r *Run) proxyCPU(p string) float64 {
	for _, c := range r.Cells {
		if c.Proxy == p {
			return c.ProxyCPU
		}
	}
	return 0
}

func (r *Run) proxies() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range r.Cells {
		if !seen[c.Proxy] {
			seen[c.Proxy] = true
			out = append(out, c.Proxy)
		}
	}
	return out
}

func (r *Run) cellLabels(c *Cell, lg string) string {
	arm := ""
	if c.Arm != "" {
		arm = fmt.Sprintf(`,arm="%s"`, c.Arm)
	}
	return fmt.Sprintf(`%s,run="%s",cell="%s",proxy="%s",origin="%s",scenario="simple",tier="%s"%s,repeat="%d"`, lg, r.ID, c.ID, c.Proxy, c.Origin, c.Tier, arm, c.Repeat)
}

// integrate writes a counter growing at rate(mid of each scrape interval).
func integrate(ts []time.Time, rate func(time.Time) float64, emit func(float64, time.Time)) {
	v := 0.0
	for i, t := range ts {
		if i > 0 {
			mid := ts[i-1].Add(t.Sub(ts[i-1]) / 2)
			v += rate(mid) * t.Sub(ts[i-1]).Seconds()
		}
		emit(v, t)
	}
}

// histSeries writes a classic histogram whose observations of each cell
// arrive evenly, in sorted order, as share(c, t) says.
func histSeries(b *strings.Builder, name, labels string, bounds []float64, ts []time.Time, cells []*Cell, obs func(*Cell) []float64,
	share func(*Cell, time.Time) float64) {
	type state struct {
		counts []float64
		sum    float64
		n      float64
	}
	snap := make([]state, len(ts))
	for i, t := range ts {
		s := state{counts: make([]float64, len(bounds)+1)}
		for _, c := range cells {
			o := obs(c)
			k := int(math.Floor(float64(len(o)) * share(c, t)))
			for _, x := range o[:k] {
				j := sort.SearchFloat64s(bounds, x) // first bound >= x
				s.counts[j]++
				s.sum += x
				s.n++
			}
		}
		snap[i] = s
	}
	for j := 0; j <= len(bounds); j++ {
		le := "+Inf"
		if j < len(bounds) {
			le = fmtF(bounds[j])
		}
		for i, t := range ts {
			cum := 0.0
			for x := 0; x <= j; x++ {
				cum += snap[i].counts[x]
			}
			fmt.Fprintf(b, "%s_bucket{%s,le=\"%s\"} %s %s\n", name, labels, le, fmtF(cum), fmtT(t))
		}
	}
	for i, t := range ts {
		fmt.Fprintf(b, "%s_sum{%s} %s %s\n", name, labels, fmtF(snap[i].sum), fmtT(t))
	}
	for i, t := range ts {
		fmt.Fprintf(b, "%s_count{%s} %s %s\n", name, labels, fmtF(snap[i].n), fmtT(t))
	}
}

func fmtF(v float64) string { return fmt.Sprintf("%.17g", v) }

func fmtT(t time.Time) string { return fmt.Sprintf("%.3f", float64(t.UnixMilli())/1000) }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
