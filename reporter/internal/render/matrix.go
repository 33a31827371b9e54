package render

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/internal/stack"
	"proxybench/reporter/internal/report"
)

// winnerTable answers the reader's first two questions per origin, scenario
// and tier: which proxy won, and should I believe it. Only the plan's own
// cells compete (groupIndex by plan key); the A/A control, the duet's and
// the observer's arms are in section 7.
func winnerTable(r *report.Report) Table {
	t := Table{Caption: "Who won each origin (lowest p99; medians across repeats)",
		Header: []string{"origin", "scenario / tier", "winner", "p99 ms", "goodput req/s", "all req/s", "runner-up", "p99 ms", "margin", "trust"},
		Right:  []bool{false, false, false, true, true, true, false, true, true, false}}
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
				row = append(row, Cell{Text: "none", Class: "invalid"}, txt("–"), txt("–"), txt("–"), txt("–"), txt("–"), txt("–"),
					Cell{Text: fmt.Sprintf("✗ all %d proxies' cells invalid", invalid), Class: "invalid"})
				t.Rows = append(t.Rows, row)
				continue
			}
			sort.SliceStable(ok, func(i, j int) bool {
				return ok[i].Metrics["p99_seconds"].Median < ok[j].Metrics["p99_seconds"].Median
			})
			w := ok[0]
			wp := w.Metrics["p99_seconds"]
			row = append(row, Cell{Text: w.Proxy, Best: true}, txt(fmtMs(wp.Median)), txt(fmtNum(w.Metrics["goodput_rps"].Median, 0)),
				txt(fmtNum(w.Metrics["rps"].Median, 0)))
			var caveats []string
			if len(ok) > 1 {
				ru := ok[1]
				rp := ru.Metrics["p99_seconds"]
				margin := float64(rp.Median)/float64(wp.Median) - 1
				row = append(row, txt(ru.Proxy), txt(fmtMs(rp.Median)), txt(fmt.Sprintf("%.0f %%", margin*100)))
				caveats = append(caveats, marginCaveats(r, w, ru, margin)...)
				row[2].Best = len(caveats) == 0 // bold only when the margin is decided
			} else {
				row[2].Best = false // no runner-up to be better than
				row = append(row, txt("–"), txt("–"), txt("–"))
				caveats = append(caveats, "the only proxy with trustworthy cells")
			}
			if w.Invalid > 0 {
				caveats = append(caveats, invalidRepeats(w))
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
	t.Notes = []string{"Margin = how much higher the runner-up's p99 is. Goodput = responses with a status the scenario expects per second of the planned window; all req/s counts every response with a status. " +
		"A margin is clear only when it is decided at the run's margin: Welch's interval of the ratio of the two proxies' p99 across repeats lies wholly beyond it (section 7); otherwise it is not resolved. " +
		"A single repeat measures no spread, so it gives no verdict on the margin: run REPEATS=3 or more."}
	return t
}

// marginCaveats judges the winner's margin over the runner-up as a
// decision at the run's margin (package decide): Welch's interval of the
// log ratio of their p99 across repeats must lie wholly beyond the
// margin. Without 2 usable repeats on both sides there is no interval,
// and no verdict.
func marginCaveats(r *report.Report, w, ru *report.Group, _ float64) []string {
	wp := w.Metrics["p99_seconds"]
	rp := ru.Metrics["p99_seconds"]
	if !wp.CIHigh.Known() || !rp.CILow.Known() {
		if max(w.Repeats, ru.Repeats) <= 1 {
			return []string{"spread not measured (1 repeat): no verdict on the margin"}
		}
		short := w
		if wp.CIHigh.Known() {
			short = ru
		}
		return []string{fmt.Sprintf("spread not measured (%s: %d usable repeat): no verdict on the margin", short.Proxy, short.Metrics["p99_seconds"].N)}
	}
	q := report.QuestionOf(r)
	m, _ := report.Metric("p99_seconds")
	iv := decide.Welch(logValues(r, ru, m), logValues(r, w, m), q.Alpha)
	d := decide.FromInterval("p99_seconds", m.Better, false, iv, q.Options(cellid.ArmUnobserved))
	answer := "not resolved at ±"
	switch d.Outcome {
	case decide.Better:
		return nil
	case decide.Equivalent: // resolved: the two are within the margin, so neither wins
		answer = "equivalent within ±"
	}
	return []string{fmt.Sprintf("%s%s: the winner's p99 %s [%s, %s] against the runner-up's", answer, report.Pct(q.Margin),
		report.SignedPct(d.Change), report.SignedPct(d.Low), report.SignedPct(d.High))}
}

