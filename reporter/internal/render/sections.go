package render

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/stack"
	"proxybench/reporter/internal/report"
)

// Document turns a report into its document: the sections every output renders.
func Document(r *report.Report) Doc {
	d := Doc{Title: "proxybench report: run " + r.Run}
	s := r.Summary
	d.Lead = append(d.Lead, fmt.Sprintf("%d cells, %s to %s UTC: **%d valid, %d suspect, %d invalid**. SLO (%s): %s.",
		s.Cells, r.Start.Format("2006-01-02 15:04:05"), r.End.Format("15:04:05"), s.Valid, s.Suspect, s.Invalid, r.SLO, sloLine(r)))
	d.Lead = append(d.Lead, leadSources(r))
	if l := floorLead(r); l != "" {
		d.Lead = append(d.Lead, l)
	}
	d.Lead = append(d.Lead, "How to read: each cell is one proxy × origin × scenario × tier × repeat, measured over its own window. "+
		"The winner of a cell is the proxy with the lowest p99 latency among trustworthy (valid or suspect) cells of the same origin, scenario and tier. "+
		"Only trust a result whose verdict is ✓ valid; ⚠ suspect means read the reason in section 5; ✗ invalid cells are shown but their numbers do not measure the proxy.")
	d.Lead = append(d.Lead, r.Notes...)
	d.Sections = append(d.Sections, summarySection(r), matrixSection(r), resourceSection(r), gcSection(r), validitySection(r), envSection(r), noiseSection(r))
	if sec, ok := scenarioSection(r); ok {
		d.Sections = append(d.Sections, sec)
	}
	if sec, ok := proxyTaxSection(r); ok {
		d.Sections = append(d.Sections, sec)
	}
	return d
}

func sloLine(r *report.Report) string {
	if !r.SLO.Enabled() {
		return "none set"
	}
	if r.Summary.SLOFailed == 0 {
		return "all cells pass"
	}
	return fmt.Sprintf("**%d of %d cells fail**", r.Summary.SLOFailed, r.Summary.Cells)
}

func leadSources(r *report.Report) string {
	src := fmt.Sprintf("Numbers from Prometheus %s at %s", r.Sources.PrometheusVersion, r.Sources.Prometheus)
	if !r.Sources.PrometheusOK {
		src = "Prometheus was unreachable; numbers from the local manifest only"
	}
	lat := "latency percentiles are Prometheus histogram estimates (marked ≈; a native-histogram estimate lies in the bucket of the true value, at most 9.05 % above or 8.3 % below it)"
	if r.Sources.Manifest {
		lat += "; the columns marked *exact* come from the loadgen's HdrHistogram (3 significant figures) in manifest.json"
	} else {
		lat += "; no manifest.json was found, so no exact percentiles"
	}
	return src + " (cells discovered from " + r.Sources.Discovery + "); " + lat + "."
}

// sortedCells orders cells for reading: scenario, tier, origin, proxy, repeat.
func sortedCells(r *report.Report) []*report.Cell {
	out := make([]*report.Cell, len(r.Cells))
	for i := range r.Cells {
		out[i] = &r.Cells[i]
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		for _, p := range [][2]string{{a.Scenario, b.Scenario}, {a.Tier, b.Tier}, {a.Origin, b.Origin}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		if a.Proxy != b.Proxy {
			return proxyOrder(a.Proxy) < proxyOrder(b.Proxy)
		}
		return a.Repeat < b.Repeat
	})
	return out
}

func proxyOrder(p string) int {
	for i, x := range stack.Proxies {
		if x.Name == p {
			return i
		}
	}
	return len(stack.Proxies)
}

// cellName names a cell for a reader, with its arm when it is not the
// plan's own (aa for the A/A control, candidate, unobserved).
func cellName(c *report.Cell) string {
	if c.Arm != "" {
		return fmt.Sprintf("%s → %s (%s, %s, %s, r%d)", c.Proxy, c.Origin, c.Scenario, c.Tier, c.Arm, c.Repeat)
	}
	return fmt.Sprintf("%s → %s (%s, %s, r%d)", c.Proxy, c.Origin, c.Scenario, c.Tier, c.Repeat)
}

