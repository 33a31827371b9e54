package render

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"proxybench/internal/stack"
	"proxybench/reporter/internal/report"
)

// Build turns a report into its document.
func Build(r *report.Report) Doc {
	d := Doc{Title: "proxybench report: run " + r.Run}
	s := r.Summary
	d.Lead = append(d.Lead, fmt.Sprintf("%d cells, %s to %s UTC: **%d valid, %d suspect, %d invalid**. SLO (%s): %s.",
		s.Cells, r.Start.Format("2006-01-02 15:04:05"), r.End.Format("15:04:05"), s.Valid, s.Suspect, s.Invalid, r.SLO, sloLine(r)))
	d.Lead = append(d.Lead, leadSources(r))
	d.Lead = append(d.Lead, "How to read: each cell is one proxy × origin × scenario × tier × repeat, measured over its own window. "+
		"The winner of a cell is the proxy with the lowest p99 latency among trustworthy (valid or suspect) cells of the same origin, scenario and tier. "+
		"Only trust a result whose verdict is ✓ valid; ⚠ suspect means read the reason in section 5; ✗ invalid cells are shown but their numbers do not measure the proxy.")
	d.Lead = append(d.Lead, r.Notes...)
	d.Sections = append(d.Sections, summarySection(r), matrixSection(r), resourceSection(r), gcSection(r), validitySection(r), envSection(r))
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
	lat := "latency percentiles are Prometheus histogram estimates (marked ≈; native buckets are within about 4.5 % of the true value)"
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

func cellName(c *report.Cell) string {
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
	t := Table{Header: []string{"cell", "verdict", "req/s", "p50 ≈ms", "p99 ≈ms", "p99 exact ms", "errors", "429", "proxy CPU cores", "mem peak", "GC cycles", "GC p99 STW", "SLO"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true, true, true, false}}
	best := winners(r)
	for _, c := range sortedCells(r) {
		gcCycles, gcP99 := "n/a (C)", "n/a (C)"
		if c.GC != nil {
			gcCycles, gcP99 = fmtNum(c.GC.Cycles, 0), fmtDur(c.GC.PauseP99)
		} else if c.Proxy == "custom" {
			gcCycles, gcP99 = "–", "–"
		}
		name := Cell{Text: cellName(c), Best: best[c.ID]}
		t.Rows = append(t.Rows, []Cell{name, verdictCell(c.Validity.Verdict), txt(fmtNum(c.RPS, 0)), txt(fmtMs(c.Latency.P50)),
			Cell{Text: fmtMs(c.Latency.P99), Best: best[c.ID]}, txt(p99Exact(c)), txt(fmtPct(c.ErrorRatio)), txt(fmtPct(c.RateLimitedRatio)),
			txt(fmtNum(c.ProxyRes.CPUMeanCores, 2)), txt(fmtMB(c.ProxyRes.MemPeakBytes)), txt(gcCycles), txt(gcP99), sloCell(c)})
	}
	t.Notes = []string{"**Bold** marks the winner (lowest p99 among trustworthy repeats) of each origin × scenario × tier. " +
		"≈ columns are Prometheus histogram estimates; errors = transport errors + 5xx + 4xx other than 429, over all attempts; 429 responses are counted apart."}
	return Section{Title: "1. Summary", Tables: []Table{winnerTable(r), t}, Lead: 1, Figures: []string{FigLatency, FigRPS}}
}

// winnerTable answers the reader's first two questions per origin, scenario
// and tier: which proxy won, and should I believe it.
func winnerTable(r *report.Report) Table {
	t := Table{Caption: "Who won each origin (lowest p99; medians across repeats)",
		Header: []string{"origin", "scenario / tier", "winner", "p99 ms", "req/s", "runner-up", "p99 ms", "margin", "trust"},
		Right:  []bool{false, false, false, true, true, false, true, true, false}}
	gi := groupIndex(r)
	proxies, origins, sts := axes(r)
	for _, st := range sts {
		for _, o := range origins {
			var ok []*report.Group
			invalid := 0
			for _, p := range proxies {
				g := gi[p+"."+o+"."+st[0]+"."+st[1]]
				if g == nil {
					continue
				}
				if g.Valid == 0 || !g.Metrics["p99_seconds"].Median.Known() {
					invalid++
					continue
				}
				ok = append(ok, g)
			}
			if len(ok)+invalid == 0 {
				continue
			}
			row := []Cell{txt(o), txt(st[0] + " / " + st[1])}
			if len(ok) == 0 {
				row = append(row, Cell{Text: "none", Class: "invalid"}, txt("–"), txt("–"), txt("–"), txt("–"), txt("–"),
					Cell{Text: fmt.Sprintf("✗ all %d proxies' cells invalid", invalid), Class: "invalid"})
				t.Rows = append(t.Rows, row)
				continue
			}
			sort.SliceStable(ok, func(i, j int) bool {
				return ok[i].Metrics["p99_seconds"].Median < ok[j].Metrics["p99_seconds"].Median
			})
			w := ok[0]
			wp := w.Metrics["p99_seconds"]
			row = append(row, Cell{Text: w.Proxy, Best: true}, txt(fmtMs(wp.Median)), txt(fmtNum(w.Metrics["rps"].Median, 0)))
			var caveats []string
			if len(ok) > 1 {
				ru := ok[1]
				rp := ru.Metrics["p99_seconds"]
				margin := float64(rp.Median)/float64(wp.Median) - 1
				row = append(row, txt(ru.Proxy), txt(fmtMs(rp.Median)), txt(fmt.Sprintf("%.0f %%", margin*100)))
				switch {
				case margin < 0.05:
					caveats = append(caveats, "too close to call (< 5 % apart)")
				case w.Repeats > 1 && ru.Repeats > 1 && float64(wp.CIHigh) >= float64(rp.CILow):
					caveats = append(caveats, "95 % CIs overlap across repeats")
				}
			} else {
				row = append(row, txt("–"), txt("–"), txt("–"))
				caveats = append(caveats, "the only proxy with trustworthy cells")
			}
			if w.Valid < w.Repeats {
				caveats = append(caveats, fmt.Sprintf("%d of %d repeats invalid", w.Repeats-w.Valid, w.Repeats))
			}
			if suspectCells(r, w) {
				caveats = append(caveats, "winner has suspect cells (section 5)")
			}
			trust, class := "✓ clear", "valid"
			if len(caveats) > 0 {
				trust, class = "⚠ "+strings.Join(caveats, "; "), "suspect"
			}
			if invalid > 0 {
				trust += fmt.Sprintf(" (%d other proxy(ies) invalid here)", invalid)
			}
			row = append(row, Cell{Text: trust, Class: class})
			t.Rows = append(t.Rows, row)
		}
	}
	t.Notes = []string{"Margin = how much higher the runner-up's p99 is. A single repeat cannot show noise: run REPEATS=3 or more before calling a close race."}
	return t
}

func suspectCells(r *report.Report, g *report.Group) bool {
	for _, c := range r.Cells {
		if c.Key() == g.Key && c.Validity.Verdict == report.Suspect {
			return true
		}
	}
	return false
}

// winners marks, per origin × scenario × tier, every repeat of the proxy
// whose median p99 over trustworthy repeats is lowest.
func winners(r *report.Report) map[string]bool {
	type agg struct {
		proxy string
		p99   float64
	}
	best := map[string]agg{}
	for _, g := range r.Groups {
		if g.Valid == 0 {
			continue
		}
		m := g.Metrics["p99_seconds"]
		if !m.Median.Known() {
			continue
		}
		k := g.Origin + "|" + g.Scenario + "|" + g.Tier
		if b, ok := best[k]; !ok || float64(m.Median) < b.p99 {
			best[k] = agg{g.Proxy, float64(m.Median)}
		}
	}
	out := map[string]bool{}
	for _, c := range r.Cells {
		if b, ok := best[c.Origin+"|"+c.Scenario+"|"+c.Tier]; ok && b.proxy == c.Proxy && c.Validity.Verdict != report.Invalid {
			out[c.ID] = true
		}
	}
	return out
}

// groupIndex finds a group by proxy, origin, scenario and tier.
func groupIndex(r *report.Report) map[string]*report.Group {
	m := map[string]*report.Group{}
	for i := range r.Groups {
		m[r.Groups[i].Key] = &r.Groups[i]
	}
	return m
}

func axes(r *report.Report) (proxies, origins []string, st [][2]string) {
	seenP, seenO, seenS := map[string]bool{}, map[string]bool{}, map[[2]string]bool{}
	for _, c := range sortedCells(r) {
		if !seenP[c.Proxy] {
			seenP[c.Proxy] = true
			proxies = append(proxies, c.Proxy)
		}
		if !seenO[c.Origin] {
			seenO[c.Origin] = true
			origins = append(origins, c.Origin)
		}
		k := [2]string{c.Scenario, c.Tier}
		if !seenS[k] {
			seenS[k] = true
			st = append(st, k)
		}
	}
	sort.SliceStable(proxies, func(i, j int) bool { return proxyOrder(proxies[i]) < proxyOrder(proxies[j]) })
	sort.Strings(origins)
	return
}

func matrixSection(r *report.Report) Section {
	sec := Section{Title: "2. Proxy × origin matrices"}
	sec.Text = append(sec.Text, "Medians across repeats (valid repeats only when any is valid). ★ marks the best proxy per origin; ✗ marks a value from cells that are all invalid.")
	gi := groupIndex(r)
	proxies, origins, sts := axes(r)
	metrics := []struct {
		name, title string
		lower       bool
		f           func(report.Num) string
	}{
		{"p99_seconds", "p99 latency (ms)", true, fmtMs},
		{"rps", "throughput (req/s)", false, func(v report.Num) string { return fmtNum(v, 0) }},
		{"proxy_cpu_cores", "proxy CPU (cores, mean)", true, func(v report.Num) string { return fmtNum(v, 2) }},
		{"error_ratio", "error ratio", true, fmtPct},
	}
	for _, st := range sts {
		for _, m := range metrics {
			t := Table{Caption: fmt.Sprintf("%s: scenario %s, tier %s", m.title, st[0], st[1]), Header: append([]string{"proxy"}, origins...)}
			t.Right = make([]bool, len(t.Header))
			for i := 1; i < len(t.Right); i++ {
				t.Right[i] = true
			}
			bestRow := map[string]string{}
			for _, o := range origins {
				bv := math.NaN()
				for _, p := range proxies {
					g := gi[p+"."+o+"."+st[0]+"."+st[1]]
					if g == nil || g.Valid == 0 || !g.Metrics[m.name].Median.Known() {
						continue
					}
					v := float64(g.Metrics[m.name].Median)
					if math.IsNaN(bv) || (m.lower && v < bv) || (!m.lower && v > bv) {
						bv, bestRow[o] = v, p
					}
				}
			}
			for _, p := range proxies {
				row := []Cell{txt(p)}
				for _, o := range origins {
					g := gi[p+"."+o+"."+st[0]+"."+st[1]]
					if g == nil {
						row = append(row, txt(""))
						continue
					}
					c := Cell{Text: m.f(g.Metrics[m.name].Median)}
					if g.Valid == 0 {
						c.Text += " ✗"
						c.Class = "invalid"
					} else if bestRow[o] == p && m.name != "error_ratio" {
						c.Text += " ★"
						c.Best = true
					}
					if g.Repeats > 1 && g.Metrics[m.name].CV.Known() && m.name != "error_ratio" {
						c.Text += fmt.Sprintf(" ±%.0f%%", 100*float64(g.Metrics[m.name].CV))
					}
					row = append(row, c)
				}
				t.Rows = append(t.Rows, row)
			}
			sec.Tables = append(sec.Tables, t)
		}
	}
	if rep := repeatsTable(r); rep != nil {
		sec.Tables = append(sec.Tables, *rep)
	}
	return sec
}

func repeatsTable(r *report.Report) *Table {
	t := Table{Caption: "Spread across repeats (p99 latency and throughput)",
		Header: []string{"cell", "repeats (valid)", "p99 median ms", "p99 mean ms [95 % CI]", "p99 CV", "req/s median", "req/s mean [95 % CI]", "req/s CV"},
		Right:  []bool{false, true, true, true, true, true, true, true}}
	for _, g := range r.Groups {
		if g.Repeats < 2 {
			continue
		}
		p, q := g.Metrics["p99_seconds"], g.Metrics["rps"]
		t.Rows = append(t.Rows, []Cell{txt(g.Key), txt(fmt.Sprintf("%d (%d)", g.Repeats, g.Valid)),
			txt(fmtMs(p.Median)), txt(fmt.Sprintf("%s [%s, %s]", fmtMs(p.Mean), fmtMs(p.CILow), fmtMs(p.CIHigh))), txt(fmtPct(p.CV)),
			txt(fmtNum(q.Median, 0)), txt(fmt.Sprintf("%s [%s, %s]", fmtNum(q.Mean, 0), fmtNum(q.CILow, 0), fmtNum(q.CIHigh, 0))), txt(fmtPct(q.CV))})
	}
	if len(t.Rows) == 0 {
		return nil
	}
	t.Notes = []string{"CI is the 95 % Student-t interval of the mean; CV = stddev / mean. With 2 or 3 repeats the interval is wide by construction."}
	return &t
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
	t := Table{Header: []string{"cell", "CPU mean", "CPU peak", "mem mean", "mem peak", "mem slope MB/min", "loadgen CPU mean / limit"},
		Right: []bool{false, true, true, true, true, true, true}}
	for _, c := range sortedCells(r) {
		lg := fmtNum(c.LoadgenCPU.MeanCores, 2) + " / " + fmtNum(c.LoadgenCPU.LimitCores, 1)
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), txt(fmtNum(c.ProxyRes.CPUMeanCores, 2)), txt(fmtNum(c.ProxyRes.CPUPeakCores, 2)),
			txt(fmtMB(c.ProxyRes.MemMeanBytes)), txt(fmtMB(c.ProxyRes.MemPeakBytes)), txt(fmtNum(c.ProxyRes.MemSlopeMBPerMin, 2)), txt(lg)})
	}
	t.Notes = []string{"CPU in cores of the proxy container (cAdvisor); peak is the highest per-scrape rate. Memory is the working set; the slope is an OLS fit over the window."}
	sec.Tables = append(sec.Tables, t)
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
	t.Notes = []string{"From the proxies' gctrace: STW = sweep termination + mark termination (wall clock), percentiles are histogram estimates, max is the upper bound of the highest bucket. GC CPU % is GC CPU seconds over duration × GOMAXPROCS. nginx and HAProxy are C programs without a GC."}
	sec.Tables = append(sec.Tables, t)
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
	th := r.Thresholds
	sec.Text = append(sec.Text, fmt.Sprintf("Checks: loadgen CPU ≥ %.0f %% of its limit or open-loop rate < %.0f %% of offered (loadgen-bound); error ratio > %.2f %%; one non-2xx status ≥ %.0f %% of responses or a wrong X-Origin (misrouted); fewer than %d attempts or %d scrapes; rate × mean latency vs measured in-flight beyond %.0f %% (Little's law); missing series.",
		th.LoadgenCPUFraction*100, th.OpenLoopAchieved*100, th.ErrorRatio*100, th.MisroutedShare*100, th.MinRequests, th.MinScrapes, th.LittleTolerance*100))
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
		return sec
	}
	sec.Tables = append(sec.Tables, t)
	return sec
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
	t.Notes = []string{"Parity: same worker count as the CPU limit, keep-alive HTTP/1.1 upstream pools, no caching, no compression, no per-request disk logging, same timeouts."}
	sec.Tables = append(sec.Tables, t)
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
