// Package fastserver is the "fast" origin's server: the contract of
// origins/README.md served by a hand-rolled HTTP/1.1 server over net.Conn.
// It exists so that the origin is never the bottleneck when a proxy is
// measured: one goroutine and two fixed buffers per connection, keep-alive
// and pipelining, and no allocation per request on GET /. Command fast
// serves it as the lab's origin; the loadgen serves it as the trivial
// server its own ceiling is measured against.
package fastserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"proxybench/origins/internal/contract"
)

// Buffer sizes per connection. A request line or header line longer than
// readBufSize is refused (414/431); responses bigger than writeBufSize go
// straight to the socket.
const (
	readBufSize  = 8 << 10
	writeBufSize = 4 << 10
	maxHeaders   = 100
	// keepBodyBuf is the largest echo buffer a connection keeps for reuse;
	// bigger ones are dropped after the request so idle connections stay small.
	keepBodyBuf = 1 << 20
	// maxDiscard is the most unwanted request body read to keep a
	// connection alive; beyond it the connection is closed instead.
	maxDiscard = 256 << 10
)

// UnavailableBody is the body of every answer while the 503 fault is on
// (Lab.Unavailable).
const UnavailableBody = "fault: unavailable\n"

// Serve answers the connections of ln as the origin called name until ctx
// ends (then it returns nil) or accepting fails.
func Serve(ctx context.Context, ln net.Listener, name string, log *slog.Logger) error {
	return ServeLab(ctx, ln, name, log, Lab{})
}

// Lab is the lab's hands on a running origin; a nil field is not wired.
type Lab struct {
	// Unavailable: while true, every request is answered 503 with
	// UnavailableBody (and X-Origin), whatever its route (the faults
	// scenario).
	Unavailable *atomic.Bool
	// Count: at each receive the origin logs how many GET / it has
	// answered (msg=served root_requests=N): its own count of a cell's
	// requests, against the loadgen's and the proxies' (the direct
	// control's test).
	Count <-chan struct{}
}

// ServeLab is Serve with the lab's hands (Lab).
func ServeLab(ctx context.Context, ln net.Listener, name string, log *slog.Logger, lab Lab) error {
	s := newServer(name, time.Now)
	s.unavailable = lab.Unavailable
	if lab.Count != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-lab.Count:
					log.Info("served", "root_requests", s.Served())
				}
			}
		}()
	}
	go s.keepClock(ctx, time.Second)
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: back off instead of spinning; the
				// connections being served will free some.
				log.Warn("accept", "err", err)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		go s.serveConn(c)
	}
}

// server holds what all connections share.
type server struct {
	name string
	now  func() time.Time
	// The clock of the hot path, refreshed every second: reading the time
	// and formatting Date per request cost more than the rest of GET /.
	date     atomic.Pointer[[]byte] // "Date: ...\r\n"
	deadline atomic.Int64           // unix ns: now + contract.IdleTimeout
	// Whole answers after the Date line for the fixed 200s (keep-alive).
	rootTail, healthTail []byte
	// unavailable, when set and true, answers every request 503 (Lab).
	unavailable *atomic.Bool
	// The answers to GET / (Served): each live connection counts its own,
	// on a line of its own, so that the hot path shares no counter; a
	// closed connection's count moves to closedRoots.
	mu          sync.Mutex
	live        map[*conn]struct{}
	closedRoots atomic.Uint64
}

// Served is how many GET / (and HEAD /) the server answered 200 so far:
// the origin's own count of the requests a cell sends it, an independent
// reading against the loadgen's and the proxies' counts.
func (s *server) Served() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.closedRoots.Load()
	for c := range s.live {
		n += c.roots.Load()
	}
	return n
}

func newServer(name string, now func() time.Time) *server {
	s := &server{name: name, now: now, live: map[*conn]struct{}{}}
	s.rootTail = fixedTail(name, contract.RootBody)
	s.healthTail = fixedTail(name, contract.HealthBody)
	s.setDate()
	return s
}

