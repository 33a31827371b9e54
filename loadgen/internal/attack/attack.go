package attack

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/reqsample"
	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/wire"
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

// WithLogger sets where the attacker logs (default: discard).
func WithLogger(l *slog.Logger) Option { return func(a *Attacker) { a.log = l } }

// WithNetHTTP sends h1 and tls through net/http instead of the lean
// client, and h2 through x/net/http2 instead of the HTTP/2 loop.
func WithNetHTTP() Option { return func(a *Attacker) { a.netHTTP = true } }

// WithGoroutinePerConn runs closed loops with a goroutine per connection on
// Go's netpoller instead of the epoll event loop (the open loop and
// concurrency stages always do): for comparison and for non-Linux systems.
func WithGoroutinePerConn() Option { return func(a *Attacker) { a.netpoll = true } }

// New returns an Attacker publishing to m.
func New(m *Metrics, opts ...Option) *Attacker {
	a := &Attacker{m: m, now: time.Now, log: slog.New(slog.DiscardHandler), tick: time.Second}
	for _, o := range opts {
		o(a)
	}
	return a
}

// The engines that send an attack (Attacker.Engine).
const (
	EngineEvLoop  = "evloop"   // package wire's epoll event loop: h1 closed loops on Linux
	EngineNetpoll = "netpoll"  // the lean client, a goroutine per connection on Go's netpoller (h1, tls)
	EngineNetHTTP = "net-http" // net/http's client: WithNetHTTP (h1, tls)
	EngineH2      = "h2"       // package wire's HTTP/2 loop: h2 closed loops, a goroutine per connection
	EngineH2Mux   = "h2-mux"   // x/net/http2's ClientConn per connection, a goroutine per stream (h2 otherwise)
	EngineH3      = "h3"       // quic-go's HTTP/3 ClientConn per connection, a goroutine per stream
)

// Engine is the engine that sends s. An uncapped closed loop of fixed
// connections goes to a loop that owns its connections: h1 on Linux the
// epoll event loop, h2 the HTTP/2 loop (keep-alive, bodies up to 16 KiB).
// Otherwise h2 goes through x/net/http2, h3 through quic-go, and h1 and
// tls through the lean client with a goroutine per connection (tls always:
// the event loop speaks no TLS). WithNetHTTP takes net/http for h1 and
// tls, x/net/http2 for h2.
func (a *Attacker) Engine(s *Spec) string {
	p := specProto(s)
	fixed := s.Load != nil && s.Load.Pacer() == nil && s.Load.Active() == nil && s.MaxRate == 0
	switch {
	case p == ProtoH2 && fixed && !a.netHTTP && !a.netpoll && !s.NewConnPerRequest && len(s.Body) <= wire.H2MaxLoopBody:
		return EngineH2
	case p == ProtoH2:
		return EngineH2Mux
	case p == ProtoH3:
		return EngineH3
	case a.netHTTP:
		return EngineNetHTTP
	case p == ProtoH1 && wire.EventLoopAvailable && !a.netpoll && fixed:
		return EngineEvLoop
	}
	return EngineNetpoll
}

// run is the state of one Run.
type run struct {
	a       *Attacker
	s       Spec
	rm      *runMetrics
	req     *wire.Request
	evloop  bool         // closed loop on the epoll event loop
	h2loop  *wire.H2Loop // closed loop on the HTTP/2 loop
	obs     func(worker int) wire.HandshakeObserver
	newDoer func(worker int) wire.Doer
	closers []func() // run when every worker is done: the multiplexed pool
	recs    []*recorder
	hsTimes handshakeTimes // TLS: the completed handshakes' durations
	per     int            // workers per connection: Spec.Streams for h2 and h3, else 1

	total       time.Duration           // the planned window
	start, stop time.Time               // window start, planned end (set by begin)
	pacer       load.Pacer              // open loop and rate stages: offsets from start
	active      func(time.Duration) int // concurrency stages: workers active at an offset from start
	limit       *load.Limiter           // Spec.MaxRate, nil = no cap (set by begin)

	maxWorkers int
	workers    atomic.Int64
	next       atomic.Uint64 // open loop: next request number to claim
	idle       atomic.Int64  // open loop: workers waiting for their request's due time
	connecting atomic.Int64  // open loop: workers connecting before their first request
	wg         sync.WaitGroup
	cancelled  atomic.Int64 // offset from start at which ctx ended before the planned end, 0 = not

	// What this run added to the gauges it shares with concurrent runs of
	// the same labels (owned by prepare, then the monitor, then Run).
	pubInFlight, pubRate float64
}