func p99Exact(c *report.Cell) string {
	if c.Latency.Exact == nil {
		return "–"
	}
	return fmtMs(c.Latency.Exact.P99)
}

func sloCell(c *report.Cell) Cell {
	if len(c.SLO) == 0 {
		return txt("–")
	}
	if c.SLOPassed() {
		return Cell{Text: "pass", Class: "pass"}
	}
	var failed []string
	for _, s := range c.SLO {
		if !s.Pass {
			failed = append(failed, s.Name)
		}
	}
	return Cell{Text: "FAIL " + strings.Join(failed, ", "), Class: "fail"}
}

func summarySection(r *report.Report) Section {
	t := Table{Header: []string{"cell", "verdict", "goodput req/s", "all req/s", "late", "p50 ≈ms", "p99 ≈ms", "p99 exact ms", "errors", "429", "proxy CPU cores", "mem peak", "GC cycles", "GC p99 STW", "SLO"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true, true, true, true, true, false}}
	best := winners(r)
	for _, c := range sortedCells(r) {
		gcCycles, gcP99 := "n/a (C)", "n/a (C)"
		if c.GC != nil {
			gcCycles, gcP99 = fmtNum(c.GC.Cycles, 0), fmtDur(c.GC.PauseP99)
		} else if c.Proxy == "custom" {
			gcCycles, gcP99 = "–", "–"
		}
		name := Cell{Text: cellName(c), Best: best[c.ID]}
		t.Rows = append(t.Rows, []Cell{name, verdictCell(c.Validity.Verdict), txt(fmtGoodput(c.GoodputRPS, c.LabBound())), txt(fmtNum(c.RPS, 0)), txt(fmtLate(c)), txt(fmtMs(c.Latency.P50)),
			Cell{Text: fmtMs(c.Latency.P99), Best: best[c.ID]}, txt(p99Exact(c)), txt(fmtPct(c.ErrorRatio)), txt(fmtPct(c.RateLimitedRatio)),
			txt(fmtNum(c.ProxyRes.CPUMeanCores, 2)), txt(fmtMB(c.ProxyRes.MemPeakBytes)), txt(gcCycles), txt(gcP99), sloCell(c)})
	}
	t.Notes = []string{"**Bold** marks the winner (lowest p99 among trustworthy repeats) of each origin × scenario × tier. " +
		"Goodput counts the responses with a status the scenario expects, all req/s every response with a status, both completed inside the planned window, over its duration. " +
		"Late = requests that completed after the planned end (drained, not counted in the rates; their latencies are in the percentiles), with their share of all completions: a large share means the proxy or the loadgen stalled. " +
		"≈ columns are Prometheus histogram estimates; errors = transport errors + 5xx, over all attempts (the recording rules count the same); 4xx are counted by class and 429s apart."}
	if n := bottleneckNote(r); n != "" {
		t.Notes = append(t.Notes, n)
	}
	return Section{Title: "1. Summary", Tables: []Table{winnerTable(r), t}, Lead: 1, Figures: []string{FigLatency, FigRPS}}
}

