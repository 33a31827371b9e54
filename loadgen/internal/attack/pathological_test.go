package attack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/wire/wiretest"
)

// A misbehaving proxy must cost the loadgen a bounded time, memory and
// label set: each pathological response below is sent by a real TCP server
// to the real engines, and must end as an error with its reason, its
// connection closed, within the plan, while the requests after it succeed.

// pathoServer answers its first n requests with a pathology, and the others
// with a small 200. (A count, not a time: a pathology that fails fast costs
// a connection per request, and the machine's ephemeral ports are shared.)
type pathoServer struct {
	url     string
	n       int64
	claimed atomic.Int64 // requests read
	sent    atomic.Int64 // bytes written, pathological and good
	bad     atomic.Int64 // pathological responses started
	longest atomic.Int64 // ns from a pathology's start to the client closing its connection
	ended   atomic.Int64 // pathological connections the client closed
	good    atomic.Int64 // well-behaved responses written after the pathologies
}

// allClosed waits up to d for the client to have closed every pathological
// connection.
func (s *pathoServer) allClosed(d time.Duration) bool {
	for end := time.Now().Add(d); s.ended.Load() < s.bad.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			return false
		}
	}
	return true
}

// pathology writes one response to c until the client goes away (gone is
// closed, or a write fails), counting what it writes into sent.
type pathology func(c net.Conn, gone <-chan struct{}, sent *atomic.Int64)

func newPathoServer(t *testing.T, n int64, bad pathology) *pathoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &pathoServer{url: "http://" + ln.Addr().String() + "/", n: n}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c, bad, done)
		}
	}()
	return s
}

func (s *pathoServer) serve(c net.Conn, bad pathology, done <-chan struct{}) {
	over := make(chan struct{})
	defer close(over)
	defer c.Close()
	go func() {
		select {
		case <-done: // the test is over: unblock the reads and writes
			c.Close()
		case <-over:
		}
	}()
	br := bufio.NewReader(c)
	for wiretest.ReadRequest(br) == nil {
		now := time.Now()
		if s.claimed.Add(1) > s.n {
			time.Sleep(pathoGoodDelay)
			n, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			s.sent.Add(int64(n))
			if err != nil {
				return
			}
			s.good.Add(1)
			continue
		}
		s.bad.Add(1)
		// The client sends nothing more on this connection: a read returns
		// when it closes it.
		gone := make(chan struct{})
		go func() {
			br.ReadByte() //nolint:errcheck // any outcome means gone
			close(gone)
		}()
		bad(c, gone, &s.sent)
		<-gone
		for d, l := int64(time.Since(now)), s.longest.Load(); d > l && !s.longest.CompareAndSwap(l, d); l = s.longest.Load() {
		}
		s.ended.Add(1)
		return
	}
}

// pathoGoodDelay keeps the closed loops after the pathology from taking
// every CPU of the machine: the good responses are prompt, not instant.
const pathoGoodDelay = 5 * time.Millisecond

// stream writes head, then block over and over, as fast as the client reads.
func stream(head string, block []byte) pathology {
	return func(c net.Conn, gone <-chan struct{}, sent *atomic.Int64) {
		n, err := c.Write([]byte(head))
		sent.Add(int64(n))
		for err == nil {
			select {
			case <-gone:
				return
			default:
			}
			n, err = c.Write(block)
			sent.Add(int64(n))
		}
	}
}

// trickle writes head, then one byte every interval: each read of the
// client finds data long before any per-read timeout.
func trickle(head string, every time.Duration) pathology {
	return func(c net.Conn, gone <-chan struct{}, sent *atomic.Int64) {
		n, err := c.Write([]byte(head))
		sent.Add(int64(n))
		for err == nil {
			select {
			case <-gone:
				return
			case <-time.After(every):
			}
			n, err = c.Write([]byte("a"))
			sent.Add(int64(n))
		}
	}
}

var (
	pathoBlock = []byte(strings.Repeat("x", 32<<10))
	pathoChunk = []byte(fmt.Sprintf("%x\r\n%s\r\n", len(pathoBlock), pathoBlock))
)

type pathoCase struct {
	name     string
	bad      pathology
	n        int64 // pathological responses: the slow ones hold a connection for the timeout
	reason   string
	spec     func(*Spec) // limits other than the test's
	leanOnly bool        // not for net/http
}

