package output

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/reporter/internal/report"
)

func rep(id string, start time.Time) *report.Report {
	return &report.Report{Schema: report.SchemaVersion, Run: id, Start: start, End: start.Add(time.Minute),
		Cells: []report.Cell{{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1,
			RPS: report.NaN(), ErrorRatio: 0.5, Validity: report.Validity{Verdict: report.Valid}}}}
}

func TestWriteReadArchive(t *testing.T) {
	t.Parallel()
	res := t.TempDir()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, r := range []*report.Report{rep("late", t0.Add(time.Hour)), rep("early", t0), rep("late", t0.Add(time.Hour))} {
		if err := Write(filepath.Join(res, r.Run), r); err != nil {
			t.Fatal(err)
		}
		if err := Archive(res, r); err != nil {
			t.Fatal(err)
		}
	}
	h, err := ReadHistory(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 2 || h.Runs[0].Run != "early" || h.Runs[1].Run != "late" || h.Schema != HistorySchema {
		t.Fatalf("history %+v: want early then late, once each", h)
	}
	got, err := Read(filepath.Join(res, "history", "late", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Cells[0].RPS.Known() || got.Cells[0].ErrorRatio != 0.5 {
		t.Fatalf("round trip lost null/number: %+v", got.Cells[0])
	}
	for _, f := range []string{"report.md", "report.html", "figures/latency.svg", "figures/rps.svg", "figures/resources.svg"} {
		if _, err := os.Stat(filepath.Join(res, "early", f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
}

func TestReadRejectsOtherSchema(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(p, []byte(`{"schema":"proxybench.report/v0","run":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "make report RUN=x") {
		t.Fatalf("err = %v, want a schema error telling how to rebuild", err)
	}
}