// logValues is the log of metric m over g's usable repeats (not invalid).
func logValues(r *report.Report, g *report.Group, m report.GroupMetric) []float64 {
	var out []float64
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.GroupKey() != g.Key || c.Validity.Verdict == report.Invalid {
			continue
		}
		if v := m.Get(c); v.Known() && v > 0 {
			out = append(out, math.Log(float64(v)))
		}
	}
	return out
}

// invalidRepeats says how many repeats of g the statistics leave out.
func invalidRepeats(g *report.Group) string {
	return fmt.Sprintf("%d of %d repeats invalid", g.Invalid, g.Repeats)
}

// fmtCV is a group's spread: n/a with fewer than 2 values, never ±0 %.
func fmtCV(s report.Stat) string {
	if !s.CV.Known() {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(s.CV))
}

func suspectCells(r *report.Report, g *report.Group) bool {
	for _, c := range r.Cells {
		if c.GroupKey() == g.Key && c.Validity.Verdict == report.Suspect {
			return true
		}
	}
	return false
}

// winners marks, per origin × scenario × tier, every repeat of the proxy
// whose p99 over trustworthy repeats is lowest by more than the run's
// margin (decidedBest); none where the margin is not resolved.
func winners(r *report.Report) map[string]bool {
	by := map[string][]*report.Group{}
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Arm != "" { // the arms have their own section
			continue
		}
		k := g.Origin + "|" + g.Scenario + "|" + g.Tier
		by[k] = append(by[k], g)
	}
	best := map[string]string{}
	for k, gs := range by {
		if b := decidedBest(r, gs, "p99_seconds"); b != nil {
			best[k] = b.Proxy
		}
	}
	out := map[string]bool{}
	for _, c := range r.Cells {
		if p, ok := best[c.Origin+"|"+c.Scenario+"|"+c.Tier]; ok && p == c.Proxy && c.Arm == "" && c.Validity.Verdict != report.Invalid {
			out[c.ID] = true
		}
	}
	return out
}

