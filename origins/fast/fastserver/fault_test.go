package fastserver

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUnavailable is the lab's 503 fault switch: while on, every route
// answers 503 with X-Origin (a POST's body is skipped, so keep-alive
// holds); off again, the contract's answers come back.
func TestUnavailable(t *testing.T) {
	var on atomic.Bool
	serve := func(in string) string {
		var buf bytes.Buffer
		s := newServer("fast", fixedNow)
		s.unavailable = &on
		c := s.newConn(&memTransport{in: []byte(in), out: &buf})
		for c.serveOne() {
		}
		return buf.String()
	}
	reqs := "GET / HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" +
		"GET /bytes/5 HTTP/1.1\r\nHost: x\r\n\r\n"
	on.Store(true)
	out := serve(reqs)
	if got := statuses(t, out); len(got) != 4 || got[0] != 503 || got[1] != 503 || got[2] != 503 || got[3] != 503 {
		t.Fatalf("statuses while unavailable = %v, want four 503s:\n%s", got, out)
	}
	if !strings.Contains(out, UnavailableBody) || !strings.Contains(out, "X-Origin: fast\r\n") {
		t.Errorf("a 503 without its body or X-Origin:\n%s", out)
	}
	on.Store(false)
	if got := statuses(t, serve(reqs)); len(got) != 4 || got[0] != 200 || got[1] != 200 || got[2] != 200 || got[3] != 200 {
		t.Fatalf("statuses with the switch off = %v, want four 200s", got)
	}
}

// TestServedCountsRootAnswers: the origin's own count holds every GET /
// it answered, on connections still open and on closed ones, and nothing
// else (a /healthz, a 404).
func TestServedCountsRootAnswers(t *testing.T) {
	s := newServer("fast", time.Now) // a real pipe keeps read deadlines: the clock must be now
	conn := func() (net.Conn, *bufio.Reader, chan struct{}) {
		cli, srv := net.Pipe()
		done := make(chan struct{})
		go func() { s.serveConn(srv); close(done) }()
		return cli, bufio.NewReader(cli), done
	}
	get := func(c net.Conn, r *bufio.Reader, path string) {
		t.Helper()
		if _, err := c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	a, ra, doneA := conn()
	b, rb, _ := conn()
	for range 3 {
		get(a, ra, "/")
	}
	get(a, ra, "/healthz")
	get(b, rb, "/")
	get(b, rb, "/nope")
	if n := s.Served(); n != 4 {
		t.Errorf("served %d with both connections open, want 4", n)
	}
	a.Close()
	<-doneA
	get(b, rb, "/")
	if n := s.Served(); n != 5 {
		t.Errorf("served %d after one connection closed, want 5", n)
	}
	b.Close()
}
