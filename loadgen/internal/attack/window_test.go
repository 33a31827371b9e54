package attack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"proxybench/loadgen/internal/load"
)

// stamped is a real HTTP server that notes when it finished each request
// and freezes once, for `stall`, from `at` after its first request: the
// first request after that holds a gate, every other one waits behind it.
type stamped struct {
	*counted
	mu    sync.Mutex
	first time.Time
	done  []time.Time
	gate  sync.RWMutex
	once  sync.Once
	at    time.Duration
	stall time.Duration
}

func newStamped(t *testing.T, at, stall time.Duration) *stamped {
	s := &stamped{at: at, stall: stall}
	s.counted = newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.first.IsZero() {
			s.first = time.Now()
		}
		since := time.Since(s.first)
		s.mu.Unlock()
		if s.stall > 0 && since >= s.at {
			s.once.Do(func() {
				s.gate.Lock()
				time.Sleep(s.stall)
				s.gate.Unlock()
			})
		}
		s.gate.RLock()
		s.gate.RUnlock() //nolint:staticcheck // waits out the stall
		w.Write([]byte("ok"))
		s.mu.Lock()
		s.done = append(s.done, time.Now())
		s.mu.Unlock()
	})
	return s
}

// doneBy counts the requests the server finished at or before t.
func (s *stamped) doneBy(t time.Time) (n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.done {
		if !d.After(t) {
			n++
		}
	}
	return n
}

type edgeCall struct {
	end      bool
	at, when time.Time
}

type edgeLog struct {
	mu    sync.Mutex
	calls []edgeCall
}

func (l *edgeLog) on(end bool, at time.Time) {
	l.mu.Lock()
	l.calls = append(l.calls, edgeCall{end, at, time.Now()})
	l.mu.Unlock()
}

// check says what is wrong with the calls: want one start edge at start,
// then one end edge at end.
func (l *edgeLog) check(start, end time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) != 2 || l.calls[0].end || !l.calls[1].end {
		return fmt.Sprintf("edges %+v, want one start then one end", l.calls)
	}
	if !l.calls[0].at.Equal(start) || !l.calls[1].at.Equal(end) {
		return fmt.Sprintf("edges at %v and %v, want the window %v .. %v", l.calls[0].at, l.calls[1].at, start, end)
	}
	return ""
}

// A server that freezes for 1.5 s from 2 s into a 3 s closed loop: the
// window stays the planned 3 s, its rate is what the server finished inside
// it, and the requests the stall held past the end are late, their 1.5 s
// latencies in the histogram. The end edge comes at the planned end, before
// the drain.
func TestStallAtTheEndIsLateNotALongerWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"event loop", nil}, {"goroutine per conn", []Option{WithGoroutinePerConn()}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const conc = 4
			srv := newStamped(t, 2*time.Second, 1500*time.Millisecond)
			a, _ := newAttacker(t, tc.opts...)
			var edges edgeLog
			res := mustRun(t, a, Spec{URL: srv.URL, Load: load.Closed{Connections: conc, Duration: 3 * time.Second}, OnEdge: edges.on})
			if !res.End.Equal(res.Start.Add(3 * time.Second)) {
				t.Errorf("window %v .. %v, want exactly the planned 3s", res.Start, res.End)
			}
			if w := res.Window(); w != 3 {
				t.Errorf("Window() %v, want 3", w)
			}
			inWindow := srv.doneBy(res.End)
			want := float64(inWindow) / 3
			if rps := res.RPS(); rps < 0.98*want || rps > 1.02*want || res.Requests == 0 {
				t.Errorf("rps %.1f (%d requests), server finished %d in the window: want %.1f ±2%%", rps, res.Requests, inWindow, want)
			}
			// Every connection was stuck in the stall at the end.
			if res.Late != conc || res.LateCodes[200] != conc || res.Errors != 0 {
				t.Errorf("late %d %v, errors %d %v; want %d late 200s", res.Late, res.LateCodes, res.Errors, res.ErrorReasons, conc)
			}
			if got := srv.Handled.Load(); got != res.Requests+res.Late {
				t.Errorf("server handled %d, requests %d + late %d", got, res.Requests, res.Late)
			}
			if res.Hist.TotalCount() != res.Requests+res.Late || latency(res).Max < 1.4 {
				t.Errorf("histogram %d samples, max %.3fs: want the window's %d and the %d late ones with ~1.5s",
					res.Hist.TotalCount(), latency(res).Max, res.Requests, res.Late)
			}
			if d := res.DrainEnd.Sub(res.End); d < 300*time.Millisecond || d > 2*time.Second {
				t.Errorf("drain end %v after the window's end, want ~0.5s", d)
			}
			if why := edges.check(res.Start, res.End); why != "" {
				t.Error(why)
			}
			if c := edges.calls[len(edges.calls)-1]; c.when.Before(res.End) || !c.when.Before(res.DrainEnd) {
				t.Errorf("end edge called at %v: want after the planned end %v and before the drain ended %v", c.when, res.End, res.DrainEnd)
			}
		})
	}
}

