package attack

import (
	"context"
	"runtime"
	"time"

	"proxybench/loadgen/internal/wire"
)

// target is what package wire sends for s (its TLS config apart), once
// validate has resolved it.
func target(s *Spec) wire.Target {
	return wire.Target{URL: s.URL, Method: s.Method, Header: s.Header, Body: s.Body, NewConnPerRequest: s.NewConnPerRequest,
		ExpectOrigin: s.ExpectOrigin, Timeout: s.Timeout, Limits: specLimits(s), Proto: s.Proto}
}

// launchEvLoop starts the closed loop on package wire's event loop: one
// shard per CPU, each reporting to its own recorder.
func (r *run) launchEvLoop(ctx context.Context, req *wire.Request) error {
	loop, err := wire.NewEventLoop(req, r.maxWorkers, min(runtime.GOMAXPROCS(0), r.maxWorkers))
	if err != nil {
		return err
	}
	r.workers.Store(int64(r.maxWorkers))
	r.begin(ctx)
	for i := range loop.Shards() {
		sink := &loopSink{r: r, rec: r.recs[i%len(r.recs)]}
		r.wg.Add(1)
		go func() { defer r.wg.Done(); loop.Run(i, sink) }()
	}
	return nil
}

// loopSink is one event-loop shard's view of its run.
type loopSink struct {
	r   *run
	rec *recorder
}

var _ wire.Sink = (*loopSink)(nil)

func (s *loopSink) Now() time.Time { return s.r.a.now() }

// Stop: the planned end has come, or ctx ended.
func (s *loopSink) Stop(now time.Time) bool {
	return !now.Before(s.r.stop) || s.r.cancelled.Load() != 0
}

func (s *loopSink) InFlight(delta int64) { s.rec.inFlight.Add(delta) }

// Done records a closed-loop request: measured when sent at or after the
// window start, late when done after its end.
func (s *loopSink) Done(sent, done time.Time, res wire.Response, err error) {
	s.rec.record(s.r.rm, done, done.Sub(sent), res, err, nil, done.After(s.r.end()))
}

// launchH2Loop starts the closed loop on package wire's HTTP/2 loop: a
// goroutine per connection, connection i reporting to recorder i (mod
// their number), each carrying Spec.Streams workers.
func (r *run) launchH2Loop(ctx context.Context) {
	r.workers.Store(int64(r.maxWorkers))
	r.begin(ctx)
	for i := range r.h2loop.Conns() {
		sink := &loopSink{r: r, rec: r.recs[i%len(r.recs)]}
		obs := r.obs(i)
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.h2loop.Run(i, sink, obs) }()
	}
}
