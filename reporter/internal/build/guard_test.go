package build

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/internal/promapi"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/synth"
)

// refusingURL is a 127.0.0.1 port this test holds for its whole life: every
// connection is accepted and closed at once, so Prometheus is "unreachable"
// for real and no other process can take the port meanwhile.
func refusingURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return "http://" + l.Addr().String()
}

// writeSynthManifest stores the loadgen's manifest of run r as run id in
// dir: counts and exact latency per cell, as a real run leaves it.
func writeSynthManifest(t *testing.T, dir, id string, r *synth.Run) {
	t.Helper()
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: id, Status: "done", Started: r.Start, Updated: r.End()}
	for _, c := range r.Cells {
		var n int64
		for _, v := range c.Codes {
			n += v
		}
		l := c.Latencies
		q := func(p float64) float64 { return l[int(p*float64(len(l)-1))] }
		m.Cells = append(m.Cells, manifest.Cell{Key: cellid.Key{ID: c.ID, Proxy: c.Proxy, Origin: c.Origin, Scenario: "simple", Tier: "quick", Repeat: c.Repeat},
			Start: c.Start, End: c.End, Concurrency: c.Concurrency, Status: manifest.CellOK, Requests: n, Codes: c.Codes, ErrorReasons: c.Reasons,
			Latency: manifest.Latency{Count: int64(len(l)), Mean: mean(l), P50: q(.5), P90: q(.9), P95: q(.95), P99: q(.99), P999: q(.999), Max: l[len(l)-1]}})
	}
	if err := manifest.Write(filepath.Join(dir, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
}

// TestSaveKeepsRicherReport: a report built with Prometheus stands when a
// rebuild finds Prometheus unreachable, or no longer holding the run's
// windows; the poorer rebuild goes to report.partial.*, and a rebuild at
// least as rich replaces the report and clears the partial files.
func TestSaveKeepsRicherReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	t.Parallel()
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Second).UTC()
	run := synth.New(synth.Options{ID: "guard-1", Start: start, Proxies: []string{"nginx", "traefik"}, Origins: []string{"fast", "go"}, Repeats: 1, DurationS: 5})
	prom := startProm(t, run)
	dir := t.TempDir()
	writeSynthManifest(t, dir, run.ID, run)
	build := func(c *promapi.Client, url, id, dir string) *report.Report {
		t.Helper()
		r, err := Report(context.Background(), Config{Prom: c, PromURL: url, Run: id, RunDir: dir, Thresholds: report.DefaultThresholds, Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	rich := build(prom, "test", run.ID, dir)
	want := Richness{Cells: 4, ServerSide: 4, Exact: 4}
	if got := RichnessOf(rich); got != want {
		t.Fatalf("report from Prometheus and manifest: %v, want %v", got, want)
	}
	s, err := Save(dir, rich, false)
	if err != nil || !s.Replaced || s.Old != (Richness{}) {
		t.Fatalf("first save: %+v, %v; want it written", s, err)
	}
	orig, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}

	// Prometheus unreachable: the cells come from the manifest alone.
	down := refusingURL(t)
	dc, err := promapi.New(down, nil)
	if err != nil {
		t.Fatal(err)
	}
	poor := build(dc, down, run.ID, dir)
	if got := RichnessOf(poor); got != (Richness{Cells: 4, ServerSide: 0, Exact: 4}) || poor.Sources.PrometheusOK {
		t.Fatalf("report without Prometheus: %v (reachable %v)", got, poor.Sources.PrometheusOK)
	}
	s, err = Save(dir, poor, false)
	if err != nil {
		t.Fatal(err)
	}
	wantPartial := []string{filepath.Join(dir, "report.partial.json"), filepath.Join(dir, "report.partial.md")}
	if s.Replaced || s.Old != want || s.New.ServerSide != 0 || len(s.Partial) != 2 || s.Partial[0] != wantPartial[0] || s.Partial[1] != wantPartial[1] {
		t.Fatalf("save of the poorer report: %+v; want the original kept and %v written", s, wantPartial)
	}
	checkKept(t, dir, orig)
	p, err := output.Read(wantPartial[0])
	if err != nil || RichnessOf(p).ServerSide != 0 || p.Sources.PrometheusOK {
		t.Fatalf("report.partial.json: %v, %+v", err, p)
	}
	if md, err := os.ReadFile(wantPartial[1]); err != nil || !bytes.Contains(md, []byte("unreachable")) {
		t.Fatalf("report.partial.md: %v (want the unreachable note in it)", err)
	}

	// Prometheus up but without the run's windows (out of retention): the
	// same run under another id a day earlier, when Prometheus held nothing.
	gone := t.TempDir()
	earlier := *run
	earlier.Cells = append([]synth.Cell(nil), run.Cells...)
	for i := range earlier.Cells {
		earlier.Cells[i].Start = earlier.Cells[i].Start.Add(-24 * time.Hour)
		earlier.Cells[i].End = earlier.Cells[i].End.Add(-24 * time.Hour)
	}
	writeSynthManifest(t, gone, "guard-gone", &earlier)
	old := *rich
	old.Run = "guard-gone"
	if err := output.Write(gone, &old); err != nil {
		t.Fatal(err)
	}
	origGone, _ := os.ReadFile(filepath.Join(gone, "report.json"))
	poor2 := build(prom, "test", "guard-gone", gone)
	if got := RichnessOf(poor2); got.ServerSide != 0 || got.Cells != 4 || !poor2.Sources.PrometheusOK {
		t.Fatalf("report of a run Prometheus lacks: %v (reachable %v)", got, poor2.Sources.PrometheusOK)
	}
	if s, err := Save(gone, poor2, false); err != nil || s.Replaced {
		t.Fatalf("save of a run Prometheus lacks: %+v, %v; want the original kept", s, err)
	}
	checkKept(t, gone, origGone)

	// A rebuild as rich as the original replaces it and clears the partials.
	again := build(prom, "test", run.ID, dir)
	s, err = Save(dir, again, false)
	if err != nil || !s.Replaced || s.Old != want {
		t.Fatalf("save of an equally rich rebuild: %+v, %v; want it written", s, err)
	}
	for _, p := range wantPartial {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after a full rebuild: %v", p, err)
		}
	}
	// -force replaces even a richer report.
	if s, err := Save(gone, poor2, true); err != nil || !s.Replaced {
		t.Fatalf("forced save: %+v, %v", s, err)
	}
	if r, err := output.Read(filepath.Join(gone, "report.json")); err != nil || RichnessOf(r).ServerSide != 0 {
		t.Fatalf("after -force report.json should be the new one: %v", err)
	}
}

func checkKept(t *testing.T, dir string, orig []byte) {
	t.Helper()
	now, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil || !bytes.Equal(now, orig) {
		t.Fatalf("report.json changed (%v): the richer report must stand", err)
	}
}

func TestRichnessPoorerThan(t *testing.T) {
	t.Parallel()
	base := Richness{Cells: 10, ServerSide: 10, Exact: 10}
	for _, tc := range []struct {
		n     Richness
		worse bool
	}{
		{base, false},
		{Richness{Cells: 12, ServerSide: 12, Exact: 12}, false},
		{Richness{Cells: 9, ServerSide: 9, Exact: 9}, true},   // a cell lost
		{Richness{Cells: 10, ServerSide: 0, Exact: 10}, true}, // Prometheus gone
		{Richness{Cells: 10, ServerSide: 10, Exact: 0}, true}, // manifest gone
		{Richness{Cells: 12, ServerSide: 8, Exact: 12}, true}, // more cells, yet some lost their series
	} {
		if got := tc.n.PoorerThan(base); got != tc.worse {
			t.Errorf("%v PoorerThan %v = %v, want %v", tc.n, base, got, tc.worse)
		}
	}
}