// 300/s offered to a server that takes 20 ms per request over 2
// connections (at most 100/s): the sends wait for a free connection
// (capped, kept out of the lag); what is still queued at the window's end
// is sent after it, late, its latency from its intended time, so the
// latency shows the queue the saturated server built (the request due at
// t waits about 2t: a p99 near 2 s, where leaving the queue out gave about
// 1 s). A drain longer than the request timeout stops: the rest is missed.
func TestOpenLoopOverCapacityQueuesPastTheEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{{"drained", 0}, {"drain stopped by the timeout", 400 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(20 * time.Millisecond) })
			a, reg := newAttacker(t)
			res := mustRun(t, a, Spec{URL: srv.URL, Load: load.Open{Rate: 300, MaxInFlight: 2, Duration: time.Second}, Timeout: tc.timeout,
				Labels: Labels{"nginx", "fast", "simple"}})
			p99 := latency(res).P99
			t.Logf("scheduled %d sent %d (queued past the end %d) missed %d capped %d late %d p99 %.3fs", res.Scheduled, res.Sent, res.Queued, res.Missed, res.Capped, res.Late, p99)
			if res.Scheduled != 300 || res.Sent+res.Missed != res.Scheduled {
				t.Errorf("scheduled %d (want 300), sent %d + missed %d", res.Scheduled, res.Sent, res.Missed)
			}
			// 2 connections x 1 s / 20 ms inside the window, and the 2 in
			// flight at its end.
			if inWindow := res.Sent - res.Queued; inWindow > 102 || res.Queued+res.Missed < 198 {
				t.Errorf("sent %d inside the window, queued %d, missed %d: the server takes at most 100/s", inWindow, res.Queued, res.Missed)
			}
			if tc.timeout == 0 {
				if res.Missed != 0 || p99 < 1.6 {
					t.Errorf("missed %d, p99 %.3fs: want every queued request sent after the window, the last ~2 s after its intended time", res.Missed, p99)
				}
			} else if res.Missed < 100 || res.Queued < 10 {
				t.Errorf("queued %d, missed %d: want the drain sending until the %v timeout, then stopping", res.Queued, res.Missed, tc.timeout)
			}
			if res.Capped < res.Sent/2 {
				t.Errorf("capped %d of %d sent: most sends waited for a connection", res.Capped, res.Sent)
			}
			if res.Requests+res.Errors+res.Late != res.Sent || srv.Handled.Load() != res.Sent {
				t.Errorf("requests %d + errors %d + late %d, sent %d, server %d", res.Requests, res.Errors, res.Late, res.Sent, srv.Handled.Load())
			}
			text := gather(t, reg)
			lb := `{origin="fast",protocol="h1",proxy="nginx",scenario="simple"}`
			for _, want := range []string{
				"proxybench_open_loop_missed_total" + lb + " " + itoa(int(res.Missed)),
				"proxybench_open_loop_queued_total" + lb + " " + itoa(int(res.Queued)),
				"proxybench_open_loop_capped_total" + lb + " " + itoa(int(res.Capped)),
				"proxybench_open_loop_sent_total" + lb + " " + itoa(int(res.Sent)),
				"proxybench_open_loop_lag_seconds_count" + lb + " " + itoa(int(res.Sent-res.Capped)),
			} {
				if !strings.Contains(text, want+"\n") {
					t.Errorf("metrics lack %q", want)
				}
			}
		})
	}
}