func fixedTail(name, body string) []byte {
	return []byte("X-Origin: " + name + "\r\nContent-Type: " + contract.TextPlain +
		"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

func (s *server) setDate() {
	now := s.now()
	b := now.UTC().AppendFormat([]byte("Date: "), "Mon, 02 Jan 2006 15:04:05 GMT")
	b = append(b, "\r\n"...)
	s.date.Store(&b)
	s.deadline.Store(now.Add(contract.IdleTimeout).UnixNano())
}

// keepClock refreshes the hot path's clock once a second.
func (s *server) keepClock(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.setDate()
		}
	}
}

// transport is what a connection needs of its socket; a net.Conn in
// production, an in-memory pipe in the benchmark.
type transport interface {
	io.ReadWriter
	SetReadDeadline(time.Time) error
}

// conn is one client connection and everything it reuses between requests.
type conn struct {
	s   *server
	t   transport
	r   *bufio.Reader
	w   *bufio.Writer
	req request
	// deadline is the read deadline last set, in the server's clock: it is
	// set again only when that clock has moved, not per request.
	deadline int64
	scratch  []byte // small bodies (/delay, /status)
	num      [20]byte
	body     []byte        // echo buffer, kept while at most keepBodyBuf
	_        [64]byte      // roots on a cache line of its own
	roots    atomic.Uint64 // its answers to GET / (server.Served)
}

func (s *server) newConn(t transport) *conn {
	return &conn{
		s:       s,
		t:       t,
		r:       bufio.NewReaderSize(t, readBufSize),
		w:       bufio.NewWriterSize(t, writeBufSize),
		scratch: make([]byte, 0, 64),
		req:     request{path: make([]byte, 0, 64), ctype: make([]byte, 0, 64)},
	}
}

func (s *server) serveConn(nc net.Conn) {
	c := s.newConn(nc)
	s.mu.Lock()
	s.live[c] = struct{}{}
	s.mu.Unlock()
	for c.serveOne() {
	}
	s.mu.Lock()
	delete(s.live, c)
	s.closedRoots.Add(c.roots.Load())
	s.mu.Unlock()
	closeGently(nc)
}

// serveOne reads one request and answers it; false means close the
// connection.
func (c *conn) serveOne() bool {
	// One read deadline, IdleTimeout ahead, covers the idle wait, the head
	// and the echo body: a lab origin needs no finer slowloris defence, and
	// the hot path no clock reads.
	if d := c.s.deadline.Load(); d != c.deadline {
		c.deadline = d
		c.t.SetReadDeadline(time.Unix(0, d)) // fails only once closed, and the read then fails too
	}
	if c.r.Buffered() == 0 {
		if _, err := c.r.Peek(1); err != nil {
			return false // idle timeout or the client closed: no request, no answer
		}
	}
	status := c.readRequest()
	if status != 0 {
		c.req.close = true
		c.replyError(status)
		c.w.Flush() // closing anyway
		return false
	}
	keep := c.handle()
	if !keep {
		c.w.Flush() // closing anyway
		return false
	}
	// Flush only when no pipelined request is already waiting, so a
	// pipeline of requests costs one write.
	if c.r.Buffered() == 0 {
		if err := c.w.Flush(); err != nil {
			return false
		}
	}
	return true
}

// closeGently half-closes and drains briefly before closing, so that a
// client still sending a body we refused reads our answer instead of a
// reset (the same dance as net/http's closeWriteAndWait).
func closeGently(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.CloseWrite()                                            // best effort
		tc.SetReadDeadline(time.Now().Add(500 * time.Millisecond)) // best effort
		io.CopyN(io.Discard, tc, 1<<20)                            // best effort
	}
	nc.Close()
}

func (c *conn) writeUint(v int) {
	c.w.Write(strconv.AppendInt(c.num[:0], int64(v), 10))
}
