// Package output owns the files of results/<run>/ that the reporter writes
// (report.json, report.md, report.html, figures/*.svg, and
// report.partial.json/.md when a rebuild was poorer than the report it would
// replace) and the run index in results/history/ (a copy of every run's
// report plus manifest.json). Every file is replaced atomically
// (internal/atomicfile); the index is read, changed and written under an
// exclusive flock on results/history/.lock, so concurrent builds never lose
// an entry.
package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"proxybench/internal/atomicfile"
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
	doc := render.Document(r)
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

// Read loads a report.json and checks its schema. Every error names the
// file and how to rebuild it.
func Read(path string) (*report.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	// The run the file belongs to: results/<run>/report.json or
	// results/history/<run>/report.json.
	run := filepath.Base(filepath.Dir(path))
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w (damaged or not a report: rebuild it with `make report RUN=%s`)", path, err, run)
	}
	if r.Schema != report.SchemaVersion {
		if r.Run != "" && len(r.Run) <= 64 && !strings.ContainsFunc(r.Run, func(c rune) bool { return c <= ' ' || c == '`' || c > '~' }) {
			run = r.Run // the id it names, when it is one
		}
		return nil, fmt.Errorf("%s has schema %q, this reporter reads %q: rebuild it with `make report RUN=%s`", path, r.Schema, report.SchemaVersion, run)
	}
	return &r, nil
}

// Partial names the files WritePartial writes in a run's directory.
var Partial = []string{"report.partial.json", "report.partial.md"}

// WritePartial stores r as report.partial.json and report.partial.md in dir,
// leaving report.json and the rest of dir untouched, and returns the paths.
func WritePartial(dir string, r *report.Report) ([]string, error) {
	js, err := EncodeJSON(r)
	if err != nil {
		return nil, err
	}
	var md bytes.Buffer
	if err := render.Markdown(&md, render.Document(r)); err != nil {
		return nil, fmt.Errorf("render markdown: %w", err)
	}
	paths := []string{filepath.Join(dir, Partial[0]), filepath.Join(dir, Partial[1])}
	for i, b := range [][]byte{js, md.Bytes()} {
		if err := writeAtomic(paths[i], b); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// RemovePartial deletes report.partial.* from dir (a full report replaced
// them); absent files are fine.
func RemovePartial(dir string) error {
	for _, n := range Partial {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", n, err)
		}
	}
	return nil
}

func writeAtomic(path string, b []byte) error { return atomicfile.WriteFile(path, b, 0o644) }

// lockHistory takes the exclusive lock of results/history/ (flock on
// .lock, waiting for other holders) and returns its release.
func lockHistory(hdir string) (func(), error) {
	if err := os.MkdirAll(hdir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", hdir, err)
	}
	p := filepath.Join(hdir, ".lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open history lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	// Closing the descriptor releases the lock.
	return func() { f.Close() }, nil
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
	// Kind is "" for a bench run and KindStudy for a lab study, whose
	// Study names it (Summary then counts its samples as cells, its
	// failed checks and samples as invalid).
	Kind  string `json:"kind,omitempty"`
	Study string `json:"study,omitempty"`
}

// KindStudy marks a lab study's history entry.
const KindStudy = "study"

// Archive copies report.json and report.md of r into results/history/<run>/
// and updates the index, replacing an older entry of the same run. All of it
// happens under the history lock: two builds archiving at once both land.
func Archive(resultsDir string, r *report.Report) error {
	hdir := filepath.Join(resultsDir, "history")
	js, err := EncodeJSON(r)
	if err != nil {
		return err
	}
	unlock, err := lockHistory(hdir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := writeAtomic(filepath.Join(hdir, r.Run, "report.json"), js); err != nil {
		return err
	}
	if md, err := os.ReadFile(filepath.Join(resultsDir, r.Run, "report.md")); err == nil {
		if err := writeAtomic(filepath.Join(hdir, r.Run, "report.md"), md); err != nil {
			return err
		}
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
	return index(hdir, e)
}

// ArchiveStudy copies a study's files (name -> content, e.g. report.md and
// summary.json) into results/history/<run>/ and indexes e (Kind "study"),
// under the history lock like Archive.
func ArchiveStudy(resultsDir string, e HistoryEntry, files map[string][]byte) error {
	hdir := filepath.Join(resultsDir, "history")
	unlock, err := lockHistory(hdir)
	if err != nil {
		return err
	}
	defer unlock()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeAtomic(filepath.Join(hdir, e.Run, n), files[n]); err != nil {
			return err
		}
	}
	e.Kind = KindStudy
	return index(hdir, e)
}

// index puts e into results/history/manifest.json, replacing an older entry
// of the same run; the caller holds the history lock.
func index(hdir string, e HistoryEntry) error {
	idx := filepath.Join(hdir, "manifest.json")
	h := History{Schema: HistorySchema}
	if b, err := os.ReadFile(idx); err == nil {
		if err := json.Unmarshal(b, &h); err != nil {
			return fmt.Errorf("decode %s: %w (move it aside to start a new index)", idx, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read history: %w", err)
	}
	out := h.Runs[:0]
	for _, x := range h.Runs {
		if x.Run != e.Run {
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