// Well under capacity nothing waits for a connection, and everything due
// is accounted for (sent or missed; BenchmarkOpenLoopSchedule measures how
// much a loaded machine misses).
func TestOpenLoopUnderCapacityMissesNothing(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	a, _ := newAttacker(t)
	res := mustRun(t, a, Spec{URL: srv.URL, Load: load.Open{Rate: 200, MaxInFlight: 50, Duration: time.Second}})
	if res.Scheduled != 200 || res.Sent+res.Missed != res.Scheduled || res.Capped != 0 || res.Sent != srv.Handled.Load() {
		t.Errorf("scheduled %d sent %d missed %d capped %d, server %d: want 200 due, none capped", res.Scheduled, res.Sent, res.Missed, res.Capped, srv.Handled.Load())
	}
	if 2*res.Missed > res.Scheduled {
		t.Errorf("missed %d of %d (lag p99 %v)", res.Missed, res.Scheduled, res.LagP99)
	}
}

// A traffic mix runs attacks with the same labels at once: the in-flight
// and target-rate gauges hold the sum of both, and return to 0.
func TestSharedGaugesSumConcurrentAttacks(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var held atomic.Int64
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		held.Add(1)
		<-release
	})
	a, reg := newAttacker(t)
	lb := Labels{"haproxy", "fast", "auth"}
	var wg sync.WaitGroup
	for _, s := range []Spec{
		{Load: load.Open{Rate: 100, MaxInFlight: 2, Duration: 1500 * time.Millisecond}},
		{Load: load.Open{Rate: 250.5, MaxInFlight: 3, Duration: 1500 * time.Millisecond}},
	} {
		s.URL, s.Labels, s.Timeout = srv.URL, lb, 5*time.Second
		wg.Go(func() {
			if _, err := a.Run(context.Background(), s, nil); err != nil {
				t.Error(err)
			}
		})
	}
	sel := `{origin="fast",protocol="h1",proxy="haproxy",scenario="auth"} `
	inFlight, rate := "proxybench_requests_in_flight"+sel+"5\n", "proxybench_target_rate_requests_per_second"+sel+"350.5\n"
	deadline := time.Now().Add(1200 * time.Millisecond)
	var text string
	for {
		text = gather(t, reg)
		if strings.Contains(text, inFlight) && strings.Contains(text, rate) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(text, inFlight) || !strings.Contains(text, rate) {
		t.Errorf("while both ran (%d requests held), want %q and %q in\n%s", held.Load(), inFlight, rate, grep(text, sel))
	}
	close(release)
	wg.Wait()
	text = gather(t, reg)
	for _, want := range []string{"proxybench_requests_in_flight" + sel + "0\n", "proxybench_target_rate_requests_per_second" + sel + "0\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("after both ended, want %q in\n%s", want, grep(text, sel))
		}
	}
}

// A target slower than the offered rate, behind 2 connections: the knee's
// "sent < 99 % of scheduled" fires, and says the cap was reached.
func TestKneeStopsWhenMaxInFlightIsReached(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(20 * time.Millisecond) })
	a, _ := newAttacker(t)
	last, steps, err := a.Knee(context.Background(), Spec{URL: srv.URL},
		KneeOptions{StartRate: 25, Step: 100, MaxRate: 500, StepDuration: time.Second, MaxInFlight: 2, Warmup: 200 * time.Millisecond,
			P99: time.Minute, MaxErrorRatio: 0.5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) < 2 || steps[0].WarmupStart.IsZero() || steps[0].Result.Start.Sub(steps[0].WarmupStart) < 200*time.Millisecond ||
		!steps[1].WarmupStart.IsZero() {
		t.Errorf("want the first step alone warmed up for 200ms: %+v", steps)
	}
	for _, s := range steps {
		t.Logf("rate %v held %v %s: sent %d of %d, capped %d", s.Rate, s.Held, s.Why, s.Result.Sent, s.Result.Scheduled, s.Result.Capped)
	}
	if last != 25 || len(steps) != 2 || steps[1].Held {
		t.Fatalf("knee at %v after %d steps, want 25 held and 125 broken", last, len(steps))
	}
	if why := steps[1].Why; !strings.Contains(why, "max in flight reached (capped ") {
		t.Errorf("why %q, want max in flight reached", why)
	}
}

