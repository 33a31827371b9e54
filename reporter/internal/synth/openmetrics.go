package synth

import (
	"fmt"
	"math"
	"strings"
	"time"

	"proxybench/internal/metricdefs"
)

// OpenMetrics renders the run's series with timestamps, ready for promtool.
func (r *Run) OpenMetrics() []byte {
	var b strings.Builder
	ts := r.scrapeTimes()
	w := func(name string, labels string, v float64, t time.Time) {
		fmt.Fprintf(&b, "%s{%s} %s %s\n", name, labels, fmtF(v), fmtT(t))
	}
	lg := `job="loadgen",instance="127.0.0.1:9500"`
	ex := `job="exporter",instance="127.0.0.1:9400"`
	tl := func(c *Cell) string {
		return fmt.Sprintf(`%s,proxy="%s",origin="%s",scenario="simple"`, lg, c.Proxy, c.Origin)
	}
	open := map[string]bool{}     // open-loop label sets
	byKey := map[string][]*Cell{} // traffic label set -> cells in time order
	var keys []string
	for i := range r.Cells {
		k := tl(&r.Cells[i])
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], &r.Cells[i])
		if r.Cells[i].TargetRate > 0 {
			open[k] = true
		}
	}
	// Counter of a traffic label set: cumulative over its cells, each part's
	// count n(c) done as far as share(c, t) says; born once a non-zero part
	// has begun.
	type part struct {
		n     func(*Cell) float64
		share func(*Cell, time.Time) float64
	}
	cum := func(cells []*Cell, t time.Time, parts ...part) (float64, bool) {
		v, born := 0.0, false
		for _, c := range cells {
			for _, p := range parts {
				if x := p.n(c); x != 0 {
					fr := p.share(c, t)
					born = born || fr > 0
					v += math.Floor(x * fr)
				}
			}
		}
		return v, born
	}
	// The codes any of the cells answered in the maps of, sorted.
	codesOf := func(cells []*Cell, of ...func(*Cell) map[string]int64) []string {
		codes := map[string]bool{}
		for _, c := range cells {
			for _, m := range of {
				for code := range m(c) {
					codes[code] = true
				}
			}
		}
		return sortedKeys(codes)
	}
	inWindow := func(c *Cell) map[string]int64 { return c.Codes }
	late := func(c *Cell) map[string]int64 { return c.LateCodes }
	// requests_total counts every completion, late ones until the drain
	// ends: code 200 exists from the start of the run (0 before its first
	// cell); other codes are born when first counted.
	typeLine(&b, metricdefs.Requests)
	for _, k := range keys {
		for _, code := range codesOf(byKey[k], inWindow, late) {
			for _, t := range ts {
				v, born := cum(byKey[k], t, part{func(c *Cell) float64 { return float64(c.Codes[code]) }, frac},
					part{func(c *Cell) float64 { return float64(c.LateCodes[code]) }, lateFrac})
				if code != "200" && (!born || v == 0) {
					continue
				}
				w(metricdefs.Requests.Name, k+`,code="`+code+`"`, v, t)
			}
		}
	}
	// Late completions: a series is born with its first late response.
	typeLine(&b, metricdefs.RequestsLate)
	for _, k := range keys {
		for _, code := range codesOf(byKey[k], late) {
			for _, t := range ts {
				v, born := cum(byKey[k], t, part{func(c *Cell) float64 { return float64(c.LateCodes[code]) }, lateFrac})
				if born && v > 0 {
					w(metricdefs.RequestsLate.Name, k+`,code="`+code+`"`, v, t)
				}
			}
		}
	}
	// Open loop: scheduled, sent and capped grow across the window; missed
	// is added at its end.
	ended := func(c *Cell, t time.Time) float64 {
		if t.Before(c.End) {
			return 0
		}
		return 1
	}
	for _, m := range []struct {
		def *metricdefs.Def
		p   part
	}{{metricdefs.OpenLoopScheduled, part{func(c *Cell) float64 { return float64(c.Scheduled) }, frac}},
		{metricdefs.OpenLoopSent, part{func(c *Cell) float64 { return float64(c.Sent) }, frac}},
		{metricdefs.OpenLoopCapped, part{func(c *Cell) float64 { return float64(c.Capped) }, frac}},
		{metricdefs.OpenLoopMissed, part{func(c *Cell) float64 { return float64(c.Missed) }, ended}},
		{metricdefs.OpenLoopQueued, part{func(c *Cell) float64 { return float64(c.Queued) }, ended}}} {
		typeLine(&b, m.def)
		for _, k := range keys {
			if !open[k] {
				continue
			}
			for _, t := range ts {
				v, _ := cum(byKey[k], t, m.p)
				w(m.def.Name, k, v, t)
			}
		}
	}
	typeLine(&b, metricdefs.RequestErrors)
	for _, k := range keys {
		for _, reason := range []string{"timeout"} {
			for _, t := range ts {
				v, _ := cum(byKey[k], t, part{func(c *Cell) float64 { return float64(c.Reasons[reason]) }, frac})
				w(metricdefs.RequestErrors.Name, k+`,reason="`+reason+`"`, v, t)
			}
		}
	}
	typeLine(&b, metricdefs.WrongOrigin)
	for _, k := range keys {
		for _, t := range ts {
			v, _ := cum(byKey[k], t, part{func(c *Cell) float64 { return float64(c.WrongOrigin) }, frac})
			w(metricdefs.WrongOrigin.Name, k, v, t)
		}
	}
	// Latency histogram: observations arrive in sorted order across the window.
	typeLine(&b, metricdefs.RequestDuration)
	for _, k := range keys {
		histSeries(&b, metricdefs.RequestDuration.Name, k, LatencyBuckets, ts, byKey[k], func(c *Cell) []float64 { return c.Latencies }, obsFrac)
	}
	typeLine(&b, metricdefs.OpenLoopLag)
	for _, k := range keys {
		if open[k] {
			histSeries(&b, metricdefs.OpenLoopLag.Name, k, LagBuckets, ts, byKey[k], func(c *Cell) []float64 { return c.Lags }, frac)
		}
	}
	typeLine(&b, metricdefs.RequestsInFlight)
	for _, k := range keys {
		for _, t := range ts {
			v := 0.0
			for _, c := range byKey[k] {
				if t.After(c.Start) && !t.After(c.End) {
					v = c.InFlight
				}
			}
			w(metricdefs.RequestsInFlight.Name, k, v, t)
		}
	}
	// Cell window series.
	// Published when the cell ends: the drain's end (the window's end when
	// nothing was late) and the CPU read at the window's edges.
	for _, m := range []struct {
		def *metricdefs.Def
		f   func(*Cell) float64
	}{{metricdefs.CellDrainEnd, func(c *Cell) float64 {
		if c.DrainEnd.IsZero() {
			return float64(c.End.UnixMilli()) / 1000
		}
		return float64(c.DrainEnd.UnixMilli()) / 1000
	}}, {metricdefs.CellProxyCPU, func(c *Cell) float64 { return c.ProxyCPUEdgeS }},
		{metricdefs.CellLoadgenCPU, func(c *Cell) float64 { return c.LoadgenCPUEdgeS }}} {
		typeLine(&b, m.def)
		for i := range r.Cells {
			c := &r.Cells[i]
			if m.f(c) == 0 {
				continue
			}
			for _, t := range ts {
				if t.After(c.End) {
					w(m.def.Name, r.cellLabels(c, lg), m.f(c), t)
				}
			}
		}
	}
	for _, m := range []*metricdefs.Def{metricdefs.CellWindowStart, metricdefs.CellWindowEnd} {
		typeLine(&b, m)
		for i := range r.Cells {
			c := &r.Cells[i]
			for _, t := range ts {
				from, v := c.Start.Add(-time.Second), float64(c.Start.UnixMilli())/1000
				if m == metricdefs.CellWindowEnd {
					from, v = c.End, float64(c.End.UnixMilli())/1000
				}
				if t.Before(from) {
					continue
				}
				w(m.Name, r.cellLabels(c, lg), v, t)
			}
		}
	}
	for _, m := range []struct {
		def *metricdefs.Def
		f   func(*Cell) float64
	}{{metricdefs.CellConcurrency, func(c *Cell) float64 { return float64(c.Concurrency) }},
		{metricdefs.CellTargetRate, func(c *Cell) float64 { return c.TargetRate }},
		{metricdefs.CellFailed, func(*Cell) float64 { return 0 }}} {
		typeLine(&b, m.def)
		for i := range r.Cells {
			c := &r.Cells[i]
			for _, t := range ts {
				if !t.Before(c.Start.Add(-time.Second)) {
					w(m.def.Name, r.cellLabels(c, lg), m.f(c), t)
				}
			}
		}
	}
	// The loadgen's capacity follows the cell (as if restarted with other
	// limits); 2 cores between cells.
	typeLine(&b, metricdefs.LoadgenCPULimit)
	for _, t := range ts {
		v := 2.0
		for i := range r.Cells {
			c := &r.Cells[i]
			if !t.Before(c.Start.Add(-1500*time.Millisecond)) && t.Before(c.End.Add(2*time.Second)) {
				v = c.LoadgenLimit
			}
		}
		w(metricdefs.LoadgenCPULimit.Name, lg, v, t)
	}
	typeLine(&b, metricdefs.ProcessCPU)
	integrate(ts, func(mid time.Time) float64 {
		c := r.active(mid)
		if c == nil {
			return 0.05
		}
		// The spike covers the one scrape interval whose middle is 2.25 s in.
		if el := mid.Sub(c.Start); c.LoadgenSpike > 0 && el >= 2*time.Second && el < 2500*time.Millisecond {
			return c.LoadgenSpike
		}
		return c.LoadgenCPU
	}, func(v float64, t time.Time) { w(metricdefs.ProcessCPU.Name, lg, v, t) })
	// The loadgen's cgroup: 10 CFS periods a second, always exported.
	for _, m := range []struct {
		def *metricdefs.Def
		f   func(*Cell) float64
	}{{metricdefs.LoadgenCPUPeriods, func(*Cell) float64 { return 10 }},
		{metricdefs.LoadgenCPUThrottledPeriods, func(c *Cell) float64 { return 10 * c.ThrottledShare }},
		{metricdefs.LoadgenRunDelay, func(c *Cell) float64 { return c.RunDelayPerS }}} {
		typeLine(&b, m.def)
		integrate(ts, func(mid time.Time) float64 {
			if c := r.active(mid); c != nil {
				return m.f(c)
			}
			return m.f(&Cell{})
		}, func(v float64, t time.Time) { w(m.def.Name, lg, v, t) })
	}

	// cAdvisor and exporter series per proxy.
	proxies := r.proxies()
	typeLine(&b, metricdefs.ContainerCPUUsage)
	for _, p := range proxies {
		cl := fmt.Sprintf(`%s,name="proxybench-%s",service="%s",image="proxybench/%s:test",id="/docker/%s"`, ex, p, p, p, p)
		cpu := r.proxyCPU(p)
		integrate(ts, func(time.Time) float64 { return cpu }, func(v float64, t time.Time) { w(metricdefs.ContainerCPUUsage.Name, cl, v, t) })
	}
	// The first proxy's container was recreated before the run: its old
	// cgroup still reports an idle CPU counter and a large working set.
	old := fmt.Sprintf(`%s,name="proxybench-%s",service="%s",image="proxybench/%s:old",id="/docker/%s-old"`, ex, proxies[0], proxies[0], proxies[0], proxies[0])
	for _, t := range ts {
		w(metricdefs.ContainerCPUUsage.Name, old, 7.5, t)
	}
	typeLine(&b, metricdefs.ContainerMemoryWorkingSet)
	for _, p := range proxies {
		cl := fmt.Sprintf(`%s,name="proxybench-%s",service="%s",image="proxybench/%s:test",id="/docker/%s"`, ex, p, p, p, p)
		for _, t := range ts {
			w(metricdefs.ContainerMemoryWorkingSet.Name, cl, r.memAt(p, t)*1e6, t)
		}
	}
	for _, t := range ts {
		w(metricdefs.ContainerMemoryWorkingSet.Name, old, 99e6, t)
	}
	for _, m := range []struct {
		def *metricdefs.Def
		v   float64
	}{{metricdefs.ContainerSpecCPUQuota, 200000}, {metricdefs.ContainerSpecCPUPeriod, 100000}, {metricdefs.ContainerSpecMemoryLimit, 512 << 20}} {
		typeLine(&b, m.def)
		for _, p := range proxies {
			cl := fmt.Sprintf(`%s,name="proxybench-%s",service="%s",image="proxybench/%s:test",id="/docker/%s"`, ex, p, p, p, p)
			for _, t := range ts {
				w(m.def.Name, cl, m.v, t)
			}
		}
	}
	typeLine(&b, metricdefs.ProxyInfo)
	for _, p := range proxies {
		for _, t := range ts {
			w(metricdefs.ProxyInfo.Name, fmt.Sprintf(`%s,container="proxybench-%s",service="%s",image="proxybench/%s:test",image_id="sha256:%s",version="%s-1.0.0"`, ex, p, p, p, p, p), 1, t)
		}
	}
	r.gcSeries(&b, ts, ex, w)
	b.WriteString("# EOF\n")
	return r.dropOutages([]byte(b.String()))
}
