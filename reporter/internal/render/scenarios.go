package render

import (
	"fmt"
	"math"
	"sort"

	"proxybench/internal/scenario"
	"proxybench/reporter/internal/report"
)

// scenarioSection shows the support matrix and, per scenario, the table its
// internal/scenario entry adds: what makes it correct (docs/scenarios.md).
// ok is false for a run of simple cells only.
func scenarioSection(r *report.Report) (Section, bool) {
	sec := Section{Title: "8. Scenarios",
		Text: []string{"Numbers from the loadgen's exact counts of each window (manifest.json). " +
			"n/a marks a scenario the proxy cannot do natively (no plugin its official image lacks); such cells are listed, never silently dropped."}}
	if t, ok := supportTable(r); ok {
		sec.Tables = append(sec.Tables, t)
	}
	sec.Tables = append(sec.Tables, scenarioTables(sortedCells(r))...)
	if t, ok := tlsCostTable(r); ok {
		sec.Tables = append(sec.Tables, t)
	}
	if t, ok := handshakeSplitTable(r); ok {
		sec.Tables = append(sec.Tables, t)
	}
	if faultsFigure(r) != "" {
		sec.Figures = append(sec.Figures, FigFaults)
	}
	return sec, len(sec.Tables) > 1 || (len(sec.Tables) == 1 && (hasScenarioData(r) || len(r.TLSCost) > 0 || len(r.TLSHandshakes) > 0))
}

// hasScenarioData says whether the run has a pair the section speaks of:
// an n/a, or a scenario with a table of its own (or unknown to this build).
func hasScenarioData(r *report.Report) bool {
	for _, s := range r.Support {
		if sc := scenario.Get(s.Scenario); sc == nil || sc.Report != nil || s.Status != report.SupportNative {
			return true
		}
	}
	return false
}

