// Package output owns the files of results/<run>/ that the reporter writes
// (report.json, report.md, report.html, figures/*.svg) and the run index in
// results/history/ (a copy of every run's report plus manifest.json).
package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"proxybench/reporter/internal/render"
	"proxybench/reporter/internal/report"
)

// Write stores every output of r in dir.
func Write(dir string, r *report.Report) error {
	if err := os.MkdirAll(filepath.Join(dir, "figures"), 0o755); err != nil {
		return fmt.Errorf("create results dir: %w", err)
	}
	js, err := EncodeJSON(r)
	if err != nil {
		return err
	}
	figs := render.Figures(r)
	doc := render.Build(r)
	var md, page bytes.Buffer
	if err := render.Markdown(&md, doc); err != nil {
		return fmt.Errorf("render markdown: %w", err)
	}
	if err := render.HTML(&page, doc, figs); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	files := map[string][]byte{"report.json": js, "report.md": md.Bytes(), "report.html": page.Bytes()}
	for name, b := range figs {
		files[filepath.Join("figures", name)] = b
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeAtomic(filepath.Join(dir, n), files[n]); err != nil {
			return err
		}
	}
	return nil
}

// EncodeJSON renders report.json (indented, stable key order).
func EncodeJSON(r *report.Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return append(b, '\n'), nil
}

// Read loads a report.json and checks its schema.
func Read(path string) (*report.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	if r.Schema != report.SchemaVersion {
		return nil, fmt.Errorf("%s has schema %q, this reporter reads %q: rebuild it with `make report RUN=%s`", path, r.Schema, report.SchemaVersion, r.Run)
	}
	return &r, nil
}

func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// HistorySchema versions results/history/manifest.json.
const HistorySchema = "proxybench.history/v1"

// History is results/history/manifest.json.
type History struct {
	Schema string         `json:"schema"`
	Runs   []HistoryEntry `json:"runs"`
}

// HistoryEntry indexes one run.
type HistoryEntry struct {
	Run       string         `json:"run"`
	Start     time.Time      `json:"start"`
	End       time.Time      `json:"end"`
	Generated time.Time      `json:"generated"`
	Summary   report.Summary `json:"summary"`
	Tiers     []string       `json:"tiers"`
	Proxies   []string       `json:"proxies"`
	Report    string         `json:"report"` // path relative to results/history
}

// Archive copies report.json and report.md of r into results/history/<run>/
// and updates the index, replacing an older entry of the same run.
func Archive(resultsDir string, r *report.Report) error {
	hdir := filepath.Join(resultsDir, "history")
	js, err := EncodeJSON(r)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(hdir, r.Run, "report.json"), js); err != nil {
		return err
	}
	if md, err := os.ReadFile(filepath.Join(resultsDir, r.Run, "report.md")); err == nil {
		if err := writeAtomic(filepath.Join(hdir, r.Run, "report.md"), md); err != nil {
			return err
		}
	}
	idx := filepath.Join(hdir, "manifest.json")
	h := History{Schema: HistorySchema}
	if b, err := os.ReadFile(idx); err == nil {
		if err := json.Unmarshal(b, &h); err != nil {
			return fmt.Errorf("decode %s: %w (move it aside to start a new index)", idx, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read history: %w", err)
	}
	e := HistoryEntry{Run: r.Run, Start: r.Start, End: r.End, Generated: r.Generated, Summary: r.Summary,
		Report: filepath.ToSlash(filepath.Join(r.Run, "report.json"))}
	seenT, seenP := map[string]bool{}, map[string]bool{}
	for _, c := range r.Cells {
		if !seenT[c.Tier] {
			seenT[c.Tier] = true
			e.Tiers = append(e.Tiers, c.Tier)
		}
		if !seenP[c.Proxy] {
			seenP[c.Proxy] = true
			e.Proxies = append(e.Proxies, c.Proxy)
		}
	}
	out := h.Runs[:0]
	for _, x := range h.Runs {
		if x.Run != r.Run {
			out = append(out, x)
		}
	}
	h.Runs = append(out, e)
	h.Schema = HistorySchema
	sort.SliceStable(h.Runs, func(i, j int) bool { return h.Runs[i].Start.Before(h.Runs[j].Start) })
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	return writeAtomic(idx, append(b, '\n'))
}

// ReadHistory loads results/history/manifest.json.
func ReadHistory(resultsDir string) (*History, error) {
	p := filepath.Join(resultsDir, "history", "manifest.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read history: %w (build a report first)", err)
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("decode %s: %w", p, err)
	}
	return &h, nil
}
