package runner

import (
	"context"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/gccycles"
	"proxybench/internal/gctail"
	"proxybench/internal/logsource"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
)

// gcTailLead is how much of a Go proxy's log before the window the anchor
// of its GC cycles reads: more cycles to take the least log delay from.
const gcTailLead = time.Minute

// gcLogs is the runner's engine when it can read containers' logs (the
// real client; the tests' fakes cannot, and their cells sample nothing).
func (r *Runner) gcLogs(ctr *dockerx.Container) logsource.Engine {
	if ctr == nil || ctr.ID == "" || ctr.Labels[dockerx.LabelGCTrace] != "true" {
		return nil
	}
	e, _ := r.Docker.(logsource.Engine)
	return e
}

// gcTail joins a Go proxy cell's sampled requests with the proxy's GC
// cycles read from its log now, after the window, and writes the cell's
// gctail file, recording its path or why there is none.
func (r *Runner) gcTail(ctx context.Context, c plan.Cell, ctr *dockerx.Container, res *attack.Result, mc *manifest.Cell) {
	e := r.gcLogs(ctr)
	if e == nil || res == nil || res.Samples == nil || ctx.Err() != nil {
		return
	}
	end := res.End
	if res.DrainEnd.After(end) {
		end = res.DrainEnd
	}
	cycles, anchor, err := gccycles.Read(ctx, e, *ctr, res.Start.Add(-gcTailLead), res.Start, end)
	if err != nil {
		mc.GCTailError = err.Error()
		r.Log.Warn("no gc tail for the cell", "cell", c.ID, "err", err)
		return
	}
	rel, err := gctail.Write(r.dir, &gctail.File{Cell: c.ID, Proxy: c.Proxy, Container: ctr.Name,
		WindowStart: res.Start, WindowEnd: res.End, Requests: res.Samples, Cycles: cycles, Anchor: anchor})
	if err != nil {
		mc.GCTailError = err.Error()
		r.Log.Warn("no gc tail for the cell", "cell", c.ID, "err", err)
		return
	}
	mc.GCTail = rel
}
