package attack

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"proxybench/loadgen/internal/load"
)

func TestClosedLoopCountsMatchServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		newConn bool
		opts    []Option
	}{
		{"event loop keep-alive", false, nil},
		{"event loop new conn", true, nil},
		{"goroutine per conn keep-alive", false, []Option{WithGoroutinePerConn()}},
		{"goroutine per conn new conn", true, []Option{WithGoroutinePerConn()}},
		{"net/http keep-alive", false, []Option{WithNetHTTP()}},
		{"net/http new conn", true, []Option{WithNetHTTP()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCounted(t, hello)
			a, _ := newAttacker(t, tc.opts...)
			res := mustRun(t, a, Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 4, Duration: 300 * time.Millisecond},
				NewConnPerRequest: tc.newConn, ExpectOrigin: "go"})
			// A starved host (make test's packages side by side on 2 CPUs)
			// may answer nothing inside a 300 ms window: what it answered
			// late still counts, and must match the server.
			if res.Requests+res.Late == 0 || res.Errors != 0 {
				t.Fatalf("requests %d errors %d %v late %d drain end %v after the window", res.Requests, res.Errors, res.ErrorReasons, res.Late, res.DrainEnd.Sub(res.End))
			}
			if got := srv.Handled.Load(); got != res.Requests+res.Late {
				t.Errorf("server handled %d, result says %d + %d late", got, res.Requests, res.Late)
			}
			// Late responses are not counted in the window but their
			// latencies are in the histogram.
			if res.Codes[200] != res.Requests || res.LateCodes[200] != res.Late || res.Hist.TotalCount() != res.Requests+res.Late {
				t.Errorf("codes %v late %v, hist count %d, requests %d", res.Codes, res.LateCodes, res.Hist.TotalCount(), res.Requests)
			}
			if want := res.Requests * int64(len("hello, proxybench\n")); res.Bytes != want {
				t.Errorf("bytes %d, want %d", res.Bytes, want)
			}
			if res.WrongOrigin != 0 {
				t.Errorf("wrong origin %d", res.WrongOrigin)
			}
			if !res.End.Equal(res.Start.Add(300 * time.Millisecond)) {
				t.Errorf("window %v..%v, want the planned 300ms", res.Start, res.End)
			}
			if res.Late > 0 && !res.DrainEnd.After(res.End) || res.Late == 0 && !res.DrainEnd.IsZero() {
				t.Errorf("late %d, drain end %v, window end %v", res.Late, res.DrainEnd, res.End)
			}
		})
	}
}

func TestWrongOrigin(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	a, _ := newAttacker(t)
	res := mustRun(t, a, Spec{URL: srv.URL, Load: load.Closed{Connections: 1, Duration: 300 * time.Millisecond}, ExpectOrigin: "node"})
	if res.WrongOrigin != res.Requests || res.Requests == 0 {
		t.Errorf("wrong origin %d of %d", res.WrongOrigin, res.Requests)
	}
}

// The pacer schedules absolute due times: exactly the planned count is due
// in the window, and every one is accounted for as sent or missed, every
// sent one as completed in the window, late, or failed. How much of the
// schedule a loaded machine keeps is BenchmarkOpenLoopSchedule's figure
// (make perf); a pacer that sends at all keeps well over half of it.
func TestOpenLoopRateAccuracy(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	a, _ := newAttacker(t)
	res := mustRun(t, a, Spec{URL: srv.URL, Load: load.Open{Rate: 2000, Duration: 2 * time.Second}})
	t.Logf("errors %v, p99 %.4fs max %.4fs, missed %d, lag p99 %v", res.ErrorReasons, latency(res).P99, latency(res).Max, res.Missed, res.LagP99)
	if res.Scheduled != 4000 || res.Sent+res.Missed != res.Scheduled {
		t.Errorf("scheduled %d (want 4000), sent %d, missed %d", res.Scheduled, res.Sent, res.Missed)
	}
	if got := srv.Handled.Load(); res.Requests+res.Errors+res.Late != got || res.Sent != got {
		t.Errorf("requests %d + errors %d + late %d, sent %d, server %d", res.Requests, res.Errors, res.Late, res.Sent, got)
	}
	if 2*res.Missed > res.Scheduled {
		t.Errorf("missed %d of %d: the pacer does not keep its schedule", res.Missed, res.Scheduled)
	}
}

