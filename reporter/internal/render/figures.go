package render

import (
	"fmt"
	"math"
	"sort"

	"proxybench/reporter/internal/report"
)

// Figure file names, in the order the report shows them.
const (
	FigLatency   = "latency.svg"
	FigRPS       = "rps.svg"
	FigResources = "resources.svg"
	FigGC        = "gc_pauses.svg"
)

// bar is one proxy's value on one origin: v the bar, lo/hi a tick and a
// whisker end (NaN when absent).
type bar struct {
	v, lo, hi float64
	invalid   bool
}

type panel struct {
	title  string
	ylabel string
	groups []string // x groups (origins)
	series []string // bars within a group (proxies)
	colors []string
	vals   map[[2]string]bar // (group, series)
	log    bool
	fmt    func(float64) string
	note   string
}

const (
	figW    = 980.0
	panelH  = 300.0
	marginL = 78.0
	marginR = 20.0
)

// Figures renders every figure of r, keyed by file name. Output depends
// only on r, so the same report gives byte-identical SVG.
func Figures(r *report.Report) map[string][]byte {
	proxies, origins, sts := axes(r)
	colors := make([]string, len(proxies))
	for i, p := range proxies {
		colors[i] = palette[proxyOrder(p)%len(palette)]
	}
	gi := groupIndex(r)
	median := func(g *report.Group, m string) float64 {
		if g == nil {
			return math.NaN()
		}
		return float64(g.Metrics[m].Median)
	}
	msFmt := func(v float64) string { return trimZeros(sig(v*1e3, 2)) + " ms" }
	var lat, rps []panel
	for _, st := range sts {
		origins := originsOf(r, origins, st)
		pl := panel{title: fmt.Sprintf("Latency by origin: bar = p99, tick = p50, whisker to p99.9 (%s, %s)", st[0], st[1]),
			ylabel: "latency (log scale)", groups: origins, series: proxies, colors: colors, vals: map[[2]string]bar{}, log: true, fmt: msFmt}
		pr := panel{title: fmt.Sprintf("Goodput (responses with an expected status) by origin (%s, %s)", st[0], st[1]), ylabel: "requests per second",
			groups: origins, series: proxies, colors: colors, vals: map[[2]string]bar{}, fmt: func(v float64) string { return trimZeros(sig(v, 3)) }}
		for _, o := range origins {
			for _, p := range proxies {
				g := gi[p+"."+o+"."+st[0]+"."+st[1]]
				if g == nil {
					continue
				}
				inv := g.Valid == 0
				pl.vals[[2]string{o, p}] = bar{v: median(g, "p99_seconds"), lo: median(g, "p50_seconds"), hi: median(g, "p99_9_seconds"), invalid: inv}
				pr.vals[[2]string{o, p}] = bar{v: median(g, "goodput_rps"), lo: math.NaN(), hi: math.NaN(), invalid: inv}
			}
		}
		lat, rps = append(lat, pl), append(rps, pr)
	}
	out := map[string][]byte{
		FigLatency: []byte(barFigure("Latency percentiles per proxy and origin", lat)),
		FigRPS:     []byte(barFigure("Goodput per proxy and origin", rps)),
	}
	out[FigResources] = []byte(resourceFigure(r, proxies, colors))
	if gc := gcPanels(r, origins, colors, proxies); len(gc) > 0 {
		out[FigGC] = []byte(barFigure("Go GC stop-the-world pauses", gc))
	}
	if fl := faultsFigure(r); fl != "" {
		out[FigFaults] = []byte(fl)
	}
	return out
}