// The knee tells the target's saturation (capped sends) from a loadgen that
// could not keep up (misses without capping), and a target's tail from one
// a stall of the loadgen's process accounts for.
func TestKneeWhyTellsCappedFromMissed(t *testing.T) {
	t.Parallel()
	o := KneeOptions{P99: time.Second, MaxErrorRatio: 0.01}
	ok := map[int]int64{200: 900}
	// 98 responses of 5 ms and two of 1.3 s: a p99 of 1.3 s (to the
	// histogram's precision), 1.295 s over
	// the median.
	tail := newHist()
	for i := range 100 {
		v := int64(5000)
		if i >= 98 {
			v = 1_300_000
		}
		tail.RecordValue(v)
	}
	slow := Result{Requests: 100, Codes: map[int]int64{200: 100}, Scheduled: 100, Sent: 100, Hist: tail}
	for _, tc := range []struct {
		name  string
		res   Result
		stall time.Duration
		want  string
	}{
		{"tail", slow, 30 * time.Millisecond, "p99 1.300479s > 1s"},
		{"loadgen", slow, 1290 * time.Millisecond, "p99 1.300479s > 1s while the loadgen could not run for 1.29s (a host's stall, not the target's tail)"},
		{"held", Result{Requests: 1000, Codes: map[int]int64{200: 1000}, Scheduled: 1000, Sent: 995, Missed: 5}, 0, ""},
		{"capped", Result{Requests: 900, Codes: ok, Scheduled: 1000, Sent: 900, Missed: 100, Capped: 400}, 0,
			"sent 900 of 1000 scheduled inside the window: max in flight reached (capped 400, 0 queued past its end)"},
		{"loadgen", Result{Requests: 900, Codes: ok, Scheduled: 1000, Sent: 900, Missed: 100, Capped: 2, LagP99: 30 * time.Millisecond}, 0,
			"sent 900 of 1000 scheduled inside the window: the loadgen could not keep up (missed 100, queued past its end 0, lag p99 30ms)"},
		{"errors first", Result{Requests: 900, Errors: 100, Codes: ok, Scheduled: 1000, Sent: 1000}, 0, "error ratio 0.1000 > 0.0100 (errors and 5xx)"},
	} {
		got, retry, instrument := kneeWhy(&tc.res, o, 1000, 0, tc.stall)
		if got != tc.want || retry != (tc.name == "loadgen") || instrument != (tc.name == "loadgen") {
			t.Errorf("%s: why %q (run again %v, the instrument's %v), want %q", tc.name, got, retry, instrument, tc.want)
		}
	}
}

// The edges are called once each, at Result.Start and Result.End, and when
// ctx ends early (then the end at the cancellation).
func TestOnEdge(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	for _, tc := range []struct {
		name   string
		s      Spec
		cancel time.Duration
	}{
		{"open", Spec{Load: load.Open{Rate: 200, Duration: 300 * time.Millisecond}}, 0},
		{"cancelled", Spec{Load: load.Closed{Connections: 2, Duration: time.Minute}}, 300 * time.Millisecond},
		{"cancelled open", Spec{Load: load.Open{Rate: 100, Duration: time.Minute}}, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, _ := newAttacker(t)
			var edges edgeLog
			s := tc.s
			s.URL, s.OnEdge = srv.URL, edges.on
			ctx := context.Background()
			if tc.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.cancel)
				defer cancel()
			}
			res, err := a.Run(ctx, s, nil)
			if tc.cancel > 0 != errors.Is(err, context.DeadlineExceeded) || res == nil {
				t.Fatalf("err %v", err)
			}
			if len(edges.calls) != 2 {
				t.Fatalf("edges %+v, want a start and an end", edges.calls)
			}
			if why := edges.check(res.Start, res.End); why != "" {
				t.Error(why)
			}
			if dl, ok := ctx.Deadline(); ok && (res.End.Before(dl) || res.End.Sub(dl) > 200*time.Millisecond) {
				t.Errorf("window ends %v after the cancellation, want just after", res.End.Sub(dl))
			}
		})
	}
}

// StartAt holds the first send until the barrier, on every engine: the
// window starts there, not when Run was called.
func TestStartAtHoldsTheWindow(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	for _, tc := range []struct {
		name string
		m    load.Model
		opts []Option
	}{
		{"event loop", load.Closed{Connections: 2, Duration: 100 * time.Millisecond}, nil},
		{"goroutines", load.Closed{Connections: 2, Duration: 100 * time.Millisecond}, []Option{WithGoroutinePerConn()}},
		{"open loop", load.Open{Rate: 200, Duration: 100 * time.Millisecond}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, _ := newAttacker(t, tc.opts...)
			at := time.Now().Add(250 * time.Millisecond)
			res := mustRun(t, a, Spec{URL: srv.URL, Load: tc.m, StartAt: at})
			if res.Start.Before(at) || res.Start.Sub(at) > 50*time.Millisecond || res.Requests == 0 {
				t.Errorf("window starts %v after the barrier (want 0..50ms), %d requests", res.Start.Sub(at), res.Requests)
			}
		})
	}
}