func TestStagesRate(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	a, _ := newAttacker(t)
	// 0 -> 1000/s over 1 s (500 requests), then 1000/s for 1 s.
	res := mustRun(t, a, Spec{URL: srv.URL, Load: load.RateStages{Stages: []load.Stage{{Duration: time.Second, Target: 1000}, {Duration: time.Second, Target: 1000}}}})
	if res.Scheduled < 1499 || res.Scheduled > 1501 {
		t.Errorf("scheduled %d, want 1500", res.Scheduled)
	}
	if res.Sent+res.Missed != res.Scheduled || res.Requests+res.Errors+res.Late != res.Sent || res.Sent != srv.Handled.Load() {
		t.Errorf("sent %d missed %d requests %d errors %d late %d scheduled %d, server %d", res.Sent, res.Missed, res.Requests, res.Errors, res.Late, res.Scheduled, srv.Handled.Load())
	}
	if 2*res.Missed > res.Scheduled {
		t.Errorf("missed %d of %d (lag p99 %v): the ramp does not keep its schedule", res.Missed, res.Scheduled, res.LagP99)
	}
}

func TestStagesConcurrency(t *testing.T) {
	t.Parallel()
	var cur, peak atomic.Int64
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		cur.Add(-1)
	})
	a, _ := newAttacker(t)
	res := mustRun(t, a, Spec{URL: srv.URL, Load: load.ConcurrencyStages{
		Stages: []load.Stage{{Duration: 300 * time.Millisecond, Target: 1}, {Duration: 300 * time.Millisecond, Target: 4}, {Duration: 600 * time.Millisecond, Target: 4}}}})
	if peak.Load() != 4 {
		t.Errorf("peak concurrency %d, want 4", peak.Load())
	}
	if res.Requests+res.Late != srv.Handled.Load() || res.Requests == 0 {
		t.Errorf("requests %d late %d server %d", res.Requests, res.Late, srv.Handled.Load())
	}
}

// freezer is a server that freezes completely for one second once, after
// `after`: the stalled request holds the gate, every other request waits.
type freezer struct {
	gate  sync.RWMutex
	once  sync.Once
	start time.Time
	after time.Duration
}

func (f *freezer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if time.Since(f.start) > f.after {
		f.once.Do(func() {
			f.gate.Lock()
			time.Sleep(time.Second)
			f.gate.Unlock()
		})
	}
	f.gate.RLock()
	f.gate.RUnlock()
	w.Write([]byte("ok"))
}

// Coordinated omission: a closed loop with 2 connections sends nothing while
// the server is frozen, so the 1 s stall is 2 samples out of thousands and
// its p99 stays small: the closed loop "agrees" not to measure the stall. The
// open loop at 500/s keeps its schedule: the ~500 requests due during the
// stall wait for a connection, their latency counts from when they were due,
// and p99 shows the stall (wrk2's correction).
func TestCoordinatedOmission(t *testing.T) {
	t.Parallel()
	run := func(s Spec) *Result {
		f := &freezer{start: time.Now(), after: time.Second}
		srv := newCounted(t, f.ServeHTTP)
		a, _ := newAttacker(t)
		s.URL = srv.URL
		return mustRun(t, a, s)
	}
	var open, closed *Result
	var wg sync.WaitGroup
	wg.Go(func() { open = run(Spec{Load: load.Open{Rate: 500, MaxInFlight: 2, Duration: 4 * time.Second}}) })
	wg.Go(func() { closed = run(Spec{Load: load.Closed{Connections: 2, Duration: 4 * time.Second}}) })
	wg.Wait()
	ol, cl := latency(open), latency(closed)
	t.Logf("open p99 %.3fs max %.3fs n=%d; closed p99 %.3fs max %.3fs n=%d", ol.P99, ol.Max, ol.Count, cl.P99, cl.Max, cl.Count)
	if ol.P99 < 0.5 {
		t.Errorf("open loop p99 %.3fs hides the 1 s stall", ol.P99)
	}
	if ol.P90 < 0.1 {
		t.Errorf("open loop p90 %.3fs: a quarter of the requests were due during the stall", ol.P90)
	}
	if cl.Max < 0.9 {
		t.Errorf("closed loop max %.3fs: it did see the stall once", cl.Max)
	}
	if cl.P99 > 0.1 {
		t.Errorf("closed loop p99 %.3fs: expected the stall to be omitted", cl.P99)
	}
}

// delayedHandler answers after exactly 20 ms (sleep most of it, spin the
// rest: an idle Go timer may wake up to 1 ms late).
func delayedHandler(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	time.Sleep(18 * time.Millisecond)
	for time.Since(t0) < 20*time.Millisecond {
	}
	w.Write([]byte("late"))
}

// The loadgen never reports less than the true latency, in either loop,
// whatever the machine does. How little it adds on top is an instrument
// figure that depends on the CPU it gets: BenchmarkDelayedHandlerOverhead
// (make perf) measures it.
func TestLatencyOfDelayedHandler(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, delayedHandler)
	for _, s := range []Spec{
		{Load: load.Closed{Connections: 4, Duration: time.Second}},
		{Load: load.Open{Rate: 100, Duration: time.Second}},
	} {
		s.URL = srv.URL
		a, _ := newAttacker(t)
		l := latency(mustRun(t, a, s))
		if l.Count == 0 || l.Min < 0.020 || l.P50 < 0.020 {
			t.Errorf("%s: min %.6fs p50 %.6fs over %d requests: below the handler's 20 ms, the measurement under-reports", s.Load.Name(), l.Min, l.P50, l.Count)
		}
	}
}