func gcPanels(r *report.Report, origins, colors, proxies []string) []panel {
	var goProxies, goColors []string
	for i, p := range proxies {
		for _, c := range r.Cells {
			if c.Proxy == p && c.GC != nil {
				goProxies, goColors = append(goProxies, p), append(goColors, colors[i])
				break
			}
		}
	}
	if len(goProxies) == 0 {
		return nil
	}
	pn := panel{title: "STW pause per Go proxy and origin: bar = p99, tick = p50, whisker to max (all scenarios and repeats pooled by median)",
		ylabel: "pause (log scale)", groups: origins, series: goProxies, colors: goColors, vals: map[[2]string]bar{}, log: true,
		fmt: func(v float64) string {
			if v < 1e-3 {
				return trimZeros(sig(v*1e6, 2)) + " µs"
			}
			return trimZeros(sig(v*1e3, 2)) + " ms"
		}}
	type acc struct {
		p50, p99, max []float64
		valid         bool
	}
	m := map[[2]string]*acc{}
	for _, c := range r.Cells {
		if c.GC == nil {
			continue
		}
		k := [2]string{c.Origin, c.Proxy}
		if m[k] == nil {
			m[k] = &acc{}
		}
		a := m[k]
		a.p50, a.p99, a.max = append(a.p50, float64(c.GC.PauseP50)), append(a.p99, float64(c.GC.PauseP99)), append(a.max, float64(c.GC.PauseMax))
		a.valid = a.valid || c.Validity.Verdict != report.Invalid
	}
	for k, a := range m {
		pn.vals[k] = bar{v: med(a.p99), lo: med(a.p50), hi: med(a.max), invalid: !a.valid}
	}
	return []panel{pn}
}

