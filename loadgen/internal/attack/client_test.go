package attack

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"proxybench/loadgen/internal/load"
)

type framingCase struct {
	name      string
	method    string
	h         http.HandlerFunc
	code      int
	bytes     int64
	reuse     bool
	newConnRq bool
}

var big = strings.Repeat("0123456789", 10_000) // 100 kB: many reads, larger than the buffer

// framingCases are every way a response body can be framed, with what the
// client must count, and whether it may keep the connection.
var framingCases = []framingCase{
	{"content-length", "GET", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(big)) }, 200, int64(len(big)), true, false},
	{"chunked", "GET", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 10; i++ {
			w.Write([]byte(big[:1000+i]))
			w.(http.Flusher).Flush()
		}
	}, 200, 10*1000 + 45, true, false},
	{"chunked with trailer", "GET", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		w.Write([]byte("abc"))
		w.(http.Flusher).Flush()
		w.Header().Set("X-Sum", "3")
	}, 200, 3, true, false},
	{"empty 204", "GET", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }, 204, 0, true, false},
	{"304", "GET", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(304) }, 304, 0, true, false},
	{"HEAD", "HEAD", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "12345")
	}, 200, 0, true, false},
	{"connection close", "GET", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("bye"))
	}, 200, 3, false, false},
	{"new conn per request", "GET", hello, 200, 18, false, true},
	{"1xx before the response", "GET", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(103)
		w.WriteHeader(200)
		w.Write([]byte("after early hints"))
	}, 200, 17, true, false},
	{"10 kB header line", "GET", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", big[:10_000])
		w.Write([]byte("small body"))
	}, 200, 10, true, false},
	{"status 503", "GET", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "busy", 503) }, 503, 5, true, false},
	{"POST body", "POST", func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) }, 200, 7, true, false},
}

// TestLeanClientFraming drives the goroutine engine's client against
// net/http's server, several requests per connection.
func TestLeanClientFraming(t *testing.T) {
	t.Parallel()
	for _, tc := range framingCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCounted(t, tc.h)
			conns := &srv.conns
			req, err := buildRequest(&Spec{URL: srv.URL + "/x?y=1", Method: tc.method, Body: []byte("payload"),
				NewConnPerRequest: tc.newConnRq})
			if err != nil {
				t.Fatal(err)
			}
			if tc.method != "POST" {
				req, _ = buildRequest(&Spec{URL: srv.URL + "/x?y=1", Method: tc.method, NewConnPerRequest: tc.newConnRq})
			}
			req.head = tc.method == "HEAD"
			c := newLeanConn(req)
			defer c.close()
			const n = 5
			for i := 0; i < n; i++ {
				res, err := c.do(time.Now().Add(5 * time.Second))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if res.code != tc.code || res.bytes != tc.bytes {
					t.Fatalf("request %d: code %d bytes %d, want %d %d", i, res.code, res.bytes, tc.code, tc.bytes)
				}
			}
			wantConns := int64(1)
			if !tc.reuse {
				wantConns = n
			}
			if conns.Load() != wantConns {
				t.Errorf("%d connections for %d requests, want %d", conns.Load(), n, wantConns)
			}
		})
	}
}

// TestEventLoopFraming runs the same cases through the closed-loop event
// loop: every response counted with its exact body size, connections kept
// or not as the case says.
func TestEventLoopFraming(t *testing.T) {
	t.Parallel()
	if !evLoopAvailable {
		t.Skip("no event loop on this OS")
	}
	for _, tc := range framingCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCounted(t, tc.h)
			conns := &srv.conns
			a, _ := newAttacker(t)
			s := Spec{URL: srv.URL + "/x?y=1", Method: tc.method, Load: load.Closed{Connections: 2, Duration: 200 * time.Millisecond},
				NewConnPerRequest: tc.newConnRq}
			if tc.method == "POST" {
				s.Body = []byte("payload")
			}
			res := mustRun(t, a, s)
			if res.Errors != 0 || res.Requests == 0 || res.Codes[tc.code] != res.Requests || res.Bytes != res.Requests*tc.bytes {
				t.Fatalf("requests %d errors %v codes %v bytes %d (want %d each)", res.Requests, res.ErrorReasons, res.Codes, res.Bytes, tc.bytes)
			}
			if res.Requests+res.Late != srv.handled.Load() || res.LateCodes[tc.code] != res.Late {
				t.Errorf("requests %d + late %d %v, server handled %d", res.Requests, res.Late, res.LateCodes, srv.handled.Load())
			}
			if tc.reuse && (conns.Load() < 1 || conns.Load() > 2) {
				t.Errorf("%d connections for 2 keep-alive workers", conns.Load())
			}
			if !tc.reuse && conns.Load() != res.Requests+res.Late {
				t.Errorf("%d connections for %d requests", conns.Load(), res.Requests+res.Late)
			}
		})
	}
}

