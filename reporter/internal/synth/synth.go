// Package synth owns synthetic proxybench runs for tests and benchmarks: it
// writes the series a real run leaves in Prometheus (loadgen, exporter,
// cAdvisor; named and typed by the rows of internal/metricdefs) as
// OpenMetrics text with timestamps, for promtool to backfill, and keeps the
// exact truth every reported number must match; and runs of judged report
// cells with noise of a chosen size, interleaved as the lab measures them
// (Noisy: the A/A control, the duet's and the observer's arms), for the
// noise floor and diff.
package synth

import (
	"math"
	"sort"
	"time"

	"proxybench/internal/cellid"
)

// Buckets of the classic latency, open-loop lag and GC pause histograms (seconds).
var (
	LatencyBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}
	LagBuckets     = []float64{0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05}
	PauseBuckets   = []float64{1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3}
)

// Cell is one synthetic cell and its truth.
type Cell struct {
	cellid.Key                // Scenario is simple
	Start, End      time.Time // the planned window
	Concurrency     int
	Codes           map[string]int64 // exact in-window responses by status
	Reasons         map[string]int64 // exact in-window transport errors by reason
	LateCodes       map[string]int64 // responses completed after End, by status
	DrainEnd        time.Time        // when the last late response completed; zero: none
	Latencies       []float64        // every observation (late ones too), sorted
	InFlight        float64          // gauge value during the window
	WrongOrigin     int64
	ProxyCPU        float64 // cores, constant over the proxy's block (cAdvisor)
	ProxyCPUEdgeS   float64 // proxybench_cell_proxy_cpu_seconds; 0: not published
	MemStartMB      float64 // working set at start
	MemSlopeMBPerS  float64
	LoadgenCPU      float64   // cores during the cell
	LoadgenSpike    float64   // cores during one scrape interval mid-window; 0: none
	LoadgenCPUEdgeS float64   // proxybench_cell_loadgen_cpu_seconds; 0: not published
	LoadgenLimit    float64   // proxybench_loadgen_cpu_limit_cores (capacity)
	ThrottledShare  float64   // throttled CFS periods / periods (10 periods/s)
	RunDelayPerS    float64   // loadgen run delay, seconds per second
	TargetRate      float64   // open loop: offered req/s; 0 closed loop
	Scheduled, Sent int64     // open loop
	Missed, Capped  int64     // open loop
	Queued          int64     // open loop: sent after the window's end
	Lags            []float64 // open loop: send lag observations, sorted
	GCCyclesPerS    int       // Go proxies only
	GCCPUPerS       float64
	HeapMB          float64
	HeapSlopeMBPerS float64
	Pauses          []float64 // sorted
	Go              bool
	// Flags are the validity flag codes the report must give the cell, in
	// the order validity.go checks them, and Verdict its verdict.
	Flags   []string
	Verdict string
}

// InWindow is the cell's in-window responses with a status.
func (c *Cell) InWindow() int64 { return sum(c.Codes) }

// Late is the cell's late completions.
func (c *Cell) Late() int64 { return sum(c.LateCodes) }

// Duration is the planned window's length in seconds.
func (c *Cell) Duration() float64 { return c.End.Sub(c.Start).Seconds() }

// LoadgenMean is the loadgen's true mean CPU over the window, in cores.
func (c *Cell) LoadgenMean() float64 {
	if c.LoadgenCPUEdgeS > 0 {
		return c.LoadgenCPUEdgeS / c.Duration()
	}
	if c.LoadgenSpike > 0 {
		return (c.LoadgenCPU*(c.Duration()-1) + c.LoadgenSpike) / c.Duration()
	}
	return c.LoadgenCPU
}

