package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/plan"
)

func (r *Runner) finish(n int, mc manifest.Cell) {
	r.m.Cells = append(r.m.Cells, mc)
	r.display().CellEnd(n, len(r.Plan.Cells), mc)
	err := r.save()
	switch {
	case err == nil:
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		// Measuring on would only lose more: stop after this cell.
		if r.full == nil {
			r.full = fmt.Errorf("results disk full: %w: free space on the file system holding %s and run again; %s keeps the last cells it could hold and the measured ones are in Prometheus", err, r.dir, filepath.Join(r.dir, "manifest.json"))
			r.Log.Error("results disk full: stopping after this cell", "dir", r.dir, "err", err)
		}
		r.stop()
	default:
		// Keep measuring: the next save may work and the data is still in
		// memory.
		r.Log.Error("manifest not written", "err", err)
	}
}

// unsaved is the error of a final manifest that could not be written: the
// manifest on disk is the last whole one, and the complete one goes to
// stderr so that nothing measured is lost.
func (r *Runner) unsaved(err error) error {
	if b, merr := json.Marshal(r.m); merr == nil {
		fmt.Fprintf(os.Stderr, "loadgen: the complete manifest, which could not be written to %s:\n%s\n", filepath.Join(r.dir, "manifest.json"), b)
	}
	if r.full != nil {
		return fmt.Errorf("%w; the complete manifest went to stderr", r.full)
	}
	return fmt.Errorf("%w; %s keeps the last version written and the complete manifest went to stderr", err, filepath.Join(r.dir, "manifest.json"))
}

func (r *Runner) save() error {
	r.m.Updated = r.Clock.Now()
	return manifest.Write(filepath.Join(r.dir, "manifest.json"), r.m)
}

// linger keeps the loadgen's /metrics (and its workers') up after the
// last cell until Prometheus has scraped it in a scrape that began after
// now (the last cell's drain is over): that sample holds every count, and
// lies inside every counting span (a span ends manifest.MarginAfter, more
// than a scrape interval, after the drain). The staleness marker of the
// exit, one interval later, may fall inside the last span: the reporter
// reads spans through range selections, which skip it. Without such a
// scrape (no ScrapedAfter, Prometheus away) it waits at most d.
func (r *Runner) linger(ctx context.Context, d time.Duration) {
	start := r.Clock.Now()
	r.Log.Info("lingering so Prometheus scrapes the final values", "at_most", d.String())
	if r.ScrapedAfter == nil {
		_ = r.Clock.Sleep(ctx, d)
		return
	}
	if r.sleepUntil(ctx, r.ScrapedAfter(start), d) {
		who := "the loadgen"
		if r.Plan.Loadgens > 1 {
			who = "the loadgen or one of its workers"
		}
		r.Log.Warn("Prometheus did not scrape "+who+" after its last cell: the last window's end may be unseen server-side", "waited", d.String())
		return
	}
	r.Log.Info("final values scraped", "after", r.Clock.Now().Sub(start).Round(time.Millisecond).String())
}

// skipped is c as the manifest records a cell that sent no traffic, and
// its series say so.
func (r *Runner) skipped(c plan.Cell, skip *manifest.Skip) manifest.Cell {
	mc := base(c)
	mc.Status, mc.Reason, mc.Skip = manifest.CellSkipped, skip.Text(), skip
	r.Cells.Skipped(r.labels(c))
	return mc
}

// base is the manifest cell of c before it runs: its key and planned load.
func base(c plan.Cell) manifest.Cell {
	return manifest.Cell{
		Key:  c.Key,
		Mode: c.Mode, Concurrency: c.Concurrency, Rate: c.Rate, Path: c.Path,
		DurationS: time.Duration(c.Duration).Seconds(), WarmupS: time.Duration(c.Warmup).Seconds(),
		Codes: map[string]int64{}, Expected: c.Def.Statuses(),
	}
}