var pathoCases = []pathoCase{
	{"content-length 5e9", stream("HTTP/1.1 200 OK\r\nContent-Length: 5000000000\r\n\r\n", pathoBlock), 16, "body_too_large", nil, false},
	{"endless chunked body", stream("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", pathoChunk), 16, "body_too_large", nil, false},
	{"endless body until close", stream("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", pathoBlock), 16, "body_too_large", nil, false},
	{"endless header lines", stream("HTTP/1.1 200 OK\r\n", []byte(strings.Repeat("X-Pad: "+strings.Repeat("a", 55)+"\r\n", 512))), 16, "header_too_large", nil, false},
	{"endless header line", stream("HTTP/1.1 200 OK\r\nX-Long: ", pathoBlock), 16, "header_too_large", nil, false},
	{"endless 100 continue", stream("", []byte(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 1024))), 16, "header_too_large", nil, false},
	{"slow-loris head", trickle("HTTP/1.1 200 OK\r\nX-Slow: ", 50*time.Millisecond), 2, "timeout", nil, false},
	{"slow-loris body", trickle("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", 50*time.Millisecond), 2, "timeout", nil, false},
	// Beyond the limits only the timeout ends a fast endless stream: the
	// event loop must still see it while the bytes keep coming (an endless
	// body, cheaper to read than to send, is in the heap test; net/http
	// allocates a response per 1xx, a load of its own on a small machine).
	{"endless 100 continue, limits raised", stream("", []byte(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 1024))), 2, "timeout",
		func(s *Spec) { s.MaxHeaderBytes = 1 << 50 }, true},
}

type pathoEngine struct {
	name string
	opts []Option
	open bool
}

var pathoEngines = []pathoEngine{
	{"event loop", nil, false},
	{"goroutine per conn", []Option{WithGoroutinePerConn()}, false},
	{"open loop", nil, true},
	{"net/http", []Option{WithNetHTTP()}, false},
}

func pathoSpec(url string, e pathoEngine, timeout, d time.Duration) Spec {
	s := Spec{URL: url, Load: load.Closed{Connections: 2, Duration: d}, Timeout: timeout, MaxBodyBytes: 256 << 10}
	if e.open {
		s.Load = load.Open{Rate: 25, MaxInFlight: 16, Duration: d}
	}
	return s
}

// TestPathologicalResponses: every engine bounds every pathology, counts it
// under its reason, closes the connection and goes on. All the runs go at
// once. Each ends once its server has answered pathoGood well-behaved
// requests after its pathologies (ctx cancelled), and at the latest at the
// end of its plan: how long the pathologies take depends on the machine's
// load (40 attacks at once on 2 cores), so the run waits for them instead
// of assuming a time. Not parallel with the package's other tests: their
// timing must not share the CPUs with 40 attacks.
func TestPathologicalResponses(t *testing.T) {
	const (
		timeout   = 500 * time.Millisecond // ten trickled bytes: no read waits long
		dur       = 8 * time.Second        // the plan: an upper bound, not the expected time
		margin    = 3 * time.Second        // liveness only: a loaded 2-core machine
		pathoGood = 8                      // well-behaved answers that end a run
	)
	var wg sync.WaitGroup
	for _, e := range pathoEngines {
		for _, tc := range pathoCases {
			if tc.leanOnly && e.name == "net/http" {
				continue
			}
			name := e.name + "/" + tc.name
			srv := newPathoServer(t, tc.n, tc.bad)
			a, reg := newAttacker(t, e.opts...)
			spec := pathoSpec(srv.url, e, timeout, dur)
			if tc.spec != nil {
				tc.spec(&spec)
			}
			wg.Go(func() {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() {
					for ctx.Err() == nil && srv.good.Load() < pathoGood {
						time.Sleep(10 * time.Millisecond)
					}
					cancel()
				}()
				t0 := time.Now()
				res, err := a.Run(ctx, spec, nil)
				took := time.Since(t0)
				if err != nil && !errors.Is(err, context.Canceled) || res == nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				if took > dur+timeout+margin {
					t.Errorf("%s: the run took %v: its plan is %v plus a %v drain", name, took, dur, timeout)
				}
				// The pathological responses are errors with their reason. A
				// machine too loaded to answer within the timeout times some
				// requests out instead (the bound that always holds), but a
				// limit must have been hit.
				bad := srv.bad.Load()
				var want, others int64
				for _, m := range []map[string]int64{res.ErrorReasons, res.LateReasons} {
					for r, n := range m {
						switch r {
						case tc.reason:
							want += n
						case "timeout":
						default:
							others += n
						}
					}
				}
				if bad != tc.n || want == 0 || others != 0 || tc.reason != "timeout" && want > bad {
					t.Errorf("%s: the server sent %d pathological responses; errors %v, late %v: want %q", name, bad, res.ErrorReasons, res.LateReasons, tc.reason)
				}
				if got := promErrors(t, reg, tc.reason); got != float64(want) {
					t.Errorf("%s: proxybench_request_errors_total{reason=%q} = %v, the result says %d", name, tc.reason, got, want)
				}
				// The engine goes on: the same path answers well afterwards.
				if res.Requests == 0 || res.Codes[200] != res.Requests {
					t.Errorf("%s: requests %d codes %v: the well-behaved responses after the pathology must succeed", name, res.Requests, res.Codes)
				}
				// The client closes a pathology's connection, within the
				// timeout (a liveness bound, not a timing target).
				if !srv.allClosed(margin) {
					t.Errorf("%s: %d of %d pathological connections still open after the run", name, srv.bad.Load()-srv.ended.Load(), srv.bad.Load())
				}
				if l := time.Duration(srv.longest.Load()); l > timeout+margin {
					t.Errorf("%s: a pathological connection stayed open %v, the timeout is %v", name, l, timeout)
				}
			})
		}
	}
	wg.Wait()
}

