package attack

import (
	"context"
	"time"

	"proxybench/loadgen/internal/wire"
)

// openWorker claims request numbers in order and sends each at its due
// time. The pool grows so that a worker is always waiting for the next due
// request: whenever one sends while no other is waiting, it starts another
// (up to the model's MaxWorkers), which connects before it claims its first
// request. Only when the limit is reached does a request wait for a worker
// (capped); then it was claimed after its due time and its latency counts
// from the due time (coordinated omission corrected). A request due inside
// the window and still queued at its end (the target held every worker)
// is sent after it, late, its latency from the due time, so that the
// window's latency includes the queue a saturated target built; only
// after a request timeout of such a drain, on cancellation, or under a
// MaxRate cap do the workers stop: what was due and not sent is missed.
func (r *run) openWorker(ctx context.Context, id int) {
	d := r.newDoer(id)
	defer d.Close()
	if c, ok := d.(wire.Connector); ok {
		r.connecting.Add(1)
		c.Connect(r.a.now().Add(r.s.Timeout)) //nolint:errcheck // the first request reports it
		r.connecting.Add(-1)
	}
	// free is when this worker last became free: connected, or its
	// previous request answered. A request that fell due before then,
	// claimed by a worker that had just connected or while the pool was
	// still growing (a worker connecting), waited for the target to accept
	// and finish its handshakes: that wait is in its latency, from the due
	// time, but not in the loadgen's send lag, which counts from free.
	// Otherwise a late claim is the loadgen's own lag (or, with the pool
	// at its maximum, capped).
	free, first := r.a.now(), true
	rec := r.recs[id%len(r.recs)]
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		n := r.next.Add(1) - 1
		at, ok := r.pacer.Due(n)
		if !ok {
			return
		}
		due := r.start.Add(at)
		now := r.a.now()
		from := due
		waited := false
		if wait := due.Sub(now); wait > 0 {
			r.idle.Add(1)
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				r.idle.Add(-1)
				return
			case <-timer.C:
			}
			r.idle.Add(-1)
			// This worker was idle at the due time: any delay past it is
			// the loadgen's timer waking late (reported as lag), not the
			// target holding us back, so latency starts at the actual send.
			now = r.a.now()
			from, waited = now, true
		}
		noneIdle := r.idle.Load() == 0
		// Claimed after its due time (no wait) is capped when no worker
		// was free and the pool may not grow: the target held us back.
		// Otherwise the loadgen itself was late.
		lagFrom := due
		if first || r.connecting.Load() > 0 {
			lagFrom = later(due, free)
		}
		first = false
		o := openSend{lag: now.Sub(lagFrom), capped: !waited && noneIdle && r.workers.Load() >= int64(r.maxWorkers)}
		if !now.Before(r.end()) {
			if r.s.NoDrain || r.cancelled.Load() != 0 || r.limit != nil || now.Sub(r.end()) >= r.s.Timeout {
				return
			}
			o.queued = true
		}
		if noneIdle {
			r.spawn(ctx, r.openWorker)
		}
		if r.limit != nil {
			held, ok := r.hold(ctx, timer, now, r.end())
			if !ok {
				return
			}
			if held {
				// The cap held it past its due time: the instrument's
				// own limit, so its latency counts from the due time
				// and its lag stays out of LagP99.
				now = r.a.now()
				from, o.held = due, true
			}
		}
		r.rm.sent.Inc()
		if o.queued {
			r.rm.queued.Inc()
		}
		if o.capped {
			r.rm.capped.Inc()
		} else if !o.held {
			r.rm.lag.Observe(o.lag.Seconds())
		}
		free = r.send(d, rec, now, from, &o)
	}
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
