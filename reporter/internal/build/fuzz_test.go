package build

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
)

var fuzzNow = func() time.Time { return time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC) }

// fuzzManifest is a small manifest of a finished run: one ok cell with
// exact latency, one failed, one skipped.
func fuzzManifest() []byte {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: "fz", Status: "done", Started: t0, Updated: t0,
		Plan:     []byte(`{"slo":{"p99":"2ms","error_ratio":0.01}}`),
		Versions: map[string]string{"nginx": "nginx/1.22.1"},
		Host:     manifest.Host{Hostname: "lab", CPUs: 2, Kernel: "6.1"},
		Cells: []manifest.Cell{
			{Key: cellid.Key{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1}, DurationS: 5,
				Start: t0, End: t0.Add(5 * time.Second), Status: manifest.CellOK, Requests: 5000,
				Codes: map[string]int64{"200": 4990, "502": 10}, Latency: manifest.Latency{Count: 5000, Mean: 0.001, P50: 0.0009, P90: 0.0012,
					P95: 0.0013, P99: 0.0025, P999: 0.004, Max: 0.009}},
			{Key: cellid.Key{ID: "nginx.fast.simple.quick.r2", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 2},
				Start: t0.Add(8 * time.Second), End: t0.Add(13 * time.Second), Status: manifest.CellFailed, Reason: "proxy died"},
			{Key: cellid.Key{ID: "caddy.go.auth.quick.r1", Proxy: "caddy", Origin: "go", Scenario: "auth", Tier: "quick", Repeat: 1}, Status: manifest.CellSkipped, Reason: "n/a"},
		}}
	b, _ := json.Marshal(m)
	return b
}

// FuzzBuildFromManifest: the reporter reading results/<run>/manifest.json
// (the plan's settings in it) with Prometheus out of the picture, any
// bytes. Report refuses with an error naming the file, never panics; a
// report it builds counts its cells, saves, and reads back as it was
// encoded.
func FuzzBuildFromManifest(f *testing.F) {
	m := fuzzManifest()
	f.Add(m)
	plan := []byte(`"plan":{"slo":{"p99":"2ms","error_ratio":0.01}}`)
	if !bytes.Contains(m, plan) {
		f.Fatalf("the seed manifest has no %s to vary", plan)
	}
	for _, p := range []string{`"plan":{"slo":{"p99":"soon"}}`, `"plan":{"slo":null}`, `"plan":{"slo":{"p99":"-1s","error_ratio":-5}}`,
		`"settings":{"slo":{"p99":"soon"}},"plan":{}`, `"settings":{"timeout":"10"},"plan":{}`, `"settings":{"margin":0.1,"isolate":true},"plan":{}`} {
		f.Add(bytes.Replace(m, plan, []byte(p), 1))
	}
	f.Add(m[:len(m)/2])
	f.Add(bytes.Replace(m, []byte(`"requests":5000`), []byte(`"requests":-5000`), 1))
	f.Add(bytes.Replace(m, []byte(`"count":5000`), []byte(`"count":0`), 1))
	f.Add(bytes.Replace(m, []byte(`"duration_seconds":5`), []byte(`"duration_seconds":0`), 1))
	for _, s := range []string{"", "{}", `{"schema":1}`, `{"schema":1,"cells":[{}]}`, `{"schema":1,"cells":[{"id":"a"},{"id":"a"}]}`,
		`{"schema":1,"cells":[{"status":"ok","start":"2026-01-01T00:00:10Z","end":"2026-01-01T00:00:00Z"}]}`, `{"schema":1,"plan":"x"}`} {
		f.Add([]byte(s))
	}
	dir := filepath.Join(f.TempDir(), "fz")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, man []byte) {
		mp := filepath.Join(dir, "manifest.json")
		if err := os.WriteFile(mp, man, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Report(context.Background(), Config{Run: "fz", RunDir: dir, Thresholds: report.DefaultThresholds, Now: fuzzNow})
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, mp) {
				t.Fatalf("error %q does not name %s", msg, mp)
			}
			return
		}
		if s := r.Summary; s.Cells != len(r.Cells) || s.Valid+s.Suspect+s.Invalid != s.Cells || s.SLOFailed > s.Cells {
			t.Fatalf("summary %+v of %d cells", s, len(r.Cells))
		}
		js, err := output.EncodeJSON(r)
		if err != nil {
			t.Fatalf("a built report does not encode: %v", err)
		}
		os.Remove(filepath.Join(dir, "report.json"))
		if _, err := Save(dir, r, false); err != nil {
			t.Fatalf("save: %v", err)
		}
		back, err := output.Read(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatalf("the saved report does not read back: %v", err)
		}
		if js2, _ := output.EncodeJSON(back); !bytes.Equal(js, js2) {
			t.Fatalf("report does not round-trip:\n%s\n%s", js, js2)
		}
	})
}

