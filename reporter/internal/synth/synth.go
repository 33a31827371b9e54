// Package synth owns synthetic proxybench runs for tests and benchmarks: it
// writes the series a real run leaves in Prometheus (loadgen, exporter,
// cAdvisor) as OpenMetrics text with timestamps, for promtool to backfill,
// and keeps the exact truth every reported number must match.
package synth

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Buckets of the classic latency and GC pause histograms (seconds).
var (
	LatencyBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}
	PauseBuckets   = []float64{1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3}
)

// Cell is one synthetic cell and its truth.
type Cell struct {
	ID, Proxy, Origin string
	Repeat            int
	Start, End        time.Time
	Concurrency       int
	Codes             map[string]int64 // exact responses by status
	Reasons           map[string]int64 // exact transport errors by reason
	Latencies         []float64        // every observation, sorted
	InFlight          float64          // gauge value during the window
	WrongOrigin       int64
	ProxyCPU          float64 // cores, constant over the proxy's block
	MemStartMB        float64 // working set at start
	MemSlopeMBPerS    float64
	LoadgenCPU        float64 // cores during the cell
	GCCyclesPerS      int     // Go proxies only
	GCCPUPerS         float64
	HeapMB            float64
	HeapSlopeMBPerS   float64
	Pauses            []float64 // sorted
	Go                bool
}

// Run is a synthetic run.
type Run struct {
	ID    string
	Start time.Time
	Cells []Cell
}

// Options shape a run.
type Options struct {
	ID        string
	Start     time.Time // whole second; windows start at +0.5 s phase
	Proxies   []string
	Origins   []string
	Repeats   int
	DurationS int
}

var goProxy = map[string]bool{"traefik": true, "caddy": true}

// New builds a run whose numbers vary by cell in known ways: cell 0 of each
// run has a 503 series born mid-window, one cell is loadgen-bound, one has a
// Little's-law mismatch, one is misrouted.
func New(o Options) *Run {
	r := &Run{ID: o.ID, Start: o.Start}
	t := o.Start.Add(10*time.Second + 500*time.Millisecond)
	i := 0
	for pi, p := range o.Proxies {
		for _, org := range o.Origins {
			for rep := 1; rep <= o.Repeats; rep++ {
				c := Cell{ID: fmt.Sprintf("%s.%s.simple.quick.r%d", p, org, rep), Proxy: p, Origin: org, Repeat: rep,
					Start: t, End: t.Add(time.Duration(o.DurationS) * time.Second), Concurrency: 10, Go: goProxy[p]}
				n := int64(800 + 37*i)
				c.Codes = map[string]int64{"200": n}
				c.Reasons = map[string]int64{}
				if i%5 == 1 {
					c.Codes["503"] = int64(3 + i%7) // a series born inside the window
				}
				if i%6 == 2 {
					c.Codes["429"] = 40
				}
				if i%7 == 3 {
					c.Reasons["timeout"] = 2
				}
				if i == 8 {
					c.Codes["503"] = 50 // errors above 1 %
				}
				if i == 4 {
					c.Codes = map[string]int64{"404": n} // misrouted
				}
				total := int64(0)
				for _, v := range c.Codes {
					total += v
				}
				// Latencies: a deterministic spread, scaled per proxy and origin.
				base := 0.0008 * float64(1+pi) * float64(1+len(org)%3)
				c.Latencies = make([]float64, total)
				for k := range c.Latencies {
					u := (float64(k) + 0.5) / float64(total)
					c.Latencies[k] = base * (1 + 6*math.Pow(u, 8) + u)
				}
				sort.Float64s(c.Latencies)
				mean := 0.0
				for _, l := range c.Latencies {
					mean += l
				}
				mean /= float64(total)
				c.InFlight = float64(total) / float64(o.DurationS) * mean
				if i == 5 {
					c.InFlight *= 2 // Little's law mismatch
				}
				c.ProxyCPU = 0.3 + 0.2*float64(pi)
				c.MemStartMB = 20 + 5*float64(pi) + float64(rep)
				c.MemSlopeMBPerS = 0.01 * float64(1+i%3)
				c.LoadgenCPU = 0.4 + 0.01*float64(i%10)
				if i == 6 {
					c.LoadgenCPU = 1.9 // loadgen-bound with a 2-core limit
				}
				if c.Go {
					c.GCCyclesPerS = 2 + i%3
					c.GCCPUPerS = 0.02 + 0.001*float64(i%4)
					c.HeapMB = 8 + float64(pi)
					c.HeapSlopeMBPerS = 0.005
					nP := c.GCCyclesPerS * o.DurationS
					for k := 0; k < nP; k++ {
						c.Pauses = append(c.Pauses, 3e-5*(1+float64(k%9))*(1+0.3*float64(pi)))
					}
					sort.Float64s(c.Pauses)
				}
				if i == 7 {
					c.WrongOrigin = 5
				}
				r.Cells = append(r.Cells, c)
				t = c.End.Add(4 * time.Second)
				i++
			}
		}
		// Proxies of one run are visited one after the other.
		t = t.Add(3 * time.Second)
	}
	return r
}