func supportTable(r *report.Report) (Table, bool) {
	if len(r.Support) == 0 {
		return Table{}, false
	}
	var proxies, scenarios []string
	at := map[[2]string]report.Support{}
	for _, s := range r.Support {
		k := [2]string{s.Proxy, s.Scenario}
		if _, ok := at[k]; !ok {
			at[k] = s
		}
		proxies = appendNew(proxies, s.Proxy)
		scenarios = appendNew(scenarios, s.Scenario)
	}
	sort.SliceStable(proxies, func(i, j int) bool { return proxyOrder(proxies[i]) < proxyOrder(proxies[j]) })
	t := Table{Caption: "Support matrix (proxy × scenario)", Header: append([]string{"scenario"}, proxies...)}
	t.Right = make([]bool, len(t.Header))
	var reasons []string
	for _, sc := range scenarios {
		row := []Cell{txt(sc)}
		for _, p := range proxies {
			s, ok := at[[2]string{p, sc}]
			switch {
			case !ok:
				row = append(row, txt("not in run"))
			case s.Status == report.SupportNA:
				reasons = append(reasons, fmt.Sprintf("n/a %d: %s %s: %s", len(reasons)+1, p, sc, s.Reason))
				row = append(row, Cell{Text: fmt.Sprintf("n/a (%d)", len(reasons)), Class: "suspect"})
			default:
				row = append(row, Cell{Text: "native", Class: "valid"})
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = reasons
	return t, true
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// scenarioTables are the tables the run's scenarios add (internal/scenario:
// each scenario's Report), in the registry's order, each with a row per
// cell that has something to show.
func scenarioTables(cells []*report.Cell) []Table {
	var out []Table
	seen := map[*scenario.Table]bool{}
	for _, sc := range scenario.List() {
		st := sc.Report
		if st == nil || seen[st] {
			continue
		}
		seen[st] = true
		t := Table{Caption: st.Caption, Header: st.Header, Right: st.Right, Notes: st.Notes}
		for _, c := range cells {
			if s := scenario.Get(c.Scenario); s == nil || s.Report != st {
				continue
			}
			for _, fields := range st.CellRows(reportCell(c), format{}) {
				row := make([]Cell, len(fields))
				for i, f := range fields {
					row[i] = Cell{Text: f.Text, Class: f.Class}
				}
				t.Rows = append(t.Rows, row)
			}
		}
		if len(t.Rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// reportCell is what a scenario's row reads of c.
func reportCell(c *report.Cell) scenario.ReportCell {
	p50, p99 := report.NaN(), report.NaN()
	if e := c.Latency.Exact; e != nil {
		p50, p99 = e.P50, e.P99
	}
	rc := scenario.ReportCell{Name: cellName(c), Start: c.Start, DurationS: float64(c.DurationS), RPS: float64(c.RPS), S2xx: c.Classes.S2xx,
		P50: float64(p50), P99: float64(p99), Data: c.ScenarioData, Protocol: c.Protocol, TLS: c.TLS,
		HandshakeP50: math.NaN(), HandshakeP99: math.NaN()}
	if h := c.Handshake; h != nil {
		rc.HandshakeP50, rc.HandshakeP99 = float64(h.P50), float64(h.P99)
	}
	return rc
}

// format is the report's number formatting as scenario rows use it.
type format struct{}

var _ scenario.Format = format{}

func (format) Int(n int64) string               { return fmtInt(n) }
func (format) Num(v float64, digits int) string { return fmtNum(report.Num(v), digits) }
func (format) Pct(v float64) string             { return fmtPct(report.Num(v)) }
func (format) Dur(seconds float64) string       { return fmtDur(report.Num(seconds)) }
func (format) MB(bytes float64) string          { return fmtMB(report.Num(bytes)) }

// tlsCostTable is report.TLSCost: CPU per request over TLS against
// cleartext, and the full handshakes each proxy sustains per core.
func tlsCostTable(r *report.Report) (Table, bool) {
	if len(r.TLSCost) == 0 {
		return Table{}, false
	}
	t := Table{Caption: "TLS cost: proxy CPU per request, TLS against cleartext, and full handshakes per core",
		Header: []string{"proxy", "origin / tier", "cleartext req/s", "cleartext CPU µs/req", "TLS req/s", "TLS CPU µs/req", "TLS overhead",
			"full handshakes/s", "proxy cores", "full handshakes/s per core"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true},
		Notes: []string{"CPU per request = the proxy's mean CPU (cores) / its requests per second, the median over the repeats not invalid; " +
			"cleartext is scenario simple and TLS scenario tls: the same keep-alive HTTP/1.1 cells, only TLS differs, compared at one rate " +
			fmt.Sprintf("(an open loop's target rate, or closed-loop rates within %.0f %% of each other; else the overhead is – with the reason below). ", 100*report.SameRateTolerance) +
			"Full handshakes: scenario tls-handshake-full, a new TLS connection per request without resumption (requests/s = handshakes/s), " +
			"divided by the proxy CPU cores it used meanwhile."}}
	micro := func(v report.Num) string { return fmtNum(v*1e6, 1) }
	for _, c := range r.TLSCost {
		over := txt("–")
		if c.Overhead.Known() {
			over = txt(fmt.Sprintf("%+.0f %%", 100*float64(c.Overhead)))
		}
		if !c.Comparable && c.Note != "" {
			over = Cell{Text: "–", Class: "suspect"}
			t.Notes = append(t.Notes, fmt.Sprintf("%s %s / %s: %s", c.Proxy, c.Origin, c.Tier, c.Note))
		}
		t.Rows = append(t.Rows, []Cell{txt(c.Proxy), txt(c.Origin + " / " + c.Tier), txt(fmtNum(c.ClearRPS, 0)), txt(micro(c.ClearCPUPerRequest)),
			txt(fmtNum(c.TLSRPS, 0)), txt(micro(c.TLSCPUPerRequest)), over,
			txt(fmtNum(c.HandshakeRPS, 0)), txt(fmtNum(c.HandshakeCores, 2)), txt(fmtNum(c.HandshakesPerCore, 0))})
	}
	return t, true
}

// handshakeSplitTable is report.TLSHandshakes: each proxy's full and
// resumed TLS handshake latency side by side, and their ratio.
func handshakeSplitTable(r *report.Report) (Table, bool) {
	if len(r.TLSHandshakes) == 0 {
		return Table{}, false
	}
	t := Table{Caption: "TLS handshake latency: full against resumed",
		Header: []string{"proxy", "origin / tier", "full handshakes", "full p50", "full p99", "resumed handshakes", "resumed p50", "resumed p99",
			"resumed / full p50", "resumed / full p99"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true},
		Notes: []string{"Full: the full handshakes of scenario " + scenario.TLSHandshakeFull + "; resumed: the resumed handshakes of scenario " +
			scenario.TLSHandshakeResumed + " (its first connections, with no session to resume yet, left out). Each a new TLS connection per request, " +
			"from the ClientHello to the handshake's end (TCP connect excluded); the median over the repeats not invalid of each cell's p50 and p99, " +
			"from the loadgen's exact histogram (manifest) unless a note says Prometheus's estimate. n/a: the run has no such cell."}}
	ratio := func(v report.Num) string {
		if !v.Known() {
			return "–"
		}
		return fmt.Sprintf("%.2f×", float64(v))
	}
	for _, h := range r.TLSHandshakes {
		row := []Cell{txt(h.Proxy), txt(h.Origin + " / " + h.Tier)}
		for _, side := range []struct {
			name string
			s    report.HandshakeSide
		}{{"full", h.Full}, {"resumed", h.Resumed}} {
			s := side.s
			if s.NA != "" {
				na := Cell{Text: "n/a", Class: "suspect"}
				row = append(row, na, na, na)
				t.Notes = append(t.Notes, fmt.Sprintf("%s %s / %s %s: n/a: %s", h.Proxy, h.Origin, h.Tier, side.name, s.NA))
				continue
			}
			switch s.Source {
			case report.HandshakePrometheus:
				t.Notes = append(t.Notes, fmt.Sprintf("%s %s / %s %s: Prometheus's histogram estimates (the manifest has no exact latency)",
					h.Proxy, h.Origin, h.Tier, side.name))
			case report.HandshakeExact, "":
			default:
				t.Notes = append(t.Notes, fmt.Sprintf("%s %s / %s %s: exact for some repeats, Prometheus's histogram estimates for the others",
					h.Proxy, h.Origin, h.Tier, side.name))
			}
			row = append(row, txt(fmtInt(s.Count)), txt(fmtDur(s.P50)), txt(fmtDur(s.P99)))
		}
		t.Rows = append(t.Rows, append(row, txt(ratio(h.RatioP50)), txt(ratio(h.RatioP99))))
	}
	return t, true
}
