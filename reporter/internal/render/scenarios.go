package render

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// scenarioSection shows the support matrix and, per scenario, what makes
// it correct (docs/scenarios.md): 401s exactly for invalid keys, the
// accepted rate against the limit, the delay in the latency and memory per
// held connection, bytes/s against body x req/s, connections/s and
// TIME_WAIT. ok is false for a run of simple cells only.
func scenarioSection(r *report.Report) (Section, bool) {
	sec := Section{Title: "7. Scenarios",
		Text: []string{"Numbers from the loadgen's exact counts of each window (manifest.json). " +
			"n/a marks a scenario the proxy cannot do natively (no plugin its official image lacks); such cells are listed, never silently dropped."}}
	if t, ok := supportTable(r); ok {
		sec.Tables = append(sec.Tables, t)
	}
	cells := sortedCells(r)
	for _, build := range []func([]*report.Cell) Table{authTable, rateLimitTable, slowTable, payloadTable, churnTable} {
		if t := build(cells); len(t.Rows) > 0 {
			sec.Tables = append(sec.Tables, t)
		}
	}
	return sec, len(sec.Tables) > 1 || (len(sec.Tables) == 1 && hasScenarioData(r))
}

func hasScenarioData(r *report.Report) bool {
	for _, s := range r.Support {
		if s.Scenario != "simple" || s.Status != report.SupportNative {
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

func authTable(cells []*report.Cell) Table {
	t := Table{Caption: "auth: API key checked by the proxy (401 exactly for invalid keys)",
		Header: []string{"cell", "requests", "valid → 2xx", "missing key → 401", "wrong key → 401", "answered wrongly", "invalid share", "correct"},
		Right:  []bool{false, true, true, true, true, true, true, false}}
	for _, c := range cells {
		sd := c.ScenarioData
		if sd == nil || len(sd.Variants) == 0 {
			continue
		}
		var total, invalid int64
		for _, v := range sd.Variants {
			total += v.Requests + v.Errors
			if v.Want == 401 {
				invalid += v.Requests + v.Errors
			}
		}
		wrong := int64(-1)
		if sd.AuthWrong != nil {
			wrong = *sd.AuthWrong
		}
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), txt(fmtInt(total)),
			txt(variantLine(sd.Variants["valid"], "2xx")), txt(variantLine(sd.Variants["missing"], "401")),
			txt(variantLine(sd.Variants["wrong"], "401")), txt(fmtInt(wrong)),
			txt(fmtPct(ratio(invalid, total))), passCell(wrong == 0)})
	}
	t.Notes = []string{"Open loop: the mix is the plan's share of requests; closed loop: its share of connections (a 401 returns faster, so invalid keys make up more of the requests)."}
	return t
}

// variantLine is "answered / sent" for one variant: how many got the
// answer their key deserves.
func variantLine(v manifest.VariantCount, want string) string {
	if v.Requests+v.Errors == 0 {
		return "–"
	}
	var right int64
	for code, n := range v.Codes {
		c, _ := strconv.Atoi(code)
		if (want == "2xx" && c >= 200 && c < 300) || code == want {
			right += n
		}
	}
	return fmtInt(right) + " / " + fmtInt(v.Requests+v.Errors)
}

func rateLimitTable(cells []*report.Cell) Table {
	t := Table{Caption: "ratelimit: open loop above the per-key limit (429s are not errors)",
		Header: []string{"cell", "limit req/s (burst)", "offered req/s", "accepted req/s", "429 req/s", "precision", "within 10 %"},
		Right:  []bool{false, true, true, true, true, true, false}}
	for _, c := range cells {
		sd := c.ScenarioData
		if sd == nil || sd.LimitRPS == 0 {
			continue
		}
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), txt(fmt.Sprintf("%.0f (%.0f)", sd.LimitRPS, sd.LimitBurst)),
			txt(fmt.Sprintf("%.0f", sd.OfferedRPS)), txt(fmt.Sprintf("%.0f", sd.AcceptedRPS)), txt(fmt.Sprintf("%.0f", sd.LimitedRPS)),
			txt(fmt.Sprintf("%.3f", sd.Precision)), passCell(math.Abs(sd.Precision-1) <= 0.10)})
	}
	t.Notes = []string{"precision = (2xx − burst) / window / limit: the bucket is full when the window starts, so a correct limiter lets limit × window + burst through; 1.000 is exact, below 1 too strict."}
	return t
}

