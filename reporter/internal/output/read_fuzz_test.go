package output

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
)

// fullReport has a value in most fields a report can carry, nulls included.
func fullReport() *report.Report {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := rep("fz", t0)
	de := t0.Add(61 * time.Second)
	c := &r.Cells[0]
	c.Codes, c.ErrorReasons, c.Expected = map[string]int64{"200": 10}, map[string]int64{"timeout": 1}, []string{"2xx"}
	c.LateCodes, c.DrainEnd = map[string]int64{"200": 1}, &de
	c.Latency = report.Latency{Source: "native", Count: 10, Mean: 0.001, P50: 0.001, P90: report.NaN(), P99: 0.002, Max: 0.01,
		Exact: &report.Exact{Mean: 0.001, P50: 0.001, P99: 0.002, Max: report.NaN()}}
	c.GC = &report.GC{Cycles: 3, PauseMax: report.NaN()}
	c.Series = report.TimeSeries{T: []float64{0, 1}, CPU: []float64{0.5, -0}}
	c.Validity = report.Validity{Verdict: report.Suspect, Flags: []report.Flag{{Code: "few_scrapes", Severity: report.Suspect, Reason: "2 scrapes"}}}
	r.Groups = []report.Group{{Key: c.GroupKey(), Repeats: 1, Valid: 1, Metrics: map[string]report.Stat{"rps": {N: 1, Mean: 5, Median: 5, Stddev: report.NaN(), Values: []report.Num{5}}}}}
	r.NotRun = []report.NotRun{{Key: cellid.New("caddy", "go", "simple", "quick", 1), Reason: "route broken"}}
	r.Notes = []string{"note"}
	r.Environment = report.Environment{Proxies: []report.ProxyEnv{{Proxy: "nginx", CPULimitCores: 1, MemLimitBytes: report.NaN()}}, Host: map[string]string{"os": "linux"}}
	return r
}

// FuzzRead: report.json as `reporter diff` (diff.Load) and the rebuild
// guard (build.Save) read it. Any bytes: an error naming the file and the
// command that rebuilds it, never a panic; a report it accepts encodes and
// reads back to the same bytes.
func FuzzRead(f *testing.F) {
	js, err := EncodeJSON(fullReport())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(js)
	f.Add(js[:len(js)/3])
	for _, s := range []string{
		"", "null", "[]", "{}", `{"schema":"proxybench.report/v1"}`, `{"schema":"proxybench.report/v0","run":"x"}`,
		`{"schema":"proxybench.report/v1","cells":[{"rps":"NaN"}]}`, `{"schema":"proxybench.report/v1","cells":[{"rps":NaN}]}`,
		`{"schema":"proxybench.report/v1","cells":[{"rps":1e999}]}`, `{"schema":"proxybench.report/v1","cells":[{"rps":null,"requests":1e30}]}`,
		`{"schema":"proxybench.report/v1","cells":[null,{"latency":{"exact":null}}]}`, `{"schema":1}`,
		`{"schema":"proxybench.report/v1","groups":[{"metrics":{"rps":{"values":[null,1,-0]}}}]}`,
		`{"schema":"proxybench.report/v1","start":"2026-13-01T00:00:00Z"}`, `{"schema":"proxybench.report/v1","run":"a\nb"}`,
	} {
		f.Add([]byte(s))
	}
	dir := filepath.Join(f.TempDir(), "fz")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "report.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Read(p)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, p) || !strings.Contains(msg, "make report RUN=") {
				t.Fatalf("error %q does not name %s and how to rebuild it", msg, p)
			}
			return
		}
		if r.Schema != report.SchemaVersion {
			t.Fatalf("accepted schema %q", r.Schema)
		}
		js, err := EncodeJSON(r)
		if err != nil {
			t.Fatalf("an accepted report does not encode: %v", err)
		}
		if err := os.WriteFile(p, js, 0o644); err != nil {
			t.Fatal(err)
		}
		again, err := Read(p)
		if err != nil {
			t.Fatalf("an encoded report does not read back: %v\n%s", err, js)
		}
		if js2, _ := EncodeJSON(again); !bytes.Equal(js, js2) {
			t.Fatalf("report does not round-trip:\n%s\n%s", js, js2)
		}
	})
}

// FuzzReadHistory: results/history/manifest.json as `reporter history`
// and Archive read it: an error naming the file, never a panic, and an
// index that decodes is one Archive can extend.
func FuzzReadHistory(f *testing.F) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := History{Schema: HistorySchema, Runs: []HistoryEntry{{Run: "a", Start: t0, End: t0.Add(time.Minute), Generated: t0,
		Summary: report.Summary{Cells: 1, Valid: 1}, Tiers: []string{"quick"}, Proxies: []string{"nginx"}, Report: "a/report.json"}}}
	b, err := json.Marshal(h)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{"", "null", "{}", `{"runs":null}`, `{"runs":[null]}`, `{"runs":[{"start":1}]}`, `{"runs":{}}`, `{"schema":5}`} {
		f.Add([]byte(s))
	}
	res := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		idx := filepath.Join(res, "history", "manifest.json")
		if err := os.MkdirAll(filepath.Dir(idx), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(idx, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, rerr := ReadHistory(res)
		if rerr != nil && !strings.Contains(rerr.Error(), idx) {
			t.Fatalf("error %q does not name %s", rerr, idx)
		}
		aerr := Archive(res, rep("new", t0))
		switch {
		case rerr == nil && aerr != nil:
			t.Fatalf("a readable index cannot be extended: %v", aerr)
		case rerr != nil && (aerr == nil || !strings.Contains(aerr.Error(), idx) || !strings.Contains(aerr.Error(), "move it aside")):
			t.Fatalf("Archive over an unreadable index: %v, want an error naming %s and what to do", aerr, idx)
		case aerr == nil:
			h, err := ReadHistory(res)
			if err != nil || !slices.ContainsFunc(h.Runs, func(e HistoryEntry) bool { return e.Run == "new" }) || h.Schema != HistorySchema {
				t.Fatalf("after Archive the index reads %+v, %v", h, err)
			}
		}
	})
}
