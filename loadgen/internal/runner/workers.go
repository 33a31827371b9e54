package runner

import (
	"github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
)

// workers is each loadgen worker's part of a cell that several ran as one
// instrument (package fleet); nil for a cell of this process alone.
func workers(ws []attack.WorkerResult) []manifest.Worker {
	var out []manifest.Worker
	for _, w := range ws {
		mw := manifest.Worker{Index: w.Index, Host: w.Host, Pid: w.Pid, Status: manifest.WorkerOK, Reason: w.Err,
			Concurrency: w.Concurrency, Rate: w.Rate, ClockOffsetS: w.Offset.Seconds(), ClockOffsetBoundS: w.OffsetBound.Seconds(),
			BarrierSkewS: w.Skew.Seconds(), Loadgen: w.Loadgen}
		if w.Err != "" {
			mw.Status = manifest.WorkerFailed
		}
		if r := w.Result; r != nil {
			start, end := r.Start, r.End
			mw.Start, mw.End = &start, &end
			mw.Requests, mw.Errors, mw.Late = r.Requests, r.Errors, r.Late
			mw.Scheduled, mw.Sent, mw.Missed, mw.Queued, mw.Capped, mw.LagP99S = r.Scheduled, r.Sent, r.Missed, r.Queued, r.Capped, r.LagP99.Seconds()
			mw.Latency = manifest.LatencyOf(r.Hist)
			if r.Hist != nil {
				if b, err := r.Hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
					mw.Histogram = string(b)
				}
			}
		}
		out = append(out, mw)
	}
	return out
}

// workerRoles adds the workers' role loadgen to the cell's contention and
// attributes everybody's CPUs again: a worker sharing the origin's CPU is
// the cell's own work on it, not foreign time.
func workerRoles(c *manifest.Contention, ws []attack.WorkerResult) {
	if c == nil {
		return
	}
	added := false
	for _, w := range ws {
		if w.CPU != nil {
			c.Roles = append(c.Roles, *w.CPU)
			added = true
		}
	}
	if added {
		attribute(c.Roles)
	}
}
