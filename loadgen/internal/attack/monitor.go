package attack

import (
	"context"
	"time"
)

// gaugeTick is how often the in-flight gauge, the target rate and the
// scheduled counter are brought up to date: well under the 1 s scrape.
const gaugeTick = 100 * time.Millisecond

// monitor keeps the sampled series current and reports progress. It runs
// beside the workers and only reads what they publish, so a slow progress
// callback never holds up the load: progress is handed to its own goroutine
// and dropped while the previous call is still running.
func (r *run) monitor(ctx context.Context, done <-chan struct{}, progress func(Progress)) {
	t := time.NewTicker(gaugeTick)
	defer t.Stop()
	var (
		scheduled  uint64
		lastReport = r.t0
		lastReqs   int64
		snap       = newHist()
		ch         = make(chan Progress, 1)
	)
	if progress != nil {
		go func() {
			for p := range ch {
				progress(p)
			}
		}()
		defer close(ch)
	}
	for {
		select {
		case <-done:
			r.flushScheduled(&scheduled, r.schedEnd())
			return
		case <-t.C:
		}
		now := r.a.now()
		el := now.Sub(r.t0)
		var inFlight int64
		for _, rec := range r.recs {
			inFlight += rec.inFlight.Load()
		}
		r.rm.inFlight.Set(float64(inFlight))
		if r.pacer != nil {
			r.rm.targetRate.Set(r.pacer.Rate(el))
			r.flushScheduled(&scheduled, min(el, r.schedEnd()))
		}
		if progress == nil || now.Sub(lastReport) < r.a.tick {
			continue
		}
		var reqs, errs int64
		snap.Reset()
		for _, rec := range r.recs {
			rec.mu.Lock()
			reqs += rec.allRequests
			errs += rec.allErrors
			snap.Merge(rec.interval)
			rec.interval.Reset()
			rec.mu.Unlock()
		}
		p := Progress{
			Elapsed:  el,
			Requests: reqs,
			Errors:   errs,
			RPS:      float64(reqs+errs-lastReqs) / now.Sub(lastReport).Seconds(),
			P99:      time.Duration(snap.ValueAtQuantile(99)) * time.Microsecond,
			InFlight: inFlight,
		}
		lastReport, lastReqs = now, reqs+errs
		select {
		case ch <- p:
		default:
		}
	}
}

// schedEnd is the offset at which scheduling ended: the planned end, or the
// moment ctx was cancelled.
func (r *run) schedEnd() time.Duration {
	end := r.stop.Sub(r.t0)
	if c := time.Duration(r.cancelled.Load()); c > 0 && c < end {
		end = c
	}
	return end
}

// flushScheduled adds to the scheduled counter every request due by el.
func (r *run) flushScheduled(n *uint64, el time.Duration) {
	if r.pacer == nil {
		return
	}
	from := *n
	for {
		at, ok := r.pacer.Due(*n)
		if !ok || at > el || (at == el && el == r.schedEnd()) {
			break
		}
		*n++
	}
	if d := *n - from; d > 0 {
		r.rm.scheduled.Add(float64(d))
	}
}

// countDue counts requests due in [from, to) by binary search: Due is
// monotonic.
func countDue(p Pacer, from, to time.Duration) int64 {
	first := searchDue(p, from)
	last := searchDue(p, to)
	return int64(last - first)
}

// searchDue returns the first n whose due offset is >= t (or the total).
func searchDue(p Pacer, t time.Duration) uint64 {
	lo, hi := uint64(0), uint64(1)
	for {
		at, ok := p.Due(hi)
		if !ok || at >= t {
			break
		}
		lo, hi = hi, hi*2
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if at, ok := p.Due(mid); ok && at < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// result merges the recorders once every worker has returned.
func (r *run) result() *Result {
	res := &Result{
		WarmupStart:  r.t0,
		Start:        r.start,
		Codes:        map[int]int64{},
		ErrorReasons: map[string]int64{},
		Hist:         newHist(),
	}
	for _, rec := range r.recs {
		res.Requests += rec.requests
		res.Errors += rec.errors
		res.Bytes += rec.bytes
		res.WrongOrigin += rec.wrongOrigin
		res.Sent += rec.sent
		for c, n := range rec.codes {
			res.Codes[c] += n
		}
		for i, n := range rec.reasons {
			if n > 0 {
				res.ErrorReasons[reasonNames[i]] += n
			}
		}
		res.Hist.Merge(rec.hist)
		if rec.end.After(res.End) {
			res.End = rec.end
		}
	}
	if r.pacer != nil {
		res.Scheduled = countDue(r.pacer, r.start.Sub(r.t0), r.schedEnd())
	}
	if res.End.IsZero() {
		res.End = r.a.now()
	}
	return res
}
