// Package wiretest holds the servers and cases the tests of package wire
// and of the engines driving it (package attack) share: every way a body can
// be framed, responses no real server sends, and servers that count or
// misbehave.
package wiretest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Counted is a real HTTP server that counts the requests it handled.
// It also counts the connections it accepted.
type Counted struct {
	*httptest.Server
	Handled atomic.Int64
	Conns   atomic.Int64
}

// NewCounted starts a Counted serving h, closed when t ends.
func NewCounted(t testing.TB, h http.HandlerFunc) *Counted {
	t.Helper()
	c := &Counted{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r)
		c.Handled.Add(1)
	}))
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.Conns.Add(1)
		}
	}
	c.Start()
	t.Cleanup(c.Close)
	return c
}

// Hello answers 200 "hello, proxybench\n" (18 bytes).
func Hello(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Origin", "go")
	w.Write([]byte("hello, proxybench\n"))
}

// FramingCase is a way a response body can be framed.
type FramingCase struct {
	Name      string
	Method    string
	H         http.HandlerFunc
	Code      int   // the status the client must report
	Bytes     int64 // and the body bytes
	Reuse     bool  // whether it may keep the connection
	NewConnRq bool  // the request asks for a new connection per request
}

var big = strings.Repeat("0123456789", 10_000) // 100 kB: many reads, larger than the buffer

// FramingCases are every way a response body can be framed, with what the
// client must count, and whether it may keep the connection.
var FramingCases = []FramingCase{
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
	{"new conn per request", "GET", Hello, 200, 18, false, true},
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

// RawServer answers every connection with fn, for responses net/http's
// server would never send.
func RawServer(t testing.TB, fn func(c net.Conn)) string {
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

// ReadRequest consumes one request head (the tests send no body).
func ReadRequest(br *bufio.Reader) error {
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

// RawCase is a response net/http's server would never send.
type RawCase struct {
	Name  string
	Resp  string
	Close bool // server closes after the response
	Code  int
	Bytes int64
	Err   string // the failure's reason; "" when it succeeds
}

// RawCases are responses net/http's server would never send.
var RawCases = []RawCase{
	{"HTTP/1.0 body until close", "HTTP/1.0 200 OK\r\n\r\nuntil close", true, 200, 11, ""},
	{"HTTP/1.1 body until close", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close", true, 200, 11, ""},
	{"no reason phrase", "HTTP/1.1 404\r\nContent-Length: 2\r\n\r\nno", false, 404, 2, ""},
	{"100 continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", false, 200, 1, ""},
	{"garbage", "HELLO\r\n\r\n", true, 0, 0, "protocol"},
	{"bad content-length", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", true, 0, 0, "protocol"},
	{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", true, 0, 0, "protocol"},
	{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true, 0, 0, "eof"},
	{"cut headers", "HTTP/1.1 200 OK\r\nContent-Le", true, 0, 0, "eof"},
	{"101", "HTTP/1.1 101 Switching Protocols\r\n\r\n", true, 0, 0, "protocol"},
}

// Serve starts a RawServer answering every request with c.Resp (and
// closing after it when c.Close).
func (c RawCase) Serve(t testing.TB) string {
	return RawServer(t, func(conn net.Conn) {
		br := bufio.NewReader(conn)
		for ReadRequest(br) == nil {
			conn.Write([]byte(c.Resp))
			if c.Close {
				return
			}
		}
	})
}

// OneShotServer answers one request per connection, then closes it without
// saying so (no Connection: close): every reuse finds a dead connection.
func OneShotServer(t testing.TB) string {
	return RawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if ReadRequest(br) == nil {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		}
	})
}
