package build

import (
	"math"
	"path/filepath"
	"time"

	"proxybench/internal/gctail"
	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// gcTails joins each Go proxy cell's sampled requests with its GC cycles
// from the file the runner kept (package gctail), against the cell's exact
// p99.
func gcTails(runDir string, cells []report.Cell, byID map[string]*manifest.Cell) {
	for i := range cells {
		c := &cells[i]
		mc := byID[c.ID]
		if c.GC == nil || mc == nil {
			continue
		}
		if mc.GCTail == "" {
			c.GC.TailError = mc.GCTailError
			continue
		}
		f, err := gctail.Read(filepath.Join(runDir, mc.GCTail))
		if err != nil {
			c.GC.TailError = err.Error()
			continue
		}
		res := gctail.Analyze(f, time.Duration(math.Round(mc.Latency.P99*1e9)))
		c.GC.Tail = &res
	}
}
