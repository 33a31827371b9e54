package attack

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Attacker runs attacks one at a time and publishes them to its Metrics.
type Attacker struct {
	m       *Metrics
	now     func() time.Time
	log     *slog.Logger
	netHTTP bool
	netpoll bool
	tick    time.Duration
}

// Option configures an Attacker.
type Option func(*Attacker)

// WithClock replaces time.Now for the window timestamps and latencies (the
// tests keep the real clock: latency needs real time).
func WithClock(now func() time.Time) Option { return func(a *Attacker) { a.now = now } }

// WithLogger sets where the attacker logs (default: discard).
func WithLogger(l *slog.Logger) Option { return func(a *Attacker) { a.log = l } }

// WithNetHTTP sends through net/http instead of the lean HTTP/1.1 client.
// https URLs always use net/http.
func WithNetHTTP() Option { return func(a *Attacker) { a.netHTTP = true } }

// WithGoroutinePerConn runs closed loops with a goroutine per connection on
// Go's netpoller instead of the epoll event loop (the open loop and
// concurrency stages always do): for comparison and for non-Linux systems.
func WithGoroutinePerConn() Option { return func(a *Attacker) { a.netpoll = true } }

// WithProgressInterval changes how often progress is reported (default 1 s).
func WithProgressInterval(d time.Duration) Option { return func(a *Attacker) { a.tick = d } }

// New returns an Attacker publishing to m.
func New(m *Metrics, opts ...Option) *Attacker {
	a := &Attacker{m: m, now: time.Now, log: slog.New(slog.DiscardHandler), tick: time.Second}
	for _, o := range opts {
		o(a)
	}
	m.SetCPULimit(float64(runtime.GOMAXPROCS(0)))
	return a
}

// run is the state of one Run.
type run struct {
	a       *Attacker
	s       Spec
	rm      *runMetrics
	req     *request
	evloop  bool // closed loop on the epoll event loop
	newDoer func() doer
	recs    []*recorder

	t0, start, stop time.Time // warm-up start, window start, end of sending
	pacer           Pacer     // open loop and rate stages: offsets from t0
	conc            func(time.Duration) int

	maxWorkers int
	workers    atomic.Int64
	next       atomic.Uint64 // open loop: next request number to claim
	idle       atomic.Int64  // open loop: workers waiting for their request's due time
	wg         sync.WaitGroup
	cancelled  atomic.Int64 // offset from t0 at which ctx ended, 0 = not
}