// rawServer answers every connection with fn, for responses net/http's
// server would never send.
func rawServer(t testing.TB, fn func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); fn(c) }()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// readRequest consumes one request head (the tests send no body).
func readRequest(br *bufio.Reader) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" {
			return nil
		}
	}
}

type rawCase struct {
	name  string
	resp  string
	close bool // server closes after the response
	code  int
	bytes int64
	err   errReason
	fail  bool
}

// rawCases are responses net/http's server would never send.
var rawCases = []rawCase{
	{"HTTP/1.0 body until close", "HTTP/1.0 200 OK\r\n\r\nuntil close", true, 200, 11, 0, false},
	{"HTTP/1.1 body until close", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close", true, 200, 11, 0, false},
	{"no reason phrase", "HTTP/1.1 404\r\nContent-Length: 2\r\n\r\nno", false, 404, 2, 0, false},
	{"100 continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", false, 200, 1, 0, false},
	{"garbage", "HELLO\r\n\r\n", true, 0, 0, reasonProtocol, true},
	{"bad content-length", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", true, 0, 0, reasonProtocol, true},
	{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", true, 0, 0, reasonProtocol, true},
	{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true, 0, 0, reasonEOF, true},
	{"cut headers", "HTTP/1.1 200 OK\r\nContent-Le", true, 0, 0, reasonEOF, true},
	{"101", "HTTP/1.1 101 Switching Protocols\r\n\r\n", true, 0, 0, reasonProtocol, true},
}

func TestLeanClientRawResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range rawCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				for readRequest(br) == nil {
					c.Write([]byte(tc.resp))
					if tc.close {
						return
					}
				}
			})
			req, _ := buildRequest(&Spec{URL: url})
			c := newLeanConn(req)
			defer c.close()
			for i := 0; i < 3; i++ {
				res, err := c.do(time.Now().Add(2 * time.Second))
				if tc.fail {
					if err == nil || classify(err) != tc.err {
						t.Fatalf("err %v (%v), want reason %v", err, classifyOrNil(err), tc.err)
					}
					continue
				}
				if err != nil || res.code != tc.code || res.bytes != tc.bytes {
					t.Fatalf("request %d: %+v %v, want code %d bytes %d", i, res, err, tc.code, tc.bytes)
				}
			}
		})
	}
}

func classifyOrNil(err error) string {
	if err == nil {
		return "nil"
	}
	return classify(err).String()
}

func TestEventLoopRawResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range rawCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := rawServer(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				for readRequest(br) == nil {
					c.Write([]byte(tc.resp))
					if tc.close {
						return
					}
				}
			})
			a, _ := newAttacker(t)
			res := mustRun(t, a, Spec{URL: url, Load: load.Closed{Connections: 1, Duration: 200 * time.Millisecond}, Timeout: time.Second})
			if tc.fail {
				if res.Errors == 0 || res.Requests != 0 || res.ErrorReasons[tc.err.String()] != res.Errors {
					t.Fatalf("requests %d errors %v, want all %v", res.Requests, res.ErrorReasons, tc.err)
				}
				return
			}
			if res.Errors != 0 || res.Requests == 0 || res.Codes[tc.code] != res.Requests || res.Bytes != tc.bytes*res.Requests {
				t.Fatalf("requests %d errors %v codes %v bytes %d, want code %d and %d bytes each", res.Requests, res.ErrorReasons, res.Codes, res.Bytes, tc.code, tc.bytes)
			}
		})
	}
}