func resourceSection(r *report.Report) Section {
	sec := Section{Title: "3. Resources over time", Figures: []string{FigResources}}
	soak := false
	for _, c := range r.Cells {
		if c.Tier == "soak" {
			soak = true
		}
	}
	if soak {
		sec.Text = append(sec.Text, "Soak cells: a steady positive memory slope over 300 s suggests a leak; compare it with the live-heap slope of Go proxies.")
	} else {
		sec.Text = append(sec.Text, "No soak cell in this run; slopes over short windows are noisy and only hint at trends.")
	}
	t := Table{Header: []string{"cell", "CPU mean", "CPU peak", "mem mean", "mem peak", "mem slope MB/min", "loadgen CPU mean / peak / capacity", "loadgen throttled", "loadgen run delay"},
		Right: []bool{false, true, true, true, true, true, true, true, true}}
	for _, c := range sortedCells(r) {
		l := c.LoadgenCPU
		lg := fmtNum(l.MeanCores, 2) + " / " + fmtNum(l.PeakCores, 2) + " / " + fmtNum(l.LimitCores, 2)
		cpu := fmtNum(c.ProxyRes.CPUMeanCores, 2)
		if c.ProxyRes.CPUSource == report.ProxyCPUEdges {
			cpu += " (edges)"
		}
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), txt(cpu), txt(fmtNum(c.ProxyRes.CPUPeakCores, 2)),
			txt(fmtMB(c.ProxyRes.MemMeanBytes)), txt(fmtMB(c.ProxyRes.MemPeakBytes)), txt(fmtNum(c.ProxyRes.MemSlopeMBPerMin, 2)), txt(lg),
			txt(fmtPct(l.ThrottledShare)), txt(fmtPct(l.RunDelayShare))})
	}
	t.Notes = []string{"CPU in cores of the proxy container: the mean from its cgroup's usage counter read at the window's edges when the loadgen could (marked edges), else cAdvisor's increase; peak is the highest per-scrape rate (cAdvisor). Memory is the working set; the slope is an OLS fit over the window. " +
		"Loadgen capacity = min(cgroup quota, CPUs in its affinity mask, GOMAXPROCS); throttled = throttled CFS periods / periods of its cgroup; run delay = time its threads waited for a CPU / (duration × capacity)."}
	sec.Tables = append(sec.Tables, t)
	it := Table{Header: []string{"cell", "loadgen RSS", "loadgen slope MB/min", "exporter RSS", "exporter slope MB/min"},
		Right: []bool{false, true, true, true, true}}
	for _, c := range sortedCells(r) {
		m := c.Instrument
		it.Rows = append(it.Rows, []Cell{txt(cellName(c)), txt(fmtMB(m.LoadgenRSSMeanBytes)), txt(fmtNum(m.LoadgenRSSSlopeMBPerMin, 2)),
			txt(fmtMB(m.ExporterRSSMeanBytes)), txt(fmtNum(m.ExporterRSSSlopeMBPerMin, 2))})
	}
	it.Notes = []string{"The instruments' own resident memory (process_resident_memory_bytes): flat slopes (well under 0.5 MB/min over a soak) mean the loadgen and the exporter neither leak nor grow with the run."}
	sec.Tables = append(sec.Tables, it)
	return sec
}

func gcSection(r *report.Report) Section {
	sec := Section{Title: "4. Go GC differential", Figures: []string{FigGC}}
	t := Table{Header: []string{"proxy", "origin", "scenario/tier", "duration", "GC cycles", "cycles/s", "GC CPU %", "GC share of proxy CPU", "p50 STW", "p99 STW", "max STW", "live heap", "heap slope MB/min"},
		Right: []bool{false, false, false, true, true, true, true, true, true, true, true, true, true}}
	var goCells []*report.Cell
	for _, c := range sortedCells(r) {
		if c.GC != nil {
			goCells = append(goCells, c)
		}
	}
	if len(goCells) == 0 {
		sec.Text = append(sec.Text, "No Go proxy in this run.")
		sec.Figures = nil
		return sec
	}
	for _, c := range goCells {
		g := c.GC
		name := Cell{Text: c.Proxy}
		if c.Validity.Verdict == report.Invalid {
			name = Cell{Text: c.Proxy + " ✗", Class: "invalid"}
		}
		t.Rows = append(t.Rows, []Cell{name, txt(c.Origin), txt(fmt.Sprintf("%s/%s r%d", c.Scenario, c.Tier, c.Repeat)),
			txt(fmtNum(c.DurationS, 0) + " s"), txt(fmtNum(g.Cycles, 0)), txt(fmtNum(g.CyclesPerS, 2)),
			txt(fmtNum(g.CPUPercent, 1)), txt(fmtNum(g.ShareOfProxyCPU, 1) + " %"), txt(fmtDur(g.PauseP50)), txt(fmtDur(g.PauseP99)),
			txt(fmtDur(g.PauseMax)), txt(fmtMB(g.LiveHeapMeanBytes)), txt(fmtNum(g.LiveHeapSlope, 2))})
	}
	t.Notes = []string{"From the proxies' gctrace: STW = sweep termination + mark termination (wall clock), percentiles are histogram estimates, max is the upper bound of the highest bucket. GC CPU % is GC CPU seconds over duration × GOMAXPROCS; GC CPU is what GC took from the program (sweep and mark termination, mark assists, background mark workers), without the idle mark workers, which run only on processors that had nothing else to do (report.json's `idle_mark_cpu_seconds`). nginx and HAProxy are C programs without a GC."}
	sec.Tables = append(sec.Tables, t)
	if tt, ok := gcTailTable(goCells); ok {
		sec.Tables = append(sec.Tables, tt)
	}
	sec.Text = append(sec.Text, gcTakeaways(goCells)...)
	return sec
}