// FuzzSave: the rebuild guard reading the report.json a rebuild would
// replace, any bytes. It never panics and never fails for it: an unreadable
// report is replaced; a readable one of the same run that the rebuild is
// poorer than stays byte for byte, the rebuild going to report.partial.*;
// otherwise it is replaced by the rebuild.
func FuzzSave(f *testing.F) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	exact := &report.Exact{P99: 0.002}
	cell := func(id string, server bool, ex *report.Exact) report.Cell {
		return report.Cell{Key: cellid.Key{ID: id, Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1}, Start: t0, End: t0.Add(5 * time.Second),
			DurationS: 5, ServerSide: server, RPS: 100, Latency: report.Latency{P99: 0.002, Exact: ex}, Validity: report.Validity{Verdict: report.Valid}}
	}
	rebuild := &report.Report{Schema: report.SchemaVersion, Run: "fz", Start: t0, End: t0.Add(5 * time.Second),
		Cells: []report.Cell{cell("nginx.fast.simple.quick.r1", false, exact)}}
	report.Tally(rebuild)
	richer := &report.Report{Schema: report.SchemaVersion, Run: "fz", Start: t0, End: t0.Add(5 * time.Second),
		Cells: []report.Cell{cell("nginx.fast.simple.quick.r1", true, exact), cell("nginx.fast.simple.quick.r2", true, nil)}}
	for _, r := range []*report.Report{rebuild, richer} {
		js, err := output.EncodeJSON(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
		f.Add(bytes.Replace(js, []byte(`"run": "fz"`), []byte(`"run": "other"`), 1))
	}
	for _, s := range []string{"", "{", "null", `{"schema":"proxybench.report/v1","run":"fz","cells":[{"server_side":true},{"server_side":true}]}`,
		`{"schema":"proxybench.report/v1","run":"fz","cells":[{"latency":{"exact":{}}},{"latency":{"exact":null}}]}`} {
		f.Add([]byte(s))
	}
	want, err := output.EncodeJSON(rebuild)
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, old []byte) {
		p := filepath.Join(dir, "report.json")
		if err := os.WriteFile(p, old, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, n := range output.Partial {
			os.Remove(filepath.Join(dir, n))
		}
		prev, readErr := output.Read(p)
		s, err := Save(dir, rebuild, false)
		if err != nil {
			t.Fatalf("save over %q: %v", old, err)
		}
		now, _ := os.ReadFile(p)
		keep := readErr == nil && prev.Run == rebuild.Run && RichnessOf(rebuild).PoorerThan(RichnessOf(prev))
		switch {
		case keep && (s.Replaced || !bytes.Equal(now, old) || len(s.Partial) != 2):
			t.Fatalf("a richer report (%v) was not kept: %+v", RichnessOf(prev), s)
		case !keep && (!s.Replaced || !bytes.Equal(now, want)):
			t.Fatalf("report.json was not replaced by the rebuild: %+v", s)
		}
	})
}