// decidedBest is the group of gs best on metric (by median over usable
// repeats) when it is better than the runner-up by more than the run's
// margin: Welch's interval of the log ratio across repeats lies wholly
// beyond it. nil when fewer than two groups have values or the margin is
// not resolved (one repeat a side resolves nothing).
func decidedBest(r *report.Report, gs []*report.Group, metric string) *report.Group {
	m, ok := report.Metric(metric)
	if !ok {
		return nil
	}
	var cand []*report.Group
	for _, g := range gs {
		if metric == "goodput_rps" && labBound(r, g) {
			return nil // a lower bound wins nothing: the winner is unknown
		}
		if g.Valid > 0 && g.Metrics[metric].Median.Known() {
			cand = append(cand, g)
		}
	}
	if len(cand) < 2 {
		return nil
	}
	sort.SliceStable(cand, func(i, j int) bool {
		a, b := float64(cand[i].Metrics[metric].Median), float64(cand[j].Metrics[metric].Median)
		return float64(m.Better)*a > float64(m.Better)*b
	})
	q := report.QuestionOf(r)
	iv := decide.Welch(logValues(r, cand[1], m), logValues(r, cand[0], m), q.Alpha)
	if decide.FromInterval(metric, m.Better, false, iv, q.Options(cellid.ArmUnobserved)).Outcome != decide.Better {
		return nil
	}
	return cand[0]
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
		if stack.IsDirect(c.Proxy) { // the direct control competes with nobody (section 9)
			continue
		}
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
	sec.Text = append(sec.Text, "Medians across repeats (valid repeats only when any is valid). ★ marks the best proxy per origin when it is better than the runner-up by more than the run's margin (decided on the repeats; never with one repeat); ✗ marks a value from cells that are all invalid.")
	gi := groupIndex(r)
	proxies, origins, sts := axes(r)
	metrics := []struct {
		name, title string
		lower       bool
		f           func(report.Num) string
	}{
		{"p99_seconds", "p99 latency (ms)", true, fmtMs},
		{"goodput_rps", "throughput: goodput req/s (all responses' req/s in parentheses where different)", false, func(v report.Num) string { return fmtNum(v, 0) }},
		{"proxy_cpu_cores", "proxy CPU (cores, mean)", true, func(v report.Num) string { return fmtNum(v, 2) }},
		{"error_ratio", "error ratio", true, fmtPct},
	}
	for _, st := range sts {
		origins := originsOf(r, origins, st)
		for _, m := range metrics {
			t := Table{Caption: fmt.Sprintf("%s: scenario %s, tier %s", m.title, st[0], st[1]), Header: append([]string{"proxy"}, origins...)}
			t.Right = make([]bool, len(t.Header))
			for i := 1; i < len(t.Right); i++ {
				t.Right[i] = true
			}
			bestRow := map[string]string{}
			for _, o := range origins {
				var gs []*report.Group
				for _, p := range proxies {
					if g := gi[p+"."+o+"."+st[0]+"."+st[1]]; g != nil {
						gs = append(gs, g)
					}
				}
				if b := decidedBest(r, gs, m.name); b != nil {
					bestRow[o] = b.Proxy
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
					if m.name == "goodput_rps" {
						c.Text = fmtGoodput(g.Metrics[m.name].Median, labBound(r, g))
					}
					if all := g.Metrics["rps"].Median; m.name == "goodput_rps" && fmtNum(all, 0) != c.Text {
						c.Text += " (" + fmtNum(all, 0) + ")"
					}
					if g.Valid == 0 {
						c.Text += " ✗"
						c.Class = "invalid"
					} else if bestRow[o] == p && m.name != "error_ratio" {
						c.Text += " ★"
						c.Best = true
					}
					if g.Repeats > 1 && m.name != "error_ratio" {
						c.Text += " ±" + fmtCV(g.Metrics[m.name])
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
	t := Table{Caption: "Spread across repeats (p99 latency and goodput)",
		Header: []string{"cell", "repeats", "p99 median ms", "p99 mean ms [95 % CI]", "p99 CV", "goodput req/s median", "goodput req/s mean [95 % CI]", "goodput CV"},
		Right:  []bool{false, true, true, true, true, true, true, true}}
	ci := func(s report.Stat, f func(report.Num) string) string {
		if !s.CILow.Known() {
			return f(s.Mean) + " [n/a]"
		}
		return fmt.Sprintf("%s [%s, %s]", f(s.Mean), f(s.CILow), f(s.CIHigh))
	}
	rate := func(v report.Num) string { return fmtNum(v, 0) }
	for _, g := range r.Groups {
		if g.Repeats < 2 {
			continue
		}
		p, q := g.Metrics["p99_seconds"], g.Metrics["goodput_rps"]
		reps := fmt.Sprint(g.Repeats)
		if g.Invalid > 0 {
			reps += " (" + invalidRepeats(&g) + ")"
		}
		t.Rows = append(t.Rows, []Cell{txt(g.Key), txt(reps),
			txt(fmtMs(p.Median)), txt(ci(p, fmtMs)), txt(fmtCV(p)),
			txt(rate(q.Median)), txt(ci(q, rate)), txt(fmtCV(q))})
	}
	if len(t.Rows) == 0 {
		return nil
	}
	t.Notes = []string{"CI is the 95 % Student-t interval of the mean; CV = stddev / mean. Invalid repeats are left out of the statistics; with fewer than 2 values left the spread is n/a. With 2 or 3 repeats the interval is wide by construction."}
	return &t
}

// originsOf keeps the origins that have a cell of scenario and tier st.
func originsOf(r *report.Report, origins []string, st [2]string) []string {
	has := map[string]bool{}
	for _, c := range r.Cells {
		if c.Scenario == st[0] && c.Tier == st[1] {
			has[c.Origin] = true
		}
	}
	var out []string
	for _, o := range origins {
		if has[o] {
			out = append(out, o)
		}
	}
	return out
}

// labBound says whether the lab limited some usable cell of g (its
// goodput is then a lower bound of the proxy's).
func labBound(r *report.Report, g *report.Group) bool {
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.GroupKey() == g.Key && c.Validity.Verdict != report.Invalid && c.LabBound() {
			return true
		}
	}
	return false
}

// fmtGoodput is a goodput, "≥ N" when the lab limited it.
func fmtGoodput(v report.Num, lowerBound bool) string {
	s := fmtNum(v, 0)
	if lowerBound && v.Known() {
		return "≥ " + s
	}
	return s
}