// ProxyCPUMean is the proxy's true mean CPU over the window, in cores.
func (c *Cell) ProxyCPUMean() float64 {
	if c.ProxyCPUEdgeS > 0 {
		return c.ProxyCPUEdgeS / c.Duration()
	}
	return c.ProxyCPU
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// Run is a synthetic run.
type Run struct {
	ID    string
	Start time.Time
	Cells []Cell
	// Outages are stretches Prometheus did not scrape (outage.go).
	Outages []Outage
}

// SetCodes gives c other in-window responses, with latencies spread from
// base (seconds) and the in-flight gauge that fits them (Little's law).
func (c *Cell) SetCodes(codes map[string]int64, base float64) {
	c.Codes = codes
	c.latencies(base)
}

// Options shape a run.
type Options struct {
	ID        string
	Start     time.Time // whole second; windows start at +0.5 s phase
	Proxies   []string
	Origins   []string
	Repeats   int
	DurationS int
	// FlagCells adds, after the proxies' blocks, one nginx cell per validity
	// signal (tier "flags", origin naming the case) and quiet controls.
	FlagCells bool
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
				c := Cell{Key: cellid.New(p, org, "simple", "quick", rep),
					Start: t, End: t.Add(time.Duration(o.DurationS) * time.Second), Concurrency: 10, Go: goProxy[p], LoadgenLimit: 2}
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
				// Latencies: a deterministic spread, scaled per proxy and origin.
				c.latencies(0.0008 * float64(1+pi) * float64(1+len(org)%3))
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
				// 429 is not an expected status of the simple scenario; 5xx
				// are failures, judged by the error ratio alone.
				c.Flags = map[int][]string{4: {"misrouted"}, 5: {"littles_law"}, 6: {"loadgen_bound"}, 7: {"misrouted"}}[i]
				if i == 8 {
					c.Flags = []string{"errors"}
				}
				if i%6 == 2 {
					c.Flags = append(c.Flags, "unexpected_status")
				}
				c.Verdict = "invalid"
				switch {
				case len(c.Flags) == 0:
					c.Verdict = "valid"
				case i == 5:
					c.Verdict = "suspect"
				}
				r.Cells = append(r.Cells, c)
				t = c.End.Add(4 * time.Second)
				i++
			}
		}
		// Proxies of one run are visited one after the other.
		t = t.Add(3 * time.Second)
	}
	if o.FlagCells {
		r.flagCells(t, o.DurationS)
	}
	return r
}

// latencies fills a deterministic spread of observations from base for
// every response (late ones too) and the in-flight gauge that satisfies
// Little's law with the in-window rate.
func (c *Cell) latencies(base float64) {
	total := c.InWindow() + c.Late()
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
	c.InFlight = float64(c.InWindow()) / c.Duration() * mean
}

