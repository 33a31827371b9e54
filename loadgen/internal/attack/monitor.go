package attack

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/internal/reqsample"
	"proxybench/loadgen/internal/load"
)

// gaugeTick is how often the in-flight gauge, the target rate and the
// scheduled counter are brought up to date: well under the 1 s scrape.
// The two gauges are shared with concurrent runs of the same labels (a
// traffic mix): each run adds its change, so they hold the sum.
const gaugeTick = 100 * time.Millisecond

// monitor keeps the sampled series current and reports progress. It runs
// beside the workers and only reads what they publish, so a slow progress
// callback never holds up the load: progress is handed to its own goroutine
// and dropped while the previous call is still running.
func (r *run) monitor(done <-chan struct{}, progress func(Progress)) {
	t := time.NewTicker(gaugeTick)
	defer t.Stop()
	var (
		scheduled  uint64
		lastReport = r.start
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
		el := now.Sub(r.start)
		var inFlight int64
		for _, rec := range r.recs {
			inFlight += rec.inFlight.Load()
		}
		publish(r.rm.inFlight, &r.pubInFlight, float64(inFlight))
		if r.pacer != nil {
			publish(r.rm.targetRate, &r.pubRate, r.pacer.Rate(el))
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
	end := r.stop.Sub(r.start)
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

// result merges the recorders once every worker has returned.
func (r *run) result() *Result {
	res := &Result{
		Start:        r.start,
		End:          r.end(),
		Codes:        map[int]int64{},
		ErrorReasons: map[string]int64{},
		LateCodes:    map[int]int64{},
		LateReasons:  map[string]int64{},
		Hist:         newHist(),
	}
	res.Protocol = r.s.Proto
	var hs handshakes
	if res.Protocol.Secure() {
		res.TLS = &manifest.TLS{}
	}
	var lag *hdrhistogram.Histogram
	if r.pacer != nil {
		lag = newLagHist()
	}
	for _, rec := range r.recs {
		rec.mu.Lock()
		hs.merge(&rec.hs)
		rec.mu.Unlock()
		res.Requests += rec.requests
		res.Errors += rec.errors
		res.Bytes += rec.bytes
		res.WrongOrigin += rec.wrongOrigin
		res.Sent += rec.sent
		res.Capped += rec.capped
		res.Queued += rec.queued
		res.Held += rec.held.Load()
		res.Late += rec.late
		for c, n := range rec.codes {
			res.Codes[c] += n
		}
		for c, n := range rec.lateCodes {
			res.LateCodes[c] += n
		}
		for i := range numReasons {
			if n := rec.reasons[i]; n > 0 {
				res.ErrorReasons[reasonNames[i]] += n
			}
			if n := rec.lateReasons[i]; n > 0 {
				res.LateReasons[reasonNames[i]] += n
			}
		}
		res.Hist.Merge(rec.hist)
		if rec.drainEnd.After(res.DrainEnd) {
			res.DrainEnd = rec.drainEnd
		}
		if lag != nil { // and so rec.lag: both kept in open loop only
			lag.Merge(rec.lag)
		}
		if rec.split != nil {
			rec.split.addTo(res)
		}
		if rec.samp != nil {
			if res.Samples == nil {
				res.Samples = &reqsample.Set{}
			}
			res.Samples.Merge(rec.samp.Set())
		}
	}
	if res.TLS != nil {
		hs.fill(res.TLS)
		r.hsTimes.fill(res.TLS)
	}
	if r.pacer != nil {
		res.Scheduled = load.CountDue(r.pacer, 0, r.schedEnd())
		res.Missed = max(0, res.Scheduled-res.Sent)
		if lag.TotalCount() > 0 {
			res.LagP99 = time.Duration(lag.ValueAtQuantile(99)) * time.Microsecond
		}
	}
	return res
}
