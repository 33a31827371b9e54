package attack

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"proxybench/internal/reqsample"
	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/wire"
	"proxybench/loadgen/internal/wire/wiretest"
)

// The engines end to end on package wire's transports: what reaches the
// Result for every way a response can be framed or fail.

// TestEventLoopFraming runs the same cases through the closed-loop event
// loop: every response counted with its exact body size, connections kept
// or not as the case says.
func TestEventLoopFraming(t *testing.T) {
	t.Parallel()
	if !wire.EventLoopAvailable {
		t.Skip("no event loop on this OS")
	}
	for _, tc := range wiretest.FramingCases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.NewCounted(t, tc.H)
			conns := &srv.Conns
			a, _ := newAttacker(t)
			s := Spec{URL: srv.URL + "/x?y=1", Method: tc.Method, Load: load.Closed{Connections: 2, Duration: 200 * time.Millisecond},
				NewConnPerRequest: tc.NewConnRq}
			if tc.Method == "POST" {
				s.Body = []byte("payload")
			}
			res := mustRun(t, a, s)
			if res.Errors != 0 || res.Requests == 0 || res.Codes[tc.Code] != res.Requests || res.Bytes != res.Requests*tc.Bytes {
				t.Fatalf("requests %d errors %v codes %v bytes %d (want %d each)", res.Requests, res.ErrorReasons, res.Codes, res.Bytes, tc.Bytes)
			}
			if res.Requests+res.Late != srv.Handled.Load() || res.LateCodes[tc.Code] != res.Late {
				t.Errorf("requests %d + late %d %v, server handled %d", res.Requests, res.Late, res.LateCodes, srv.Handled.Load())
			}
			if tc.Reuse && (conns.Load() < 1 || conns.Load() > 2) {
				t.Errorf("%d connections for 2 keep-alive workers", conns.Load())
			}
			if !tc.Reuse && conns.Load() != res.Requests+res.Late {
				t.Errorf("%d connections for %d requests", conns.Load(), res.Requests+res.Late)
			}
		})
	}
}

func TestEventLoopRawResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range wiretest.RawCases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			url := tc.Serve(t)
			a, _ := newAttacker(t)
			res := mustRun(t, a, Spec{URL: url, Load: load.Closed{Connections: 1, Duration: 200 * time.Millisecond}, Timeout: time.Second})
			if tc.Err != "" {
				if res.Errors == 0 || res.Requests != 0 || res.ErrorReasons[tc.Err] != res.Errors {
					t.Fatalf("requests %d errors %v, want all %v", res.Requests, res.ErrorReasons, tc.Err)
				}
				return
			}
			if res.Errors != 0 || res.Requests == 0 || res.Codes[tc.Code] != res.Requests || res.Bytes != tc.Bytes*res.Requests {
				t.Fatalf("requests %d errors %v codes %v bytes %d, want code %d and %d bytes each", res.Requests, res.ErrorReasons, res.Codes, res.Bytes, tc.Code, tc.Bytes)
			}
		})
	}
}

func TestEventLoopRetriesStaleKeepAlive(t *testing.T) {
	t.Parallel()
	srv := wiretest.OneShotServer(t)
	a, _ := newAttacker(t)
	res := mustRun(t, a, Spec{URL: srv, Load: load.Closed{Connections: 2, Duration: 300 * time.Millisecond}})
	if res.Errors != 0 || res.Requests == 0 {
		t.Errorf("requests %d errors %v: a stale keep-alive must be retried, not counted", res.Requests, res.ErrorReasons)
	}
}

// TestErrorReasons produces every transport failure for real and checks the
// reason the attack reports, for both clients.
func TestErrorReasons(t *testing.T) {
	t.Parallel()
	closedPort := func(t testing.TB) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/"
	}
	for _, tc := range []struct {
		name    string
		url     func(t testing.TB) string
		reason  string
		nethttp bool // net/http reports the same reason
	}{
		{"refused", closedPort, "refused", true},
		{"reset", func(t testing.TB) string {
			return wiretest.RawServer(t, func(c net.Conn) {
				wiretest.ReadRequest(bufio.NewReader(c))
				c.(*net.TCPConn).SetLinger(0) // close sends RST
			})
		}, "reset", true},
		{"timeout", func(t testing.TB) string {
			return wiretest.RawServer(t, func(c net.Conn) {
				wiretest.ReadRequest(bufio.NewReader(c))
				time.Sleep(2 * time.Second)
			})
		}, "timeout", true},
		{"eof", func(t testing.TB) string {
			return wiretest.RawServer(t, func(c net.Conn) { wiretest.ReadRequest(bufio.NewReader(c)) })
		}, "eof", true},
		{"protocol", func(t testing.TB) string {
			return wiretest.RawServer(t, func(c net.Conn) {
				wiretest.ReadRequest(bufio.NewReader(c))
				c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n\r\n"))
			})
		}, "protocol", false},
	} {
		for _, nh := range []bool{false, true} {
			if nh && !tc.nethttp {
				continue
			}
			name := tc.name
			var opts []Option
			if nh {
				name += " net/http"
				opts = append(opts, WithNetHTTP())
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				a, _ := newAttacker(t, opts...)
				timeout := 3 * time.Second // a busy machine must not turn other failures into timeouts
				if tc.reason == "timeout" {
					timeout = 200 * time.Millisecond
				}
				res, err := a.Run(context.Background(), Spec{URL: tc.url(t), Load: load.Closed{Connections: 1, Duration: 300 * time.Millisecond}, Timeout: timeout}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.Errors == 0 || res.Requests != 0 || res.ErrorReasons[tc.reason] != res.Errors {
					t.Errorf("requests %d errors %d reasons %v, want all %q", res.Requests, res.Errors, res.ErrorReasons, tc.reason)
				}
			})
		}
	}
}

// TestEvLoopSampleUsesTheAttacksShare: the event loop feeds one recorder
// per shard (a CPU), not one per connection, so its few recorders share
// the attack's whole sample (reqsample.MaxPerAttack): with 64 connections
// on one shard, a per-connection share (512) would keep only 1024 of the
// attack's requests, a thirty-second of what the sample is sized for.
func TestEvLoopSampleUsesTheAttacksShare(t *testing.T) {
	srv := newCounted(t, hello)
	a, _ := newAttacker(t)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	res := mustRun(t, a, Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 64, Duration: 1500 * time.Millisecond}, SampleRequests: true})
	if a.Engine(&Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 64, Duration: time.Second}}) != EngineEvLoop {
		t.Skip("the event loop is not this host's closed-loop engine")
	}
	if res.Samples == nil || res.Requests < 4096 {
		t.Fatalf("%d requests, samples %v: too few to tell", res.Requests, res.Samples != nil)
	}
	if got, want := len(res.Samples.Uniform), int(min(res.Requests, reqsample.MaxPerAttack)); got < want*9/10 {
		t.Errorf("uniform sample holds %d of %d requests, want about %d", got, res.Requests, want)
	}
}