func TestCancelReturnsPartialResult(t *testing.T) {
	t.Parallel()
	for _, s := range []Spec{
		{Load: load.Closed{Connections: 8, Duration: time.Minute}},
		{Load: load.Open{Rate: 1000, Duration: time.Minute}},
	} {
		t.Run(s.Load.Name(), func(t *testing.T) {
			t.Parallel()
			srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(5 * time.Millisecond)
				w.Write([]byte("x"))
			})
			a, _ := newAttacker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			s.URL = srv.URL
			t0 := time.Now()
			res, err := a.Run(ctx, s, nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v, want the context's error", err)
			}
			if took := time.Since(t0); took > 2*time.Second {
				t.Errorf("returned after %v", took)
			}
			if res == nil || res.End.IsZero() {
				t.Fatalf("no partial result: %+v", res)
			}
			if res.Requests == 0 || res.Requests+res.Errors+res.Late != srv.Handled.Load() || res.Errors != 0 {
				t.Errorf("result %d requests %d errors %d late, server handled %d", res.Requests, res.Errors, res.Late, srv.Handled.Load())
			}
			// The window ends at the cancellation, not at the planned end.
			if dl, _ := ctx.Deadline(); res.End.Before(dl) || res.End.Sub(dl) > 200*time.Millisecond {
				t.Errorf("window ends %v after the cancellation, want just after", res.End.Sub(dl))
			}
			maxDue := int64(1000*time.Since(t0).Seconds()) + 1
			if s.Load.Pacer() != nil && (res.Sent != res.Requests+res.Late || res.Scheduled < res.Sent || res.Scheduled > maxDue ||
				res.Sent+res.Missed != res.Scheduled) {
				t.Errorf("scheduled %d sent %d missed %d requests %d late %d", res.Scheduled, res.Sent, res.Missed, res.Requests, res.Late)
			}
		})
	}
}

// The one warm-up is an attack of its own (the model's warm-up load), then
// the gap, then the measured window, which counts none of the warm-up.
func TestWarmupExcluded(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	a, _ := newAttacker(t)
	var edges int
	s := Spec{URL: srv.URL, Load: load.Open{Rate: 1000, Duration: 500 * time.Millisecond}, OnEdge: func(bool, time.Time) { edges++ }}
	var warm *Result
	run := func(ctx context.Context, s Spec) (*Result, error) {
		var err error
		warm, err = a.Run(ctx, s, nil)
		return warm, err
	}
	var slept time.Duration
	ws, err := WarmUp(context.Background(), s, 300*time.Millisecond, 50*time.Millisecond, run,
		func(_ context.Context, d time.Duration) error { slept = d; return nil })
	if err != nil || warm == nil {
		t.Fatalf("warm-up: %v", err)
	}
	if !ws.Equal(warm.Start) || warm.End.Sub(warm.Start) != 300*time.Millisecond || warm.Scheduled != 300 || slept != 50*time.Millisecond {
		t.Errorf("warm-up from %v, window %v .. %v, scheduled %d, then quiet %v: want 300 over 300ms, then 50ms",
			ws, warm.Start, warm.End, warm.Scheduled, slept)
	}
	if edges != 0 {
		t.Errorf("the warm-up called OnEdge %d times", edges)
	}
	res := mustRun(t, a, s)
	if !res.Start.After(warm.End) {
		t.Errorf("window starts %v, before the warm-up's end %v", res.Start, warm.End)
	}
	if d := res.End.Sub(res.Start); d != 500*time.Millisecond {
		t.Errorf("window %v, want 500ms", d)
	}
	if res.Scheduled != 500 || res.Sent+res.Missed != 500 || res.Requests+res.Errors+res.Late != res.Sent {
		t.Errorf("scheduled %d sent %d missed %d, requests %d errors %d late %d: want the 500 due in the window",
			res.Scheduled, res.Sent, res.Missed, res.Requests, res.Errors, res.Late)
	}
	if got := srv.Handled.Load(); got != warm.Sent+res.Sent {
		t.Errorf("server handled %d, want %d of warm-up + %d sent in the window", got, warm.Sent, res.Sent)
	}
	if ws, err := WarmUp(context.Background(), s, 0, time.Second, run, nil); err != nil || !ws.IsZero() {
		t.Errorf("no warm-up: %v %v", ws, err)
	}
}