func slowTable(cells []*report.Cell) Table {
	t := Table{Caption: "slow: origin delay, connections held by the proxy",
		Header: []string{"cell", "delay", "held", "req/s", "p50 exact", "p99 exact", "p50 over delay", "idle MB", "peak MB", "memory / held connection"},
		Right:  []bool{false, true, true, true, true, true, true, true, true, true}}
	for _, c := range cells {
		sd := c.ScenarioData
		if sd == nil || sd.DelayS == 0 {
			continue
		}
		p50, p99 := report.NaN(), report.NaN()
		if e := c.Latency.Exact; e != nil {
			p50, p99 = e.P50, e.P99
		}
		held, idle, peak, per := "–", "–", "–", "–"
		if m := sd.Memory; m != nil {
			held = fmtInt(int64(m.Held))
			if m.Unavailable == "" {
				idle, peak = fmtMB(report.Num(m.IdleBytes)), fmtMB(report.Num(m.PeakBytes))
				per = fmt.Sprintf("%.1f KiB", m.PerConnBytes/1024)
			} else {
				per = "n/a: " + m.Unavailable
			}
		}
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), txt(fmtDur(report.Num(sd.DelayS))), txt(held), txt(fmtNum(c.RPS, 0)),
			txt(fmtDur(p50)), txt(fmtDur(p99)), txt(fmtDur(p50 - report.Num(sd.DelayS))), txt(idle), txt(peak), txt(per)})
	}
	t.Notes = []string{"memory / held connection = (peak − idle working set of the proxy container) / connections held; working set as cAdvisor's container_memory_working_set_bytes (usage − inactive file)."}
	return t
}

func payloadTable(cells []*report.Cell) Table {
	t := Table{Caption: "payload: response (and upload) bodies",
		Header: []string{"cell", "body", "req/s", "MB/s", "body × 2xx/s MB/s", "consistent"},
		Right:  []bool{false, true, true, true, true, false}}
	for _, c := range cells {
		sd := c.ScenarioData
		if sd == nil || sd.BodyBytes == 0 {
			continue
		}
		want := report.NaN()
		if c.DurationS.Known() && c.DurationS > 0 {
			want = report.Num(float64(sd.BodyBytes) * float64(c.Classes.S2xx) / float64(c.DurationS))
		}
		body := fmtBytes(sd.BodyBytes)
		if sd.UploadBytes > 0 {
			body = "POST " + body + " echoed"
		}
		consistent := want.Known() && want > 0 && math.Abs(sd.BytesPerSec-float64(want)) <= 0.02*float64(want)
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), txt(body), txt(fmtNum(c.RPS, 0)),
			txt(fmtNum(report.Num(sd.BytesPerSec/1e6), 1)), txt(fmtNum(want/1e6, 1)), passCell(consistent)})
	}
	return t
}

func churnTable(cells []*report.Cell) Table {
	t := Table{Caption: "churn: a new connection per request",
		Header: []string{"cell", "connections/s", "TIME_WAIT at proxy port", "TIME_WAIT on host", "ephemeral ports", "port pressure", "tcp_tw_reuse"},
		Right:  []bool{false, true, true, true, true, true, true}}
	for _, c := range cells {
		sd := c.ScenarioData
		if sd == nil || sd.Churn == nil {
			continue
		}
		ch := sd.Churn
		t.Rows = append(t.Rows, []Cell{txt(cellName(c)), txt(fmt.Sprintf("%.0f", ch.ConnsPerSec)), txt(fmtInt(int64(ch.TimeWaitProxyPort))),
			txt(fmtInt(int64(ch.TimeWait))), txt(fmt.Sprintf("%d-%d", ch.PortRangeLow, ch.PortRangeHigh)),
			txt(fmtPct(report.Num(ch.PortPressure))), txt(strconv.Itoa(ch.TwReuse))})
	}
	t.Notes = []string{"Sampled right after the window; TIME_WAIT lasts 60 s on Linux. Port pressure = TIME_WAIT at the proxy port / ephemeral ports one client address has towards it; at 100 % new connections wait for a port (tcp_tw_reuse 2 lets loopback reuse them)."}
	return t
}

func ratio(a, b int64) report.Num {
	if b == 0 {
		return report.NaN()
	}
	return report.Num(float64(a) / float64(b))
}

func passCell(ok bool) Cell {
	if ok {
		return Cell{Text: "yes", Class: "pass"}
	}
	return Cell{Text: "no", Class: "fail"}
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
