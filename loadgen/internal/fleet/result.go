package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"proxybench/loadgen/internal/attack"
)

// edges calls on at the window's edges on our clock: the start at the
// barrier, the end at the planned end, or both at once when ctx ends first;
// the end comes early when every worker has already returned.
func edges(ctx context.Context, on func(end bool, at time.Time), barrier time.Time, window time.Duration, allDone <-chan struct{}) {
	if on == nil {
		return
	}
	wait := func(until time.Time) bool {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
		case <-allDone:
		}
		return false
	}
	if !wait(barrier) {
		now := time.Now()
		on(false, now)
		on(true, now)
		return
	}
	on(false, barrier)
	end := barrier.Add(window)
	if !wait(end) {
		end = time.Now()
	}
	on(true, end)
}

// report passes on the workers' progress about once a second, summed: the
// counts, rates and in-flight add up; the p99 is the worst worker's.
func report(ws []*worker, progress func(attack.Progress), stop <-chan struct{}) {
	if progress == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var sum attack.Progress
		seen := false
		for _, w := range ws {
			w.mu.Lock()
			if p := w.progress; p != nil {
				seen = true
				sum.Elapsed = max(sum.Elapsed, p.Elapsed)
				sum.Requests += p.Requests
				sum.Errors += p.Errors
				sum.RPS += p.RPS
				sum.P99 = max(sum.P99, p.P99)
				sum.InFlight += p.InFlight
			}
			w.mu.Unlock()
		}
		if seen {
			progress(sum)
		}
	}
}

// result is the exact merge of the workers' results, each worker's part
// kept, their times on our clock. A worker that failed fails the attack,
// named with what happened; the others' data are kept.
func (c *Coordinator) result(ctx context.Context, ws []*worker, barrier time.Time) (*attack.Result, error) {
	parts := make([]*attack.Result, 0, len(ws))
	out := make([]attack.WorkerResult, len(ws))
	var why []string
	for i, w := range ws {
		w.mu.Lock()
		end, failed := w.end, w.failed
		w.mu.Unlock()
		wr := attack.WorkerResult{Index: i, Host: w.h.Host, Pid: w.h.Pid, Concurrency: w.conns, Rate: w.rate,
			Offset: w.offset, OffsetBound: w.bound, Err: failed}
		if end != nil {
			res, err := end.Result.Decode()
			switch {
			case err != nil:
				wr.Err = fmt.Sprintf("loadgen worker %d (pid %d) sent a result that does not decode: %v", i, w.h.Pid, err)
			case res != nil:
				onOurClock(res, w.offset)
				if !res.Start.IsZero() {
					wr.Skew = res.Start.Sub(barrier)
				}
				wr.Result = res
				parts = append(parts, res)
			}
			if end.Error != "" && !(ctx.Err() != nil && end.Error == context.Canceled.Error()) && wr.Err == "" {
				wr.Err = fmt.Sprintf("loadgen worker %d (pid %d): %s", i, w.h.Pid, end.Error)
			}
			wr.Loadgen, wr.CPU = end.Loadgen, end.CPU
			if wr.CPU != nil {
				wr.CPU.Worker = &wr.Index
				if w.h.Host != c.host {
					wr.CPU.Host = w.h.Host
				}
			}
		}
		if wr.Err != "" {
			why = append(why, wr.Err)
		}
		out[i] = wr
	}
	merged := attack.Merge(parts...)
	if merged == nil {
		merged = &attack.Result{Start: barrier, End: barrier, Codes: map[int]int64{}, ErrorReasons: map[string]int64{},
			LateCodes: map[int]int64{}, LateReasons: map[string]int64{}}
	}
	merged.Workers = out
	switch {
	case len(why) > 0:
		return merged, fmt.Errorf("%s; the data of %d of the %d workers are kept", strings.Join(why, "; "), len(parts), len(ws))
	case ctx.Err() != nil:
		return merged, ctx.Err()
	}
	return merged, nil
}

// onOurClock moves a worker's times to the coordinator's clock.
func onOurClock(r *attack.Result, offset time.Duration) {
	for _, t := range []*time.Time{&r.Start, &r.End, &r.DrainEnd} {
		if !t.IsZero() {
			*t = t.Add(-offset)
		}
	}
}