// End is when the run's data ends (after the last cell plus a linger).
func (r *Run) End() time.Time { return r.Cells[len(r.Cells)-1].End.Add(8 * time.Second) }

// scrapeTimes are every 1 s at a +0.25 s phase from the run start.
func (r *Run) scrapeTimes() []time.Time {
	var out []time.Time
	for t := r.Start.Add(250 * time.Millisecond); !t.After(r.End()); t = t.Add(time.Second) {
		out = append(out, t)
	}
	return out
}

// frac is the share of the window elapsed at t.
func frac(c *Cell, t time.Time) float64 {
	d := c.End.Sub(c.Start).Seconds()
	x := t.Sub(c.Start).Seconds() / d
	return math.Max(0, math.Min(1, x))
}

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
	byKey := map[string][]*Cell{} // traffic label set -> cells in time order
	var keys []string
	for i := range r.Cells {
		k := tl(&r.Cells[i])
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], &r.Cells[i])
	}
	// Counter of a traffic label set: cumulative over its cells.
	cum := func(cells []*Cell, t time.Time, f func(*Cell) float64) (float64, bool) {
		v, born := 0.0, false
		for _, c := range cells {
			x := f(c)
			if x == 0 {
				continue
			}
			fr := frac(c, t)
			if fr > 0 {
				born = true
			}
			v += math.Floor(x * fr)
		}
		return v, born
	}
	// requests_total: code 200 exists from the start of the run (0 before its
	// first cell); other codes are born when first counted.
	b.WriteString("# TYPE proxybench_requests counter\n")
	for _, k := range keys {
		codes := map[string]bool{}
		for _, c := range byKey[k] {
			for code := range c.Codes {
				codes[code] = true
			}
		}
		for _, code := range sortedKeys(codes) {
			for _, t := range ts {
				v, born := cum(byKey[k], t, func(c *Cell) float64 { return float64(c.Codes[code]) })
				if code != "200" && (!born || v == 0) {
					continue
				}
				w("proxybench_requests_total", k+`,code="`+code+`"`, v, t)
			}
		}
	}
	b.WriteString("# TYPE proxybench_request_errors counter\n")
	for _, k := range keys {
		for _, reason := range []string{"timeout"} {
			for _, t := range ts {
				v, _ := cum(byKey[k], t, func(c *Cell) float64 { return float64(c.Reasons[reason]) })
				w("proxybench_request_errors_total", k+`,reason="`+reason+`"`, v, t)
			}
		}
	}
	b.WriteString("# TYPE proxybench_wrong_origin counter\n")
	for _, k := range keys {
		for _, t := range ts {
			v, _ := cum(byKey[k], t, func(c *Cell) float64 { return float64(c.WrongOrigin) })
			w("proxybench_wrong_origin_total", k, v, t)
		}
	}
	// Latency histogram: observations arrive in sorted order across the window.
	b.WriteString("# TYPE proxybench_request_duration_seconds histogram\n")
	for _, k := range keys {
		histSeries(&b, "proxybench_request_duration_seconds", k, LatencyBuckets, ts, byKey[k], func(c *Cell) []float64 { return c.Latencies })
	}
	b.WriteString("# TYPE proxybench_requests_in_flight gauge\n")
	for _, k := range keys {
		for _, t := range ts {
			v := 0.0
			for _, c := range byKey[k] {
				if t.After(c.Start) && !t.After(c.End) {
					v = c.InFlight
				}
			}
			w("proxybench_requests_in_flight", k, v, t)
		}
	}
	// Cell window series.
	for _, m := range []string{"start_timestamp_seconds", "end_timestamp_seconds"} {
		fmt.Fprintf(&b, "# TYPE proxybench_cell_window_%s gauge\n", m)
		for i := range r.Cells {
			c := &r.Cells[i]
			for _, t := range ts {
				from, v := c.Start.Add(-time.Second), float64(c.Start.UnixMilli())/1000
				if m == "end_timestamp_seconds" {
					from, v = c.End, float64(c.End.UnixMilli())/1000
				}
				if t.Before(from) {
					continue
				}
				w("proxybench_cell_window_"+m, r.cellLabels(c, lg), v, t)
			}
		}
	}
	for _, m := range []struct {
		name string
		f    func(*Cell) float64
	}{{"proxybench_cell_concurrency", func(c *Cell) float64 { return float64(c.Concurrency) }},
		{"proxybench_cell_target_rate_requests_per_second", func(*Cell) float64 { return 0 }},
		{"proxybench_cell_failed", func(*Cell) float64 { return 0 }}} {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", m.name)
		for i := range r.Cells {
			c := &r.Cells[i]
			for _, t := range ts {
				if !t.Before(c.Start.Add(-time.Second)) {
					w(m.name, r.cellLabels(c, lg), m.f(c), t)
				}
			}
		}
	}
	b.WriteString("# TYPE proxybench_loadgen_cpu_limit_cores gauge\n")
	for _, t := range ts {
		w("proxybench_loadgen_cpu_limit_cores", lg, 2, t)
	}
	b.WriteString("# TYPE process_cpu_seconds counter\n")
	integrate(ts, func(mid time.Time) float64 {
		for i := range r.Cells {
			c := &r.Cells[i]
			if !mid.Before(c.Start.Add(-time.Second)) && mid.Before(c.End.Add(time.Second)) {
				return c.LoadgenCPU
			}
		}
		return 0.05
	}, func(v float64, t time.Time) { w("process_cpu_seconds_total", lg, v, t) })

	// cAdvisor and exporter series per proxy.
	proxies := r.proxies()
	b.WriteString("# TYPE container_cpu_usage_seconds counter\n")
	for _, p := range proxies {
		cl := fmt.Sprintf(`%s,name="proxybench-%s",service="%s",image="proxybench/%s:test",id="/docker/%s"`, ex, p, p, p, p)
		cpu := r.proxyCPU(p)
		integrate(ts, func(time.Time) float64 { return cpu }, func(v float64, t time.Time) { w("container_cpu_usage_seconds_total", cl, v, t) })
	}
	// The first proxy's container was recreated before the run: its old
	// cgroup still reports an idle CPU counter and a large working set.
	old := fmt.Sprintf(`%s,name="proxybench-%s",service="%s",image="proxybench/%s:old",id="/docker/%s-old"`, ex, proxies[0], proxies[0], proxies[0], proxies[0])
	for _, t := range ts {
		w("container_cpu_usage_seconds_total", old, 7.5, t)
	}
	b.WriteString("# TYPE container_memory_working_set_bytes gauge\n")
	for _, p := range proxies {
		cl := fmt.Sprintf(`%s,name="proxybench-%s",service="%s",image="proxybench/%s:test",id="/docker/%s"`, ex, p, p, p, p)
		for _, t := range ts {
			w("container_memory_working_set_bytes", cl, r.memAt(p, t)*1e6, t)
		}
	}
	for _, t := range ts {
		w("container_memory_working_set_bytes", old, 99e6, t)
	}
	for _, m := range []struct {
		name string
		v    float64
	}{{"container_spec_cpu_quota", 200000}, {"container_spec_cpu_period", 100000}, {"container_spec_memory_limit_bytes", 512 << 20}} {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", m.name)
		for _, p := range proxies {
			cl := fmt.Sprintf(`%s,name="proxybench-%s",service="%s",image="proxybench/%s:test",id="/docker/%s"`, ex, p, p, p, p)
			for _, t := range ts {
				w(m.name, cl, m.v, t)
			}
		}
	}
	b.WriteString("# TYPE proxybench_proxy_info gauge\n")
	for _, p := range proxies {
		for _, t := range ts {
			w("proxybench_proxy_info", fmt.Sprintf(`%s,container="proxybench-%s",service="%s",image="proxybench/%s:test",image_id="sha256:%s",version="%s-1.0.0"`, ex, p, p, p, p, p), 1, t)
		}
	}
	r.gcSeries(&b, ts, ex, w)
	b.WriteString("# EOF\n")
	return []byte(b.String())
}
