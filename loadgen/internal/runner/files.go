package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"proxybench/internal/manifest"
)

// writeAtomic stores b at path through a synced temp file and a rename, so
// a crash leaves the previous version whole.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// History is results/history/manifest.json: one entry per run.
type History struct {
	Schema  int            `json:"schema"`
	Updated time.Time      `json:"updated"`
	Runs    []HistoryEntry `json:"runs"`
}

// HistoryEntry summarises one run.
type HistoryEntry struct {
	Run     string    `json:"run"`
	Started time.Time `json:"started"`
	Status  string    `json:"status"`
	Tier    string    `json:"tier"`
	Proxies []string  `json:"proxies"`
	Origins []string  `json:"origins"`
	Cells   int       `json:"cells"`
	Path    string    `json:"path"` // the run's manifest, relative to the results directory
}

// HistoryPath is where the index lives under the results directory.
func HistoryPath(results string) string { return filepath.Join(results, "history", "manifest.json") }

// UpdateHistory adds or replaces m's entry. A missing or unreadable index is
// rebuilt from every results/*/manifest.json, so the index can always be
// deleted safely.
func UpdateHistory(results string, m *manifest.Manifest, now time.Time) error {
	h, err := readHistory(results)
	if err != nil {
		if h, err = RebuildHistory(results); err != nil {
			return err
		}
	}
	e := entry(m)
	i := slices.IndexFunc(h.Runs, func(x HistoryEntry) bool { return x.Run == e.Run })
	if i >= 0 {
		h.Runs[i] = e
	} else {
		h.Runs = append(h.Runs, e)
	}
	return writeHistory(results, h, now)
}

func readHistory(results string) (*History, error) {
	b, err := os.ReadFile(HistoryPath(results))
	if err != nil {
		return nil, err
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("decode %s: %w", HistoryPath(results), err)
	}
	if h.Schema != manifest.SchemaVersion {
		return nil, fmt.Errorf("%s has schema %d", HistoryPath(results), h.Schema)
	}
	return &h, nil
}

// RebuildHistory scans results/*/manifest.json; unreadable manifests are
// left out.
func RebuildHistory(results string) (*History, error) {
	h := &History{Schema: manifest.SchemaVersion, Runs: []HistoryEntry{}}
	dirs, err := os.ReadDir(results)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("rebuild history: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "history" {
			continue
		}
		m, err := manifest.Read(filepath.Join(results, d.Name(), "manifest.json"))
		if err != nil {
			continue
		}
		h.Runs = append(h.Runs, entry(m))
	}
	return h, nil
}

func writeHistory(results string, h *History, now time.Time) error {
	slices.SortStableFunc(h.Runs, func(a, b HistoryEntry) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Run, b.Run)
	})
	h.Updated = now
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	return writeAtomic(HistoryPath(results), append(b, '\n'))
}

func entry(m *manifest.Manifest) HistoryEntry {
	e := HistoryEntry{Run: m.Run, Started: m.Started, Status: m.Status, Cells: len(m.Cells),
		Path: filepath.ToSlash(filepath.Join(m.Run, "manifest.json"))}
	var p struct {
		Tier    string   `json:"tier"`
		Proxies []string `json:"proxies"`
		Origins []string `json:"origins"`
	}
	if json.Unmarshal(m.Plan, &p) == nil {
		e.Tier, e.Proxies, e.Origins = p.Tier, p.Proxies, p.Origins
	}
	if len(e.Proxies) == 0 || len(e.Origins) == 0 || e.Tier == "" { // plan missing: from the cells
		var tiers []string
		for _, c := range m.Cells {
			e.Proxies, e.Origins, tiers = addUniq(e.Proxies, c.Proxy), addUniq(e.Origins, c.Origin), addUniq(tiers, c.Tier)
		}
		if e.Tier == "" {
			e.Tier = strings.Join(tiers, ",")
		}
	}
	return e
}

func addUniq(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}
