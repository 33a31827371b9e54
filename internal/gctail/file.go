// Package gctail owns joining a Go proxy cell's requests with the proxy's
// GC cycles on the host's wall clock: the cell's file
// results/<run>/gctail/<cell>.json.gz (the loadgen's sampled requests,
// package reqsample, and the cycles read from the proxy's gctrace,
// package gccycles), which the runner writes at the cell's end, and the
// analysis the report shows (Analyze): did the requests slower than the
// cell's p99 overlap a GC cycle more often than chance would have it?
package gctail

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"proxybench/internal/atomicfile"
	"proxybench/internal/gccycles"
	"proxybench/internal/reqsample"
)

// Dir is the run directory's folder of these files.
const Dir = "gctail"

// File is one cell's join.
type File struct {
	Cell        string           `json:"cell"`
	Proxy       string           `json:"proxy"`
	Container   string           `json:"container"`
	WindowStart time.Time        `json:"window_start"`
	WindowEnd   time.Time        `json:"window_end"`
	Requests    *reqsample.Set   `json:"requests"`
	Cycles      []gccycles.Cycle `json:"cycles"`
	Anchor      gccycles.Anchor  `json:"anchor"`
}

// Rel is the file's path for a cell, relative to the run directory.
func Rel(cell string) string {
	return filepath.Join(Dir, strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(cell)+".json.gz")
}

// Write writes f under runDir (Rel) atomically and returns its relative
// path.
func Write(runDir string, f *File) (string, error) {
	rel := Rel(f.Cell)
	path := filepath.Join(runDir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("gc tail file of cell %s: %w", f.Cell, err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(f); err != nil {
		return "", fmt.Errorf("gc tail file of cell %s: %w", f.Cell, err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("gc tail file of cell %s: %w", f.Cell, err)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("gc tail file of cell %s: %w", f.Cell, err)
	}
	return rel, nil
}

// Read reads a file Write wrote.
func Read(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gc tail file: %w", err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		return nil, fmt.Errorf("gc tail file %s: not gzip: %w", path, err)
	}
	var f File
	dec := json.NewDecoder(io.LimitReader(zr, 1<<30))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("gc tail file %s: %w (remove it, or run the cell again)", path, err)
	}
	if f.Requests == nil {
		return nil, fmt.Errorf("gc tail file %s: no requests", path)
	}
	return &f, nil
}
