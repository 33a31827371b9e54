package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"proxybench/internal/manifest"
)

func writeRun(t *testing.T, results, run, status string, started time.Time) *manifest.Manifest {
	t.Helper()
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: run, Status: status, Started: started,
		Plan:  json.RawMessage(`{"tier":"quick","proxies":["nginx","caddy"],"origins":["fast"]}`),
		Cells: []manifest.Cell{{ID: "nginx.fast.simple.quick.r1"}, {ID: "caddy.fast.simple.quick.r1"}}}
	if err := manifest.Write(filepath.Join(results, run, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHistory: the index is created, updated in place, and rebuilt from the
// runs' manifests when it is missing or corrupt.
func TestHistory(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		before func(results string)
	}{
		{"missing", func(string) {}},
		{"corrupt", func(r string) {
			os.MkdirAll(filepath.Join(r, "history"), 0o755)
			os.WriteFile(HistoryPath(r), []byte(`{"schema":1,"runs":[{"run":`), 0o644)
		}},
		{"stale", func(r string) { // knows only run b, as running
			h := &History{Schema: manifest.SchemaVersion, Runs: []HistoryEntry{{Run: "b", Status: "running"}}}
			if err := writeHistory(r, h, t0); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			results := t.TempDir()
			writeRun(t, results, "a", "done", t0)
			b := writeRun(t, results, "b", "interrupted", t0.Add(time.Hour))
			os.WriteFile(filepath.Join(results, "notes.txt"), []byte("not a run"), 0o644)
			os.MkdirAll(filepath.Join(results, "broken"), 0o755)
			os.WriteFile(filepath.Join(results, "broken", "manifest.json"), []byte("{"), 0o644)
			tc.before(results)
			if err := UpdateHistory(results, b, t0.Add(2*time.Hour)); err != nil {
				t.Fatal(err)
			}
			h, err := readHistory(results)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"a", "b"}
			if tc.name == "stale" {
				want = []string{"b"} // a valid index is trusted, not rescanned
			}
			if len(h.Runs) != len(want) {
				t.Fatalf("runs %+v, want %v", h.Runs, want)
			}
			for i, e := range h.Runs {
				if e.Run != want[i] {
					t.Errorf("run %d %s, want %s", i, e.Run, want[i])
				}
			}
			last := h.Runs[len(h.Runs)-1]
			if last.Status != "interrupted" || last.Cells != 2 || last.Tier != "quick" || last.Path != "b/manifest.json" ||
				len(last.Proxies) != 2 || last.Origins[0] != "fast" || !h.Updated.Equal(t0.Add(2*time.Hour)) {
				t.Errorf("entry %+v", last)
			}
		})
	}
}