// gcTakeaways compares Go proxies on the same origin, scenario and tier.
func gcTakeaways(cells []*report.Cell) []string {
	type key struct{ o, s, t string }
	by := map[key]map[string][]float64{}
	var keys []key
	for _, c := range cells {
		if c.Validity.Verdict == report.Invalid || !c.GC.CyclesPerS.Known() {
			continue
		}
		k := key{c.Origin, c.Scenario, c.Tier}
		if by[k] == nil {
			by[k] = map[string][]float64{}
			keys = append(keys, k)
		}
		by[k][c.Proxy] = append(by[k][c.Proxy], float64(c.GC.CyclesPerS))
	}
	var out []string
	for _, k := range keys {
		m := by[k]
		if len(m) < 2 {
			continue
		}
		var names []string
		for p := range m {
			names = append(names, p)
		}
		sort.Strings(names)
		lo, hi := names[0], names[0]
		for _, p := range names {
			if mean(m[p]) < mean(m[lo]) {
				lo = p
			}
			if mean(m[p]) > mean(m[hi]) {
				hi = p
			}
		}
		if lo == hi || mean(m[lo]) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("On %s (%s, %s): %s ran %.1f× fewer GC cycles per second than %s (%.2f vs %.2f /s).",
			k.o, k.s, k.t, lo, mean(m[hi])/mean(m[lo]), hi, mean(m[lo]), mean(m[hi])))
	}
	return out
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func validitySection(r *report.Report) Section {
	sec := Section{Title: "5. Validity"}
	th, pct := r.Thresholds, report.Pct
	sec.Text = append(sec.Text, fmt.Sprintf("Checks: loadgen-bound (invalid) when the loadgen's CPU mean ≥ %s or its 1-s peak ≥ %s of its capacity, its cgroup was throttled in > %s of periods, the open loop sent < %s of the requests it scheduled or missed > %s of its sends; "+
		"loadgen-bound (suspect) when its run delay > %s of capacity, CPU pressure > %s or the open-loop send lag p99 > %s ms; "+
		"SUT saturated (suspect) when > %s of open-loop sends waited for max in flight; error ratio > %s; statuses the scenario does not expect (5xx apart) > %s of responses (unexpected status); "+
		"one unexpected status ≥ %s of responses or a wrong X-Origin (misrouted); fewer than %d attempts or %d scrapes; in-window rate × mean latency vs measured in-flight beyond %s (Little's law); missing series; "+
		"contended (suspect) when the loadgen, the proxy or the origin was starved: ≥ %s of its CPUs' time went to other processes while its threads waited ≥ %g s per s for a CPU (or its own cgroup's CPU pressure ≥ %s), the hypervisor stole ≥ %s of it, or the origin's CPU quota throttled it ≥ %g s per s.",
		pct(th.LoadgenCPUFraction), pct(th.LoadgenCPUPeakFraction), pct(th.LoadgenThrottledShare), pct(th.OpenLoopAchieved), pct(th.OpenLoopMissed),
		pct(th.LoadgenRunDelayShare), pct(th.LoadgenPressureShare), fmt.Sprintf("%g", th.OpenLoopLagP99*1e3),
		pct(th.CappedShare), pct(th.ErrorRatio), pct(th.UnexpectedStatus), pct(th.MisroutedShare), th.MinRequests, th.MinScrapes, pct(th.LittleTolerance),
		pct(th.ForeignShare), th.RunDelayPerS, pct(th.PressureShare), pct(th.StealShare), th.ThrottledPerS))
	t := Table{Header: []string{"cell", "verdict", "reasons"}}
	for _, c := range sortedCells(r) {
		if len(c.Validity.Flags) == 0 {
			continue
		}
		var rs []string
		for _, f := range c.Validity.Flags {
			rs = append(rs, fmt.Sprintf("%s: %s", f.Code, f.Reason))
		}
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), verdictCell(c.Validity.Verdict), txt(strings.Join(rs, "; "))})
	}
	if len(t.Rows) == 0 {
		sec.Text = append(sec.Text, fmt.Sprintf("All %d cells passed every check.", len(r.Cells)))
	} else {
		sec.Tables = append(sec.Tables, t)
	}
	if len(r.NotRun) > 0 {
		nr := Table{Caption: "Planned but not run", Header: []string{"cell", "why"}}
		for _, n := range r.NotRun {
			nr.Rows = append(nr.Rows, []Cell{txt(n.ID), txt(n.Reason)})
		}
		sec.Tables = append(sec.Tables, nr)
	}
	if len(r.Cells) > 0 {
		sec.Tables = append(sec.Tables, timelineTable(r))
	}
	return sec
}