// The server admits 400 requests per second (a token bucket, burst 100) and
// sheds the rest with 503, as a proxy's rate limit would: the search must
// stop at the first step above 400/s whatever the machine's load.
func TestKnee(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	tokens, refilled := 100.0, time.Now()
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		tokens = min(100, tokens+400*now.Sub(refilled).Seconds())
		refilled = now
		shed := tokens < 1
		if !shed {
			tokens--
		}
		mu.Unlock()
		if shed {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	a, _ := newAttacker(t)
	last, steps, err := a.Knee(context.Background(), Spec{URL: srv.URL},
		KneeOptions{StartRate: 100, Step: 150, MaxRate: 1500, StepDuration: time.Second, P99: time.Minute, MaxErrorRatio: 0.01}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		t.Logf("rate %v held %v %s codes %v", s.Rate, s.Held, s.Why, s.Result.Codes)
	}
	if last != 400 {
		t.Errorf("knee at %v, want 400 (100, 250, 400 hold; 550 sheds)", last)
	}
	// A step the loadgen alone broke (a host's stall) is run again and
	// kept with Retried: those are not steps of the search.
	var rates []float64
	for _, s := range steps {
		if !s.Retried {
			rates = append(rates, s.Rate)
		}
	}
	if n := len(steps); !slices.Equal(rates, []float64{100, 250, 400, 550}) || steps[n-1].Held || steps[n-1].Retried {
		t.Errorf("want the search to end on 550/s, not held; got the steps %v (retried ones left out)", rates)
	}
}

func TestSpecValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    Spec
		want string
	}{
		{"no url", Spec{Load: load.Closed{Connections: 1, Duration: time.Second}}, "spec URL is empty"},
		{"bad scheme", Spec{URL: "ftp://x/", Load: load.Closed{Connections: 1, Duration: time.Second}}, `scheme "ftp"`},
		{"no host", Spec{URL: "http:///x", Load: load.Closed{Connections: 1, Duration: time.Second}}, "has no host"},
		{"no load", Spec{URL: "http://127.0.0.1:1/"}, "spec Load is empty"},
		{"closed no workers", Spec{URL: "http://127.0.0.1:1/", Load: load.Closed{Duration: time.Second}}, "spec Load (closed): Connections 0: closed loop needs at least 1 connection"},
		{"open no rate", Spec{URL: "http://127.0.0.1:1/", Load: load.Open{Duration: time.Second}}, "spec Load (open): Rate 0: open loop needs a positive rate"},
		{"no duration", Spec{URL: "http://127.0.0.1:1/", Load: load.Open{Rate: 1}}, "Duration 0s: open loop needs a positive duration"},
		{"negative timeout", Spec{URL: "http://127.0.0.1:1/", Load: load.Open{Rate: 1, Duration: 1}, Timeout: -1}, "Timeout"},
		{"no stages", Spec{URL: "http://127.0.0.1:1/", Load: load.RateStages{}}, "spec Load (stages): Stages []: give stages such as"},
		{"zero stage", Spec{URL: "http://127.0.0.1:1/", Load: load.RateStages{Stages: []load.Stage{{Duration: 0, Target: 1}}}}, "Stages[0] 0s:1: a stage needs a duration > 0"},
		{"no concurrency", Spec{URL: "http://127.0.0.1:1/", Load: load.ConcurrencyStages{Stages: []load.Stage{{Duration: time.Second, Target: 0}}}}, "need a target of at least 1"},
		{"header injection", Spec{URL: "http://127.0.0.1:1/", Load: load.Open{Rate: 1, Duration: 1}, Header: http.Header{"X": {"a\r\nb: c"}}}, "spec Header"},
		{"bad method", Spec{URL: "http://127.0.0.1:1/", Method: "GET /", Load: load.Open{Rate: 1, Duration: 1}}, "spec Method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, _ := newAttacker(t)
			res, err := a.Run(context.Background(), tc.s, nil)
			if err == nil || res != nil {
				t.Fatalf("got %v, %v; want an error", res, err)
			}
			if !contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// A Host header in the spec is sent as the Host (virtual hosting) while the
// connection still goes to the URL's address, for every engine.
func TestHostHeaderOverride(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"evloop", nil}, {"netpoll", []Option{WithGoroutinePerConn()}}, {"nethttp", []Option{WithNetHTTP()}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var wrong atomic.Int64
			srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Host != "api.example.test" || r.Header.Get("X-Api-Key") != "k" {
					wrong.Add(1)
				}
			})
			a, _ := newAttacker(t, tc.opts...)
			res := mustRun(t, a, Spec{URL: srv.URL, Load: load.Closed{Connections: 1, Duration: 100 * time.Millisecond},
				Header: http.Header{"Host": {"api.example.test"}, "X-Api-Key": {"k"}}})
			if res.Requests == 0 || wrong.Load() != 0 {
				t.Errorf("%d requests, %d with the wrong Host or key", res.Requests, wrong.Load())
			}
		})
	}
}
