package render

import (
	"path/filepath"
	"strings"
	"testing"

	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// scenarioReport is a report of a real scenario run (testdata: the manifest
// of `loadgen run -scenarios all -tier 2s -origins fast` on the offline
// stack), built the way build.mergeManifest does for the scenario fields.
func scenarioReport(t *testing.T) *report.Report {
	t.Helper()
	m, err := manifest.Read(filepath.Join("testdata", "scenarios-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := &report.Report{Run: m.Run, Support: report.SupportMatrix(m)}
	for _, mc := range m.Cells {
		if mc.Status == manifest.CellSkipped {
			continue
		}
		d := mc.End.Sub(mc.Start).Seconds()
		c := report.Cell{Key: mc.Key,
			DurationS: report.Num(d), RPS: report.Num(float64(mc.Requests) / d), Codes: mc.Codes, ScenarioData: mc.ScenarioData,
			Latency: report.Latency{Exact: &report.Exact{P50: report.Num(mc.Latency.P50), P99: report.Num(mc.Latency.P99)}}}
		report.Classify(&c)
		r.Cells = append(r.Cells, c)
	}
	return r
}

func TestScenarioSectionGolden(t *testing.T) {
	t.Parallel()
	sec, ok := scenarioSection(scenarioReport(t))
	if !ok {
		t.Fatal("no scenario section for a run with every scenario")
	}
	var b strings.Builder
	if err := Markdown(&b, Doc{Title: "scenarios", Sections: []Section{sec}}); err != nil {
		t.Fatal(err)
	}
	golden(t, "scenarios.md", []byte(b.String()))
}

func TestScenarioSectionVerdicts(t *testing.T) {
	t.Parallel()
	r := scenarioReport(t)
	sec, _ := scenarioSection(r)
	tables := map[string]Table{}
	for _, tb := range sec.Tables {
		tables[strings.SplitN(tb.Caption, ":", 2)[0]] = tb
	}
	tests := []struct {
		table string
		rows  int
		col   int // verdict column, -1 = none
	}{
		{"Support matrix (proxy × scenario)", 9, -1},
		{"auth", 3, 7},
		{"ratelimit", 3, 6},
		{"slow", 4, -1},
		{"payload", 16, 5},
		{"churn", 4, -1},
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			t.Parallel()
			tb, ok := tables[tt.table]
			if !ok || len(tb.Rows) != tt.rows {
				t.Fatalf("table %q: %d rows, want %d", tt.table, len(tb.Rows), tt.rows)
			}
			for _, row := range tb.Rows {
				if tt.col >= 0 && row[tt.col].Text != "yes" {
					t.Errorf("%s: %s judged %q, the run was correct", tt.table, row[0].Text, row[tt.col].Text)
				}
			}
		})
	}
	na := 0
	for _, row := range tables["Support matrix (proxy × scenario)"].Rows {
		for _, c := range row {
			if strings.HasPrefix(c.Text, "n/a") {
				na++
			}
		}
	}
	if na != 2 {
		t.Errorf("%d n/a cells, want traefik auth and caddy ratelimit", na)
	}
}

func TestScenarioSectionAbsentForSimpleRuns(t *testing.T) {
	t.Parallel()
	r := &report.Report{Support: []report.Support{{Proxy: "nginx", Scenario: "simple", Status: report.SupportNative}}}
	if _, ok := scenarioSection(r); ok {
		t.Error("a run of simple cells only got a scenario section")
	}
}

func TestTLSCostTable(t *testing.T) {
	t.Parallel()
	r := &report.Report{TLSCost: []report.TLSCost{
		{Proxy: "nginx", Origin: "fast", Tier: "2s", ClearCPUPerRequest: 50e-6, TLSCPUPerRequest: 75e-6, Overhead: 0.5, ClearRPS: 10000, TLSRPS: 8000,
			Comparable: true, HandshakeRPS: 1000, HandshakeCores: 0.8, HandshakesPerCore: 1250},
		{Proxy: "caddy", Origin: "fast", Tier: "2s", ClearCPUPerRequest: 200e-6, TLSCPUPerRequest: 250e-6, Overhead: report.NaN(), ClearRPS: 5000, TLSRPS: 4000,
			Note: "not comparable: x", HandshakeRPS: report.NaN(), HandshakeCores: report.NaN(), HandshakesPerCore: report.NaN()},
	}}
	tb, ok := tlsCostTable(r)
	if !ok || len(tb.Rows) != 2 || len(tb.Rows[0]) != len(tb.Header) {
		t.Fatalf("table %+v", tb)
	}
	if got := rowText(tb.Rows[0]); got != "nginx|fast / 2s|10000|50.0|8000|75.0|+50 %|1000|0.80|1250" {
		t.Errorf("nginx row %s", got)
	}
	if c := tb.Rows[1][6]; c.Text != "–" || c.Class != "suspect" || !strings.Contains(strings.Join(tb.Notes, " "), "caddy fast / 2s: not comparable") {
		t.Errorf("caddy overhead %+v, notes %q", c, tb.Notes)
	}
	if _, ok := tlsCostTable(&report.Report{}); ok {
		t.Error("a TLS cost table without rows")
	}
	sec, ok := scenarioSection(r)
	if !ok || sec.Tables[len(sec.Tables)-1].Caption != tb.Caption {
		t.Errorf("the scenario section does not end with the TLS cost table (%v)", ok)
	}
}

// The handshake table: full and resumed side by side with the ratio, n/a
// with its reason where a side has no cell, Prometheus's estimates noted
// (golden, Markdown and HTML from the same table); the section ends with it.
func TestHandshakeSplitTable(t *testing.T) {
	t.Parallel()
	r := &report.Report{TLSHandshakes: []report.HandshakeSplit{
		{Proxy: "nginx", Origin: "fast", Tier: "2s",
			Full:     report.HandshakeSide{Cells: 2, Count: 10200, P50: 0.0011, P99: 0.0032, Source: report.HandshakeExact},
			Resumed:  report.HandshakeSide{Cells: 2, Count: 18100, P50: 0.0005, P99: 0.0012, Source: report.HandshakeExact},
			RatioP50: 0.0005 / 0.0011, RatioP99: 0.0012 / 0.0032},
		{Proxy: "caddy", Origin: "fast", Tier: "2s",
			Full:     report.HandshakeSide{Cells: 1, Count: 3000, P50: 0.002, P99: 0.008, Source: report.HandshakePrometheus},
			Resumed:  report.HandshakeSide{P50: report.NaN(), P99: report.NaN(), NA: "preflight: caddy TLS 127.0.0.1:9884 (ALPN http/1.1, TLS 1.3): connection refused"},
			RatioP50: report.NaN(), RatioP99: report.NaN()},
	}}
	tb, ok := handshakeSplitTable(r)
	if !ok || len(tb.Rows) != 2 || len(tb.Rows[0]) != len(tb.Header) || len(tb.Rows[1]) != len(tb.Header) {
		t.Fatalf("table %+v", tb)
	}
	if got := rowText(tb.Rows[0]); got != "nginx|fast / 2s|10,200|1.1 ms|3.2 ms|18,100|500 µs|1.2 ms|0.45×|0.38×" {
		t.Errorf("nginx row %s", got)
	}
	if c := tb.Rows[1][5]; c.Text != "n/a" || c.Class != "suspect" {
		t.Errorf("caddy resumed %+v", c)
	}
	sec, ok := scenarioSection(r)
	if !ok || sec.Tables[len(sec.Tables)-1].Caption != tb.Caption {
		t.Fatalf("the scenario section does not end with the handshake table (%v)", ok)
	}
	var md strings.Builder
	if err := Markdown(&md, Doc{Title: "handshakes", Sections: []Section{sec}}); err != nil {
		t.Fatal(err)
	}
	golden(t, "handshakes.md", []byte(md.String()))
	var html strings.Builder
	if err := HTML(&html, Doc{Title: "handshakes", Sections: []Section{sec}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TLS handshake latency: full against resumed", "0.45×", "caddy fast / 2s resumed: n/a: preflight"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if _, ok := handshakeSplitTable(&report.Report{}); ok {
		t.Error("a handshake table without rows")
	}
}

// rowText is a table row's texts joined by |.
func rowText(row []Cell) string {
	texts := make([]string, len(row))
	for i, c := range row {
		texts[i] = c.Text
	}
	return strings.Join(texts, "|")
}