// Run sends s and returns the exact result of its measured window. See the
// package README for the load models.
func (a *Attacker) Run(ctx context.Context, s Spec, progress func(Progress)) (*Result, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	r, err := a.prepare(&s)
	if err != nil {
		return nil, err
	}
	a.log.Debug("attack", "url", s.URL, "mode", s.Mode, "concurrency", s.Concurrency, "rate", s.Rate)

	// Scheduling ends when ctx does: note when, for the scheduled count.
	stopCancel := context.AfterFunc(ctx, func() { r.cancelled.Store(int64(max(a.now().Sub(r.t0), 1))) })
	defer stopCancel()
	done := make(chan struct{})
	var monWG sync.WaitGroup
	monWG.Add(1)
	go func() { defer monWG.Done(); r.monitor(ctx, done, progress) }()

	err = r.launch(ctx)
	r.wg.Wait()
	close(done)
	monWG.Wait()
	r.rm.targetRate.Set(0)
	r.rm.inFlight.Set(0)
	if err != nil {
		return nil, err
	}

	res := r.result()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func (a *Attacker) prepare(s *Spec) (*run, error) {
	r := &run{a: a, s: *s, rm: a.m.forRun(s.Labels)}
	req, err := buildRequest(s)
	if err != nil {
		return nil, err
	}
	r.req = req
	stdlib := a.netHTTP || isHTTPS(s.URL)
	r.evloop = evLoopAvailable && !stdlib && !a.netpoll && s.Mode == Closed
	if stdlib {
		tr := newStdTransport(s, max(s.Concurrency, 1))
		client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		r.newDoer = func() doer { return &stdDoer{client: client, spec: &r.s, origin: s.ExpectOrigin} }
	} else {
		r.newDoer = func() doer { return newLeanConn(req) }
	}

	r.t0 = a.now()
	r.start = r.t0.Add(s.Warmup)
	total := s.Warmup + s.Duration
	switch {
	case s.Mode == Open:
		r.pacer = ConstantPacer{Freq: s.Rate, Duration: total}
		r.maxWorkers = s.Concurrency
	case s.Mode == Stages && s.StageKind == StageRate:
		st, first := warmStages(s)
		r.pacer = NewLinearPacer(first, st)
		total = sumStages(st)
		r.maxWorkers = s.Concurrency
	case s.Mode == Stages: // concurrency
		st, first := warmStages(s)
		total = sumStages(st)
		r.conc = func(t time.Duration) int { return int(math.Round(stageValue(first, st, t))) }
		r.maxWorkers = int(math.Ceil(maxTarget(st)))
	default:
		r.maxWorkers = s.Concurrency
	}
	r.stop = r.t0.Add(total)
	n := min(r.maxWorkers, maxRecorders)
	for range n {
		r.recs = append(r.recs, newRecorder())
	}
	if r.pacer != nil {
		r.rm.targetRate.Set(r.pacer.Rate(0))
	} else {
		r.rm.targetRate.Set(0)
	}
	return r, nil
}

// warmStages puts the warm-up in front of the stages: it holds the first
// stage's target, then the stages run exactly as written (from 0).
func warmStages(s *Spec) ([]Stage, float64) {
	if s.Warmup <= 0 {
		return s.Stages, 0
	}
	first := s.Stages[0].Target
	st := append([]Stage{{Duration: s.Warmup, Target: first}, {Duration: 0, Target: 0}}, s.Stages...)
	return st, first
}

func sumStages(st []Stage) (d time.Duration) {
	for _, s := range st {
		d += s.Duration
	}
	return d
}

func maxTarget(st []Stage) (m float64) {
	for _, s := range st {
		m = max(m, s.Target)
	}
	return m
}

func (r *run) launch(ctx context.Context) error {
	switch {
	case r.evloop:
		return r.launchEvLoop(r.req)
	case r.pacer != nil:
		initial := min(r.maxWorkers, max(4, 2*runtime.GOMAXPROCS(0)))
		for range initial {
			r.spawn(ctx, r.openWorker)
		}
	default:
		for range r.maxWorkers {
			r.spawn(ctx, r.closedWorker)
		}
	}
	return nil
}

// spawn starts one more worker unless maxWorkers are running.
func (r *run) spawn(ctx context.Context, fn func(context.Context, int)) bool {
	for {
		n := r.workers.Load()
		if n >= int64(r.maxWorkers) {
			return false
		}
		if r.workers.CompareAndSwap(n, n+1) {
			r.wg.Add(1)
			go func() { defer r.wg.Done(); fn(ctx, int(n)) }()
			return true
		}
	}
}

// closedWorker sends its next request as soon as the previous one is done;
// under concurrency stages it idles while its id is above the target.
func (r *run) closedWorker(ctx context.Context, id int) {
	d := r.newDoer()
	defer d.close()
	rec := r.recs[id%len(r.recs)]
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for ctx.Err() == nil {
		now := r.a.now()
		if !now.Before(r.stop) {
			return
		}
		if r.conc != nil && id >= r.conc(now.Sub(r.t0)) {
			d.close() // an idle worker holds no connection, like a smaller pool
			idle.Reset(min(10*time.Millisecond, r.stop.Sub(now)))
			select {
			case <-ctx.Done():
				return
			case <-idle.C:
			}
			continue
		}
		r.send(d, rec, now, now, !now.Before(r.start), false)
	}
}

// openWorker claims request numbers in order and sends each at its due
// time. The pool grows so that a worker is always waiting for the next due
// request: whenever one sends while no other is waiting, it starts another
// (up to Spec.Concurrency), which connects before it claims its first
// request. Only when the limit is reached does a request wait for a worker;
// then it was claimed after its due time and its latency counts from the due
// time (coordinated omission corrected).
func (r *run) openWorker(ctx context.Context, id int) {
	d := r.newDoer()
	defer d.close()
	if c, ok := d.(interface{ connect(time.Time) error }); ok {
		c.connect(r.a.now().Add(r.s.Timeout)) //nolint:errcheck // the first request reports it
	}
	rec := r.recs[id%len(r.recs)]
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		n := r.next.Add(1) - 1
		at, ok := r.pacer.Due(n)
		if !ok {
			return
		}
		due := r.t0.Add(at)
		now := r.a.now()
		from := due
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
			from = now
		}
		if r.idle.Load() == 0 {
			r.spawn(ctx, r.openWorker)
		}
		r.rm.sent.Inc()
		r.rm.lag.Observe(now.Sub(due).Seconds())
		r.send(d, rec, now, from, !due.Before(r.start), true)
	}
}

func (r *run) send(d doer, rec *recorder, sent, from time.Time, measured, open bool) {
	rec.inFlight.Add(1)
	res, err := d.do(sent.Add(r.s.Timeout))
	done := r.a.now()
	rec.inFlight.Add(-1)
	rec.record(r.rm, done, done.Sub(from), res, err, measured, open)
}

func isHTTPS(u string) bool { return len(u) >= 8 && (u[:8] == "https://" || u[:8] == "HTTPS://") }