// Run sends s and returns the exact result of its planned window. See the
// package README for the load models.
func (a *Attacker) Run(ctx context.Context, s Spec, progress func(Progress)) (*Result, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	r, err := a.prepare(&s)
	if err != nil {
		return nil, err
	}
	a.log.Debug("attack", "url", s.URL, "load", s.Load.String())

	if err := r.launch(ctx); err != nil {
		r.unpublish()
		return nil, err
	}
	edgesDone := make(chan struct{})
	go func() { defer close(edgesDone); r.edges(ctx) }()
	done := make(chan struct{})
	var monWG sync.WaitGroup
	monWG.Add(1)
	go func() { defer monWG.Done(); r.monitor(done, progress) }()

	r.wg.Wait() // every request sent has completed: the drain is over
	for _, c := range r.closers {
		c()
	}
	<-edgesDone // and the planned end (or the cancellation) has come
	close(done)
	monWG.Wait()
	r.unpublish()

	res := r.result()
	if res.Missed > 0 {
		r.rm.missed.Add(float64(res.Missed))
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// prepare sets up the run of s, which validate has resolved (its Proto
// among others).
func (a *Attacker) prepare(s *Spec) (*run, error) {
	proto := s.Proto
	r := &run{a: a, s: *s, rm: a.m.forRun(s.Labels, proto), per: 1}
	m := s.Load
	r.total, r.maxWorkers, r.pacer, r.active = m.Window(), m.MaxWorkers(), m.Pacer(), m.Active()
	conns := r.maxWorkers
	if proto.Multiplexed() && s.Streams > 1 {
		// The model's connections carry Streams workers each.
		r.per = s.Streams
		r.maxWorkers *= r.per
		if act := r.active; act != nil {
			r.active = func(d time.Duration) int { return act(d) * r.per }
		}
	}
	t := target(s)
	if proto.Secure() {
		cfg, err := tlsConfig(s, conns)
		if err != nil {
			return nil, err
		}
		t.TLS = cfg
	}
	engine := a.Engine(s)
	n := min(r.maxWorkers, maxRecorders)
	// The attack's sample is shared by the recorders that get requests:
	// the event loop feeds one per shard (a CPU), not one per worker.
	fed := n
	if engine == EngineEvLoop {
		fed = min(n, runtime.GOMAXPROCS(0))
	}
	for i := range n {
		rec := newRecorder(r.pacer != nil, s.Split)
		if s.SampleRequests {
			rec.sample(max(1024, reqsample.MaxPerAttack/fed), uint64(i)+1)
		}
		r.recs = append(r.recs, rec)
	}
	obs := func(w int) wire.HandshakeObserver {
		return &tlsObserver{rec: r.recs[w%len(r.recs)], times: &r.hsTimes, rm: r.rm}
	}
	r.obs = obs
	req, err := wire.NewRequest(t)
	if err != nil {
		return nil, err
	}
	r.req = req
	r.evloop = engine == EngineEvLoop
	switch engine {
	case EngineH2:
		loop, err := wire.NewH2Loop(&t, conns, r.per)
		if err != nil {
			return nil, err
		}
		r.h2loop = loop
	case EngineH2Mux, EngineH3:
		pool, err := wire.NewMuxPool(&t, conns, r.per)
		if err != nil {
			return nil, err
		}
		r.closers = append(r.closers, pool.Close)
		r.newDoer = func(w int) wire.Doer { return pool.Doer(w, obs(w)) }
	case EngineNetHTTP:
		client := wire.NewStdClient(&t, max(r.maxWorkers, 1))
		r.newDoer = func(w int) wire.Doer {
			d := wire.NewStdDoer(client, &t)
			d.Observer = obs(w)
			return d
		}
	default:
		r.newDoer = func(w int) wire.Doer {
			c := wire.NewLeanConn(req)
			if req.Secure() {
				c.Observer = obs(w)
			}
			return c
		}
	}
	if r.pacer != nil {
		publish(r.rm.targetRate, &r.pubRate, r.pacer.Rate(0))
	}
	return r, nil
}

// begin fixes the attack's clock: it is called once everything is set up,
// immediately before the first request can be sent, so the window holds no
// set-up time; with Spec.StartAt it first waits for that moment (unless ctx
// ends). It is also the window's start edge.
func (r *run) begin(ctx context.Context) {
	if at := r.s.StartAt; !at.IsZero() {
		if wait := at.Sub(r.a.now()); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	r.start = r.a.now()
	r.stop = r.start.Add(r.total)
	r.limit = load.NewLimiter(r.s.MaxRate, r.start)
	r.edge(false, r.start)
}

// edges calls Spec.OnEdge at the window's planned end, or at the
// cancellation if ctx ends first; it notes the cancellation, which ends the
// window.
func (r *run) edges(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(until time.Time) bool {
		timer.Reset(until.Sub(r.a.now()))
		select {
		case <-ctx.Done():
			r.cancelled.CompareAndSwap(0, int64(max(r.a.now().Sub(r.start), 1)))
			return false
		case <-timer.C:
			return true
		}
	}
	wait(r.stop)
	r.edge(true, r.end())
}

func (r *run) edge(end bool, at time.Time) {
	if r.s.OnEdge != nil {
		r.s.OnEdge(end, at)
	}
}

// end is the end of the window: the planned end, or when ctx ended if that
// came first. A completion after it is late.
func (r *run) end() time.Time { return r.start.Add(r.schedEnd()) }

// publish moves what this run contributes to a gauge shared with the
// concurrent runs of the same labels to v, by adding the difference: the
// gauge is the sum over the runs. v is rounded to 1/1024 so that every
// addition is exact and the gauge returns to exactly 0 when all have ended.
func publish(g prometheus.Gauge, pub *float64, v float64) {
	v = math.Round(v*1024) / 1024
	if d := v - *pub; d != 0 {
		g.Add(d)
		*pub = v
	}
}

// unpublish removes this run's contribution from the shared gauges.
func (r *run) unpublish() {
	publish(r.rm.inFlight, &r.pubInFlight, 0)
	publish(r.rm.targetRate, &r.pubRate, 0)
}

func (r *run) launch(ctx context.Context) error {
	switch {
	case r.evloop:
		return r.launchEvLoop(ctx, r.req) // calls begin once its sockets are ready
	case r.h2loop != nil:
		r.launchH2Loop(ctx)
	case r.pacer != nil:
		r.begin(ctx)
		initial := min(r.maxWorkers, max(4, 2*runtime.GOMAXPROCS(0)))
		for range initial {
			r.spawn(ctx, r.openWorker)
		}
	default:
		r.begin(ctx)
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
	d := r.newDoer(id)
	defer d.Close()
	rec := r.recs[id%len(r.recs)]
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for ctx.Err() == nil {
		now := r.a.now()
		if !now.Before(r.stop) {
			return
		}
		if r.active != nil && id >= r.active(now.Sub(r.start)) {
			d.Close() // an idle worker holds no connection, like a smaller pool
			idle.Reset(min(10*time.Millisecond, r.stop.Sub(now)))
			select {
			case <-ctx.Done():
				return
			case <-idle.C:
			}
			continue
		}
		if r.limit != nil {
			held, ok := r.hold(ctx, idle, now, r.stop)
			if !ok {
				return
			}
			if held {
				now = r.a.now()
				rec.held.Add(1)
			}
		}
		r.send(d, rec, now, now, nil)
	}
}

// hold waits for the MaxRate cap's next slot, reserved at now: held says
// the send had to wait, ok is false when ctx ended or the slot is at or past
// until (then nothing is sent).
func (r *run) hold(ctx context.Context, timer *time.Timer, now, until time.Time) (held, ok bool) {
	slot := r.limit.Reserve(now)
	if !slot.Before(until) {
		return false, false
	}
	wait := slot.Sub(now)
	if wait <= 0 {
		return false, true
	}
	timer.Reset(wait)
	select {
	case <-ctx.Done():
		return true, false
	case <-timer.C:
	}
	return true, true
}

// send does one request and returns when it ended; open is the open
// loop's send, nil in closed loop.
func (r *run) send(d wire.Doer, rec *recorder, sent, from time.Time, open *openSend) time.Time {
	if open != nil {
		open.wait = sent.Sub(from)
	}
	rec.inFlight.Add(1)
	res, err := d.Do(sent.Add(r.s.Timeout))
	done := r.a.now()
	rec.inFlight.Add(-1)
	rec.record(r.rm, done, done.Sub(from), res, err, open, done.After(r.end()))
	return done
}

func isHTTPS(u string) bool { return len(u) >= 8 && (u[:8] == "https://" || u[:8] == "HTTPS://") }
