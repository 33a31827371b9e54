package output

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
)

func rep(id string, start time.Time) *report.Report {
	return &report.Report{Schema: report.SchemaVersion, Run: id, Start: start, End: start.Add(time.Minute),
		Cells: []report.Cell{{Key: cellid.Key{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1},
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

// TestArchiveConcurrent: eight builds archiving at once (each its own runs)
// all end up in the index; the read-modify-write of manifest.json happens
// under the history lock.
func TestArchiveConcurrent(t *testing.T) {
	t.Parallel()
	res := t.TempDir()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const writers, each = 8, 4
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for k := range each {
				id := fmt.Sprintf("run-%d-%d", w, k)
				if err := Archive(res, rep(id, t0.Add(time.Duration(w*each+k)*time.Minute))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	h, err := ReadHistory(res)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range h.Runs {
		got[e.Run] = true
	}
	for w := range writers {
		for k := range each {
			if id := fmt.Sprintf("run-%d-%d", w, k); !got[id] {
				t.Errorf("history lost %s (index holds %d of %d runs)", id, len(h.Runs), writers*each)
			}
		}
	}
	if len(h.Runs) != writers*each {
		t.Errorf("index holds %d runs, want %d", len(h.Runs), writers*each)
	}
	ents, err := os.ReadDir(filepath.Join(res, "history"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left in results/history", e.Name())
		}
	}
}

func TestWritePartialLeavesReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	full := rep("r", t0)
	if err := Write(dir, full); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	poor := rep("r", t0)
	poor.Cells = nil
	paths, err := WritePartial(dir, poor)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || paths[0] != filepath.Join(dir, "report.partial.json") || paths[1] != filepath.Join(dir, "report.partial.md") {
		t.Fatalf("paths %v", paths)
	}
	if got, err := Read(paths[0]); err != nil || len(got.Cells) != 0 {
		t.Fatalf("partial report: %v, %+v", err, got)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if !bytes.Equal(before, after) {
		t.Fatal("WritePartial changed report.json")
	}
	if err := RemovePartial(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after RemovePartial: %v", p, err)
		}
	}
	if err := RemovePartial(dir); err != nil {
		t.Fatalf("RemovePartial without partial files: %v", err)
	}
}