// A keep-alive connection the server closes while idle must not cost an
// error: the request is retried once on a fresh connection, as net/http does.
func TestLeanClientRetriesStaleKeepAlive(t *testing.T) {
	t.Parallel()
	url := oneShotServer(t)
	req, _ := buildRequest(&Spec{URL: url})
	c := newLeanConn(req)
	defer c.close()
	for i := 0; i < 4; i++ {
		time.Sleep(10 * time.Millisecond) // let the close arrive
		if _, err := c.do(time.Now().Add(2 * time.Second)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
}

// oneShotServer answers one request per connection, then closes it without
// saying so (no Connection: close): every reuse finds a dead connection.
func oneShotServer(t testing.TB) string {
	return rawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if readRequest(br) == nil {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		}
	})
}

func TestEventLoopRetriesStaleKeepAlive(t *testing.T) {
	t.Parallel()
	srv := oneShotServer(t)
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
			return rawServer(t, func(c net.Conn) {
				readRequest(bufio.NewReader(c))
				c.(*net.TCPConn).SetLinger(0) // close sends RST
			})
		}, "reset", true},
		{"timeout", func(t testing.TB) string {
			return rawServer(t, func(c net.Conn) {
				readRequest(bufio.NewReader(c))
				time.Sleep(2 * time.Second)
			})
		}, "timeout", true},
		{"eof", func(t testing.TB) string {
			return rawServer(t, func(c net.Conn) { readRequest(bufio.NewReader(c)) })
		}, "eof", true},
		{"protocol", func(t testing.TB) string {
			return rawServer(t, func(c net.Conn) {
				readRequest(bufio.NewReader(c))
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

// FuzzReadResponse: the parser never panics, never reports more body bytes
// than it was given, and agrees with net/http on whether a simple
// Content-Length response is valid.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, head bool) {
		br := bufio.NewReaderSize(bytes.NewReader(in), 16<<10)
		res, _, err := readResponse(br, head, []byte("go"), defaultLimits)
		if err == nil && (res.code < 100 || res.code > 999) {
			t.Fatalf("accepted status %d", res.code)
		}
		if res.bytes > int64(len(in)) {
			t.Fatalf("%d body bytes from %d input bytes", res.bytes, len(in))
		}
	})
}

// FuzzParserMatchesReadResponse: the event loop's incremental parser, fed
// the input in chunks of any size, reaches the same verdict as the bufio
// parser: same status, body bytes, keep-alive and error reason. With the
// top bit of chunk set both run under small limits, drawn from chunk.
func FuzzParserMatchesReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Origin: go\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
	} {
		f.Add([]byte(s), false, uint8(1))
		f.Add([]byte(s), false, uint8(7))
		f.Add([]byte(s), false, uint8(0x80|5))
		f.Add([]byte(s), false, uint8(0x80|12))
	}
	f.Fuzz(func(t *testing.T, in []byte, head bool, chunk uint8) {
		lim := defaultLimits
		if chunk&0x80 != 0 {
			lim = limits{header: 20 + 4*int(chunk&0x3f), body: int64(chunk & 0x7)}
		}
		want, wantKeep, wantErr := readResponse(bufio.NewReaderSize(bytes.NewReader(in), 16<<10), head, []byte("go"), lim)
		p := respParser{head: head, origin: []byte("go"), lim: lim}
		var buf []byte
		var done bool
		var err error
		step := int(chunk%64) + 1
		for off := 0; off < len(in) && !done && err == nil; off += step {
			buf = append(buf, in[off:min(off+step, len(in))]...)
			var n int
			n, done, err = p.feed(buf)
			buf = buf[n:]
		}
		if !done && err == nil {
			done, err = p.eof()
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("parser err %v, readResponse err %v", err, wantErr)
		}
		if err != nil {
			if classify(err) != classify(wantErr) && !(classify(wantErr) == reasonEOF || classify(err) == reasonEOF) {
				t.Fatalf("parser reason %v (%v), readResponse %v (%v)", classify(err), err, classify(wantErr), wantErr)
			}
			return
		}
		if p.resp != want || p.keep != wantKeep {
			t.Fatalf("parser %+v keep %v, readResponse %+v keep %v", p.resp, p.keep, want, wantKeep)
		}
	})
}