func med(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func barFigure(title string, panels []panel) string {
	h := 40 + float64(len(panels))*(panelH+20)
	if len(panels) == 0 {
		h = 80
	}
	s := newSVG(figW, h, title)
	s.text(16, 24, "start", "bold", "#1b1f24", 15, title)
	if len(panels) == 0 {
		s.text(16, 56, "start", "normal", "#57606a", 12, "no data")
	}
	for i, p := range panels {
		drawBars(s, 40+float64(i)*(panelH+20), p)
	}
	return s.String()
}

func drawBars(s *svg, y0 float64, p panel) {
	top, bottom := y0+44, y0+panelH-40
	x0, x1 := marginL, figW-marginR
	s.text(x0, y0+14, "start", "normal", "#24292f", 12, p.title)
	s.legend(x0, y0+34, p.series, p.colors)
	minV, maxV := math.Inf(1), math.Inf(-1)
	for _, b := range p.vals {
		for _, v := range []float64{b.v, b.lo, b.hi} {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && (v > 0 || !p.log) {
				minV, maxV = math.Min(minV, v), math.Max(maxV, v)
			}
		}
	}
	if math.IsInf(maxV, -1) {
		s.text((x0+x1)/2, (top+bottom)/2, "middle", "normal", "#57606a", 12, "no data")
		return
	}
	sc := scale{p0: bottom, p1: top, log: p.log, unitFmt: p.fmt}
	if p.log {
		sc.lo, sc.hi = logRange(minV, maxV)
	} else {
		sc.lo, sc.hi = linearRange(maxV)
	}
	s.yAxis(sc, x0, x1, p.ylabel)
	gw := (x1 - x0) / float64(len(p.groups))
	bw := math.Min(34, gw*0.8/float64(len(p.series)))
	for gi, g := range p.groups {
		gx := x0 + float64(gi)*gw
		s.text(gx+gw/2, bottom+18, "middle", "bold", "#24292f", 12, g)
		start := gx + (gw-bw*float64(len(p.series)))/2
		for si, name := range p.series {
			b, ok := p.vals[[2]string{g, name}]
			if !ok || math.IsNaN(b.v) {
				continue
			}
			bx := start + float64(si)*bw
			yv := sc.px(b.v)
			op := 0.9
			if b.invalid {
				op = 0.3
			}
			s.rect(bx+2, yv, bw-4, bottom-yv, p.colors[si], op, "")
			if !math.IsNaN(b.lo) && (!p.log || b.lo > 0) {
				y := sc.px(b.lo)
				s.line(bx+2, y, bx+bw-2, y, "#1b1f24", 2, "")
			}
			if !math.IsNaN(b.hi) && (!p.log || b.hi > 0) {
				cx := bx + bw/2
				s.line(cx, yv, cx, sc.px(b.hi), "#1b1f24", 1.2, "")
				s.line(cx-4, sc.px(b.hi), cx+4, sc.px(b.hi), "#1b1f24", 1.2, "")
			}
			if b.invalid {
				s.text(bx+bw/2, yv-4, "middle", "bold", "#a40e26", 12, "✗")
			}
		}
	}
	s.line(x0, bottom, x1, bottom, "#8c959f", 1, "")
	note := p.note
	if note == "" {
		note = "faded bar with ✗ = invalid cell; values are medians across repeats"
	}
	s.text(x1, bottom+34, "end", "normal", "#57606a", 11, note)
}

// resourceFigure plots proxy CPU and memory over the run, one line per
// proxy, with gaps between cells.
func resourceFigure(r *report.Report, proxies, colors []string) string {
	const h = 40 + 2*(panelH+20)
	s := newSVG(figW, h, "Proxy CPU and memory over time")
	s.text(16, 24, "start", "bold", "#1b1f24", 15, "Proxy CPU and memory over the run")
	color := map[string]string{}
	for i, p := range proxies {
		color[p] = colors[i]
	}
	type seg struct {
		proxy string
		t, v  []float64
	}
	var cpu, mem []seg
	maxT, maxCPU, maxMem := 1.0, 0.0, 0.0
	cells := sortedByStart(r)
	for _, c := range cells {
		off := c.Start.Sub(r.Start).Seconds()
		ts := make([]float64, len(c.Series.T))
		for i, t := range c.Series.T {
			ts[i] = off + t
			maxT = math.Max(maxT, ts[i])
		}
		if len(c.Series.CPU) == len(ts) && len(ts) > 0 {
			cpu = append(cpu, seg{c.Proxy, ts, c.Series.CPU})
			for _, v := range c.Series.CPU {
				maxCPU = math.Max(maxCPU, v)
			}
		}
		if len(c.Series.MemMB) == len(ts) && len(ts) > 0 {
			mem = append(mem, seg{c.Proxy, ts, c.Series.MemMB})
			for _, v := range c.Series.MemMB {
				maxMem = math.Max(maxMem, v)
			}
		}
	}
	for i, pn := range []struct {
		title, ylabel string
		segs          []seg
		max           float64
		fmt           func(float64) string
	}{
		{"CPU of the proxy container (cores, per-scrape rate)", "CPU cores", cpu, maxCPU, func(v float64) string { return trimZeros(sig(v, 2)) }},
		{"Memory working set of the proxy container (MB)", "MB", mem, maxMem, func(v float64) string { return trimZeros(sig(v, 3)) }},
	} {
		y0 := 40 + float64(i)*(panelH+20)
		top, bottom := y0+44, y0+panelH-40
		x0, x1 := marginL, figW-marginR
		s.text(x0, y0+14, "start", "normal", "#24292f", 12, pn.title)
		s.legend(x0, y0+34, proxies, colors)
		if len(pn.segs) == 0 {
			s.text((x0+x1)/2, (top+bottom)/2, "middle", "normal", "#57606a", 12, "no data")
			continue
		}
		ys := scale{p0: bottom, p1: top, unitFmt: pn.fmt}
		ys.lo, ys.hi = linearRange(pn.max)
		s.yAxis(ys, x0, x1, pn.ylabel)
		xs := scale{p0: x0, p1: x1, lo: 0, hi: maxT}
		_, xs.hi = linearRange(maxT)
		for _, v := range xs.ticks() {
			x := xs.px(v)
			s.line(x, bottom, x, bottom+4, "#8c959f", 1, "")
			s.text(x, bottom+17, "middle", "normal", "#57606a", 11, trimZeros(sig(v, 3))+" s")
		}
		s.line(x0, bottom, x1, bottom, "#8c959f", 1, "")
		s.text(x1, bottom+32, "end", "normal", "#57606a", 11, "seconds since the first cell started; each line segment is one cell")
		for _, sg := range pn.segs {
			px, py := make([]float64, len(sg.t)), make([]float64, len(sg.t))
			for j := range sg.t {
				px[j], py[j] = xs.px(sg.t[j]), ys.px(sg.v[j])
			}
			s.polyline(px, py, color[sg.proxy])
		}
	}
	return s.String()
}

func sortedByStart(r *report.Report) []*report.Cell {
	out := make([]*report.Cell, len(r.Cells))
	for i := range r.Cells {
		out[i] = &r.Cells[i]
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