// timelineTable shows when each window ran, in run order: the warm-up kept
// out of it and the quiet time before it (settle between cells, cooldown
// between proxies), so a reader can check both.
func timelineTable(r *report.Report) Table {
	cells := make([]*report.Cell, 0, len(r.Cells))
	for i := range r.Cells {
		cells = append(cells, &r.Cells[i])
	}
	sort.SliceStable(cells, func(i, j int) bool { return cells[i].Start.Before(cells[j].Start) })
	t := Table{Caption: "Timeline (UTC)", Header: []string{"cell", "traffic from", "window", "warm-up excluded", "quiet before"},
		Right: []bool{false, false, false, true, true}}
	var prevEnd time.Time
	for _, c := range cells {
		from, warm, quiet := c.Start, "none", "–"
		if c.WarmupStart != nil {
			from = *c.WarmupStart
			warm = fmt.Sprintf("%.1f s", c.Start.Sub(from).Seconds())
		}
		if !prevEnd.IsZero() {
			quiet = fmt.Sprintf("%.1f s", from.Sub(prevEnd).Seconds())
		}
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), txt(from.UTC().Format("15:04:05.0")),
			txt(c.Start.UTC().Format("15:04:05.0") + " – " + c.End.UTC().Format("15:04:05.0")), txt(warm), txt(quiet)})
		prevEnd = c.End
	}
	t.Notes = []string{"Warm-up excluded = window start − first warm-up request (5 s of traffic, then the settle gap so Prometheus separates the two exactly). Quiet before = time without traffic since the previous window: the settle between cells, the cooldown (10 s) between proxies in runs of 30 s cells or longer."}
	return t
}

