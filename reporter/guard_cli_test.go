package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/reporter/internal/output"
)

// TestBuildKeepsRicherReport: `reporter build` with Prometheus unreachable
// leaves a report.json that has server-side cells, writes the poorer report
// to report.partial.*, names both on stderr, leaves the history alone and
// exits 0; -force replaces it.
func TestBuildKeepsRicherReport(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	writeRun(t, results, "g", 0.010)
	prom := closedProm(t)
	build := func(extra ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"build", "-run", "g", "-results", results, "-prom", prom}, extra...), &out, &errb, time.Now)
		return code, out.String(), errb.String()
	}
	if code, out, errOut := build(); code != exitOK {
		t.Fatalf("first build: exit %d\n%s%s", code, out, errOut)
	}
	// Make the stored report the richer one: as if Prometheus had served it.
	dir := filepath.Join(results, "g")
	r, err := output.Read(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	r.Cells[0].ServerSide = true
	if err := output.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	rich, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	hist, _ := os.ReadFile(filepath.Join(results, "history", "manifest.json"))

	code, out, errOut := build()
	if code != exitOK {
		t.Fatalf("poorer rebuild: exit %d, want 0\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"WARNING", filepath.Join(dir, "report.json"), filepath.Join(dir, "report.partial.json"), filepath.Join(dir, "report.partial.md"),
		"1 cells, 1 server-side", "1 cells, 0 server-side"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "report.json")); !bytes.Equal(now, rich) {
		t.Error("report.json was replaced by the poorer rebuild")
	}
	if now, _ := os.ReadFile(filepath.Join(results, "history", "manifest.json")); !bytes.Equal(now, hist) {
		t.Error("history index changed by a rebuild that was not kept")
	}
	if _, err := output.Read(filepath.Join(dir, "report.partial.json")); err != nil {
		t.Errorf("report.partial.json: %v", err)
	}

	if code, out, errOut := build("-force"); code != exitOK || strings.Contains(errOut, "WARNING") {
		t.Fatalf("forced rebuild: exit %d\n%s%s", code, out, errOut)
	}
	if r, err := output.Read(filepath.Join(dir, "report.json")); err != nil || r.Cells[0].ServerSide {
		t.Errorf("after -force report.json should be the new, manifest-only report: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.partial.json")); !os.IsNotExist(err) {
		t.Errorf("report.partial.json left after a full rebuild: %v", err)
	}
}