// promErrors reads proxybench_request_errors_total{reason} of reg (-1 when
// it cannot).
func promErrors(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Error(err)
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "proxybench_request_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Errorf("no proxybench_request_errors_total{reason=%q}: the reasons are pre-initialised", reason)
	return -1
}

// TestPathologicalResponsesHeapBounded: the body is discarded, never
// buffered, with or without a limit. Not parallel: the heap is the process's.
func TestPathologicalResponsesHeapBounded(t *testing.T) {
	const (
		timeout = 300 * time.Millisecond
		dur     = 300 * time.Millisecond
		limit   = 1 << 20
	)
	for _, tc := range []struct {
		name   string
		reason string
		body   int64
	}{
		{"endless chunked body over the limit", "body_too_large", limit},
		{"endless chunked body, no limit in reach", "timeout", 1 << 50},
	} {
		for _, e := range pathoEngines {
			if e.open {
				continue // the goroutine engine's client
			}
			t.Run(tc.name+"/"+e.name, func(t *testing.T) {
				srv := newPathoServer(t, 1<<62, stream("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", pathoChunk))
				a, _ := newAttacker(t, e.opts...)
				spec := pathoSpec(srv.url, e, timeout, dur)
				spec.MaxBodyBytes = tc.body
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				base := ms.HeapInuse
				peak := base
				stop := make(chan struct{})
				sampled := make(chan struct{})
				go func() {
					defer close(sampled)
					var ms runtime.MemStats
					tick := time.NewTicker(5 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						runtime.ReadMemStats(&ms)
						peak = max(peak, ms.HeapInuse)
					}
				}()
				res := mustRun(t, a, spec)
				close(stop)
				<-sampled
				sent := srv.sent.Load()
				// (A loaded machine may time out a read before the limit.)
				want := res.ErrorReasons[tc.reason] + res.LateReasons[tc.reason]
				other := res.Errors + res.Late - want
				if tc.reason != "timeout" {
					other -= res.ErrorReasons["timeout"] + res.LateReasons["timeout"]
				}
				if want == 0 || other != 0 {
					t.Errorf("errors %v late %v: want %q", res.ErrorReasons, res.LateReasons, tc.reason)
				}
				// The server must have sent far more than the limit, and than
				// the heap may grow, for the bound to mean anything.
				if sent < 16*limit {
					t.Fatalf("the server sent only %d bytes", sent)
				}
				if grew := int64(peak) - int64(base); grew > 16<<20 || grew > sent/8 {
					t.Errorf("heap grew %d bytes while the server sent %d: the body must be discarded", grew, sent)
				}
			})
		}
	}
}

// TestEventLoopTimeoutUnderFastStream: a head cheaper to send than to parse
// keeps the event loop's socket readable for as long as the server writes;
// the shard must still turn and time the request out. (Before the read
// budget, a request with a 300 ms timeout was seen alive 57 s.)
func TestEventLoopTimeoutUnderFastStream(t *testing.T) {
	const (
		timeout = 300 * time.Millisecond
		dur     = 300 * time.Millisecond
		margin  = 2 * time.Second // liveness only: a loaded 2-core machine
	)
	srv := newPathoServer(t, 1<<62, stream("HTTP/1.1 200 OK\r\n", []byte(strings.Repeat("a:\n", 8<<10))))
	a, _ := newAttacker(t)
	t0 := time.Now()
	// One connection, one shard: the other CPU keeps the server ahead.
	res := mustRun(t, a, Spec{URL: srv.url, Load: load.Closed{Connections: 1, Duration: dur}, Timeout: timeout, MaxHeaderBytes: 1 << 50})
	if took := time.Since(t0); took > dur+timeout+margin {
		t.Errorf("the run took %v: its plan is %v plus a %v drain", took, dur, timeout)
	}
	if n := res.ErrorReasons["timeout"] + res.LateReasons["timeout"]; n == 0 || n != res.Errors+res.Late {
		t.Errorf("errors %v late %v: want timeouts", res.ErrorReasons, res.LateReasons)
	}
}