func envSection(r *report.Report) Section {
	sec := Section{Title: "6. Environment"}
	t := Table{Caption: "Proxies (versions from the running binaries) and parity", Header: []string{"proxy", "version", "image", "CPU limit", "memory limit", "workers"},
		Right: []bool{false, false, false, true, true, false}}
	for _, p := range r.Environment.Proxies {
		v := p.Version
		if v == "" {
			v = "unknown"
		}
		cpu := "none"
		if p.CPULimitCores.Known() {
			cpu = fmtNum(p.CPULimitCores, 2) + " cores"
		}
		mem := "none"
		if p.MemLimitBytes.Known() {
			mem = fmt.Sprintf("%.0f MiB", float64(p.MemLimitBytes)/(1<<20))
		}
		t.Rows = append(t.Rows, []Cell{txt(p.Proxy), txt(v), txt(p.Image), txt(cpu), txt(mem), txt(p.Workers)})
	}
	t.Notes = []string{"Parity: every proxy on the same CPUs (placement below) with the same CPU limit and as many workers as it; the settings each running proxy reported are in the parity table below (docs/parity.md explains them)."}
	sec.Tables = append(sec.Tables, t)
	if p := r.Environment.Parity; p != nil {
		pt, warnings := parityTable(p)
		sec.Tables = append(sec.Tables, pt)
		sec.Text = append(sec.Text, warnings...)
	}
	sec.Tables = append(sec.Tables, placementTables(r.Environment.Placement)...)
	sec.Tables = append(sec.Tables, isolationTable(r.Environment.Isolation))
	if ct, ok := ceilingTable(r.Environment); ok {
		sec.Tables = append(sec.Tables, ct)
	}
	h := Table{Caption: "Host", Header: []string{"what", "value"}}
	var ks []string
	for k := range r.Environment.Host {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		h.Rows = append(h.Rows, []Cell{txt(k), txt(r.Environment.Host[k])})
	}
	h.Rows = append(h.Rows, []Cell{txt("report schema"), txt(r.Schema)})
	sec.Tables = append(sec.Tables, h)
	return sec
}

// fmtLate is a cell's late completions and their share, "0" when none.
func fmtLate(c *report.Cell) string {
	if c.Late == 0 {
		return "0"
	}
	return fmtInt(c.Late) + " (" + fmtPct(c.LateShare) + ")"
}

// ceilingTable states the instrument's own ceilings the cells were held
// to: the loadgen against a trivial server under the same placement.
func ceilingTable(env report.Environment) (Table, bool) {
	t := Table{Caption: "The instrument's ceiling (the loadgen against a trivial server on the proxy's CPUs; a claim at 80 % of it or more is invalid)",
		Header: []string{"loop", "req/s", "windows", "connections", "engine", "source", "measured at"},
		Right:  []bool{false, true, false, true, false, false, false}}
	for _, c := range []*manifest.Ceiling{env.Ceiling, env.OpenCeiling} {
		if c == nil {
			continue
		}
		loop := c.Model
		if loop == "" {
			loop = manifest.CeilingClosed
		}
		if c.Error != "" {
			t.Rows = append(t.Rows, []Cell{txt(loop), txt("not measured: " + c.Error), txt(""), txt(""), txt(""), txt(""), txt("")})
			continue
		}
		var ws []string
		for _, w := range c.WindowRPS {
			ws = append(ws, fmt.Sprintf("%.0f", w))
		}
		t.Rows = append(t.Rows, []Cell{txt(loop), txt(fmt.Sprintf("%.0f", c.RPS)), txt(strings.Join(ws, ", ")), txt(fmt.Sprint(c.Concurrency)),
			txt(c.Engine), txt(c.Source), txt(c.MeasuredAt.UTC().Format("2006-01-02 15:04:05"))})
	}
	return t, len(t.Rows) > 0
}

// bottleneckNote says who limited the closed-loop cells: the proxy (its
// goodput is its capacity) or the lab (a lower bound, shown "≥ N").
func bottleneckNote(r *report.Report) string {
	var proxy, lab []string
	for _, c := range sortedCells(r) {
		switch c.Bottleneck.Who {
		case report.BottleneckProxy:
			proxy = append(proxy, cellName(c))
		case report.BottleneckLab:
			lab = append(lab, cellName(c)+" ("+c.Bottleneck.Reason+")")
		}
	}
	if len(proxy)+len(lab) == 0 {
		return ""
	}
	out := fmt.Sprintf("Who limited each closed-loop cell (its CPUs %.0f %% busy or more): ", 100*report.BusyShareSaturated)
	if len(proxy) > 0 {
		out += "the proxy, so the goodput is its capacity: " + strings.Join(proxy, ", ") + ". "
	}
	if len(lab) > 0 {
		out += "The lab, so the goodput is a lower bound (≥) and wins nothing: " + strings.Join(lab, "; ") + "."
	}
	return out
}