// flagCells appends one cell per validity signal, each with its truth,
// starting at t.
func (r *Run) flagCells(t time.Time, durS int) {
	d := time.Duration(durS) * time.Second
	open := func(c *Cell, rate float64, lagBase float64) {
		c.TargetRate = rate
		c.Scheduled = int64(rate * float64(durS))
		c.Sent = c.Scheduled - c.Missed
		n := 1000
		c.Lags = make([]float64, n)
		for k := range c.Lags {
			c.Lags[k] = lagBase * (1 + float64(k)/float64(n))
		}
	}
	cases := []struct {
		origin  string
		flags   []string
		verdict string
		mut     func(*Cell)
	}{
		{"unexpected-404", []string{"unexpected_status"}, "invalid", func(c *Cell) { c.Codes = map[string]int64{"200": 7280, "404": 3120} }},
		{"unexpected-control", nil, "valid", func(c *Cell) { c.Codes = map[string]int64{"200": 9995, "404": 5} }},
		{"loadgen-capacity", []string{"loadgen_bound", "loadgen_bound"}, "invalid", func(c *Cell) { c.LoadgenLimit, c.LoadgenCPU = 0.15, 0.15 }},
		{"loadgen-spike", []string{"loadgen_bound"}, "invalid", func(c *Cell) { c.LoadgenLimit, c.LoadgenCPU, c.LoadgenSpike = 1, 0.5, 1 }},
		{"loadgen-throttled", []string{"loadgen_bound"}, "invalid", func(c *Cell) { c.ThrottledShare = 0.2 }},
		{"loadgen-run-delay", []string{"loadgen_bound"}, "suspect", func(c *Cell) { c.RunDelayPerS = 0.3 }},
		{"open-loop-ok", nil, "valid", func(c *Cell) { c.Codes = map[string]int64{"200": 10000}; open(c, 2000, 0.0002) }},
		// Capped: the proxy held the sends back, so the rate fell short
		// without the loadgen being the ceiling.
		{"open-loop-capped", []string{"sut_saturated"}, "suspect", func(c *Cell) {
			c.Codes = map[string]int64{"200": 9000}
			open(c, 2000, 0.0002)
			c.Capped = 600
		}},
		// Saturated: more than 1 % of the sends still queued at the window's
		// end (sent after it): the offered rate was not offered.
		{"open-loop-queued", []string{"sut_saturated"}, "invalid", func(c *Cell) {
			c.Codes, c.LateCodes, c.DrainEnd = map[string]int64{"200": 9000}, map[string]int64{"200": 1000}, c.End.Add(time.Second)
			open(c, 2000, 0.0002)
			c.Capped, c.Queued = 1500, 1000
		}},
		// A few queued at the end: the latency has them, from their
		// intended time; suspect for the capped sends only.
		{"open-loop-queued-few", []string{"sut_saturated"}, "suspect", func(c *Cell) {
			c.Codes, c.LateCodes, c.DrainEnd = map[string]int64{"200": 9950}, map[string]int64{"200": 50}, c.End.Add(time.Second)
			open(c, 2000, 0.0002)
			c.Capped, c.Queued = 600, 50
		}},
		{"open-loop-missed", []string{"loadgen_bound"}, "invalid", func(c *Cell) {
			c.Codes, c.Missed = map[string]int64{"200": 9700}, 300
			open(c, 2000, 0.0002)
		}},
		{"open-loop-lag", []string{"loadgen_bound"}, "suspect", func(c *Cell) { c.Codes = map[string]int64{"200": 10000}; open(c, 2000, 0.015) }},
		// A stall at the end: 60 requests complete 2 s after the planned end.
		{"late-stall", nil, "valid", func(c *Cell) {
			c.Codes, c.LateCodes, c.DrainEnd = map[string]int64{"200": 4000}, map[string]int64{"200": 60}, c.End.Add(2*time.Second)
		}},
		{"cpu-edges", nil, "valid", func(c *Cell) { c.ProxyCPUEdgeS, c.LoadgenCPUEdgeS = 1.234, 2.1 }},
	}
	for _, k := range cases {
		c := Cell{Key: cellid.New("nginx", k.origin, "simple", "flags", 1),
			Start: t, End: t.Add(d), Concurrency: 10, Codes: map[string]int64{"200": 5000}, Reasons: map[string]int64{},
			ProxyCPU: r.proxyCPU("nginx"), MemStartMB: 30, MemSlopeMBPerS: 0.01, LoadgenCPU: 0.4, LoadgenLimit: 2,
			Flags: k.flags, Verdict: k.verdict}
		k.mut(&c)
		c.latencies(0.001)
		r.Cells = append(r.Cells, c)
		t = c.End.Add(4 * time.Second)
		if !c.DrainEnd.IsZero() {
			t = c.DrainEnd.Add(4 * time.Second)
		}
	}
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
func frac(c *Cell, t time.Time) float64 { return between(c.Start, c.End, t) }

// lateFrac is the share of the late completions done at t.
func lateFrac(c *Cell, t time.Time) float64 {
	if c.DrainEnd.IsZero() {
		return 0
	}
	return between(c.End, c.DrainEnd, t)
}

// obsFrac is the share of the histogram observations made at t: they
// arrive evenly from the start to the end of the drain.
func obsFrac(c *Cell, t time.Time) float64 {
	if c.DrainEnd.IsZero() {
		return frac(c, t)
	}
	return between(c.Start, c.DrainEnd, t)
}

func between(from, to, t time.Time) float64 {
	x := t.Sub(from).Seconds() / to.Sub(from).Seconds()
	return math.Max(0, math.Min(1, x))
}

// active is the cell whose loadgen activity ([start-1s, end+1s)) holds t.
func (r *Run) active(t time.Time) *Cell {
	for i := range r.Cells {
		c := &r.Cells[i]
		if !t.Before(c.Start.Add(-time.Second)) && t.Before(c.End.Add(time.Second)) {
			return c
		}
	}
	return nil
}
