package wire

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"testing"
	"time"

	"proxybench/loadgen/internal/wire/wiretest"
)

// defaultLimits are the attack's defaults (attack.DefaultMaxHeaderBytes,
// DefaultMaxBodyBytes).
var defaultLimits = Limits{Header: 64 << 10, Body: 64 << 20}

// TestLeanClientFraming drives the goroutine engine's client against
// net/http's server, several requests per connection.
func TestLeanClientFraming(t *testing.T) {
	t.Parallel()
	for _, tc := range wiretest.FramingCases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.NewCounted(t, tc.H)
			conns := &srv.Conns
			req, err := NewRequest(Target{Limits: defaultLimits, URL: srv.URL + "/x?y=1", Method: tc.Method, Body: []byte("payload"),
				NewConnPerRequest: tc.NewConnRq})
			if err != nil {
				t.Fatal(err)
			}
			if tc.Method != "POST" {
				req, _ = NewRequest(Target{Limits: defaultLimits, URL: srv.URL + "/x?y=1", Method: tc.Method, NewConnPerRequest: tc.NewConnRq})
			}
			req.head = tc.Method == "HEAD"
			c := NewLeanConn(req)
			defer c.Close()
			const n = 5
			for i := 0; i < n; i++ {
				res, err := c.Do(time.Now().Add(5 * time.Second))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if res.Code != tc.Code || res.Bytes != tc.Bytes {
					t.Fatalf("request %d: code %d bytes %d, want %d %d", i, res.Code, res.Bytes, tc.Code, tc.Bytes)
				}
			}
			wantConns := int64(1)
			if !tc.Reuse {
				wantConns = n
			}
			if conns.Load() != wantConns {
				t.Errorf("%d connections for %d requests, want %d", conns.Load(), n, wantConns)
			}
		})
	}
}

func TestLeanClientRawResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range wiretest.RawCases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			url := tc.Serve(t)
			req, _ := NewRequest(Target{URL: url, Limits: defaultLimits})
			c := NewLeanConn(req)
			defer c.Close()
			for i := 0; i < 3; i++ {
				res, err := c.Do(time.Now().Add(2 * time.Second))
				if tc.Err != "" {
					if err == nil || Classify(err).String() != tc.Err {
						t.Fatalf("err %v (%v), want reason %v", err, classifyOrNil(err), tc.Err)
					}
					continue
				}
				if err != nil || res.Code != tc.Code || res.Bytes != tc.Bytes {
					t.Fatalf("request %d: %+v %v, want code %d bytes %d", i, res, err, tc.Code, tc.Bytes)
				}
			}
		})
	}
}

func classifyOrNil(err error) string {
	if err == nil {
		return "nil"
	}
	return Classify(err).String()
}

// A keep-alive connection the server closes while idle must not cost an
// error: the request is retried once on a fresh connection, as net/http does.
func TestLeanClientRetriesStaleKeepAlive(t *testing.T) {
	t.Parallel()
	url := wiretest.OneShotServer(t)
	req, _ := NewRequest(Target{URL: url, Limits: defaultLimits})
	c := NewLeanConn(req)
	defer c.Close()
	for i := 0; i < 4; i++ {
		time.Sleep(10 * time.Millisecond) // let the close arrive
		if _, err := c.Do(time.Now().Add(2 * time.Second)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
}

// A request the server holds past its deadline on a used keep-alive
// connection is a timeout, never retried: the connection's deadline may
// sit up to 1 % of the timeout before the request's (it is moved only when
// that saves a timer update), and a retry in that gap once turned hung
// requests into late 200s from a second, healthy connection.
func TestLeanClientTimeoutIsNoStaleRetry(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Every connection answers its first request and holds its second.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 0; ; n++ {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if n == 0 {
						c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
					}
				}
			}()
		}
	}()
	const timeout = 300 * time.Millisecond
	req, _ := NewRequest(Target{URL: "http://" + ln.Addr().String() + "/", Limits: defaultLimits, Timeout: timeout})
	c := NewLeanConn(req)
	defer c.Close()
	first := time.Now().Add(timeout)
	if res, err := c.Do(first); err != nil || res.Code != 200 {
		t.Fatalf("first request: %d %v", res.Code, err)
	}
	// Within 1 % of the timeout: the connection keeps the first deadline.
	res, err := c.Do(first.Add(timeout / 200))
	if err == nil || Classify(err) != ReasonTimeout {
		t.Fatalf("held request: status %d, error %v: want a timeout", res.Code, err)
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
		if err == nil && (res.Code < 100 || res.Code > 999) {
			t.Fatalf("accepted status %d", res.Code)
		}
		if res.Bytes > int64(len(in)) {
			t.Fatalf("%d body bytes from %d input bytes", res.Bytes, len(in))
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
			lim = Limits{Header: 20 + 4*int(chunk&0x3f), Body: int64(chunk & 0x7)}
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
			if Classify(err) != Classify(wantErr) && !(Classify(wantErr) == ReasonEOF || Classify(err) == ReasonEOF) {
				t.Fatalf("parser reason %v (%v), readResponse %v (%v)", Classify(err), err, Classify(wantErr), wantErr)
			}
			return
		}
		if p.resp != want || p.keep != wantKeep {
			t.Fatalf("parser %+v keep %v, readResponse %+v keep %v", p.resp, p.keep, want, wantKeep)
		}
	})
}
