//go:build linux

package wire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// The event loop is the closed-loop engine on Linux: one goroutine per CPU
// owns a share of the connections, non-blocking sockets in its own epoll set
// (edge-triggered, registered once per connection). A request costs one
// write and one read, plus a share of one epoll_wait: after a write it waits
// for the readable edge instead of trying a read that would find nothing,
// as a goroutine per connection on Go's netpoller must. That is wrk's design
// without wrk's two epoll_ctl calls per request.

// evCheck is how often timeouts and the planned end are checked. At the end
// the loop stops sending; what is still in flight is drained and counted
// late.
const evCheck = 10 * time.Millisecond

// evReadBudget bounds the reads one connection gets before the loop turns:
// a server streaming faster than the shard parses (an endless head, or a
// body beyond a raised limit) would otherwise hold read in its loop, never
// seeing EAGAIN, and keep the shard's timeouts, its other connections and
// the planned end waiting: a request with a 300 ms timeout was seen alive
// 57 s under a stream of tiny header lines
// (TestEventLoopTimeoutUnderFastStream). 64 reads of the 4 KiB buffer: a
// 1 MiB body takes four turns.
const evReadBudget = 64

const epollET = 1 << 31 // syscall.EPOLLET is a negative int

type evState uint8

const (
	evIdle evState = iota
	evConnecting
	evWriting
	evReading
	evQueued // failed: its next request waits for the end of the event batch
)

type evConn struct {
	fd       int // -1: no connection
	state    evState
	woff     int
	buf      []byte
	have     int
	p        respParser
	sent     time.Time
	deadline time.Time
	used     bool // carried a response: a failure before any byte may be a stale keep-alive
	retried  bool
	ready    bool // in evLoop.ready: data left unread when its read budget ran out
}

type evLoop struct {
	sink     Sink
	req      *Request
	epfd     int
	w        *epollWaiter // waits on epfd (and closes it)
	family   int
	sa       syscall.Sockaddr
	conns    []*evConn
	pending  []int // connections whose next request follows a failure
	ready    []int // connections to read again on the next turn (evReadBudget)
	spare    []int
	busy     int
	stopping bool
}

func evSockaddr(addr string) (int, syscall.Sockaddr, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return 0, nil, fmt.Errorf("resolve %s: %w", addr, err)
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		sa := &syscall.SockaddrInet4{Port: ta.Port}
		copy(sa.Addr[:], ip4)
		return syscall.AF_INET, sa, nil
	}
	sa := &syscall.SockaddrInet6{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To16())
	return syscall.AF_INET6, sa, nil
}

// EventLoopAvailable says whether this OS has the event loop.
const EventLoopAvailable = true

// cloneSockaddr gives each shard its own: syscall.Connect writes into the
// Sockaddr it is given.
func cloneSockaddr(sa syscall.Sockaddr) syscall.Sockaddr {
	switch v := sa.(type) {
	case *syscall.SockaddrInet4:
		c := *v
		return &c
	case *syscall.SockaddrInet6:
		c := *v
		return &c
	}
	return sa
}

// EventLoop is the closed-loop engine: conns connections to one target
// spread over shards, each an epoll set its own goroutine runs.
type EventLoop struct {
	loops []*evLoop
}

// NewEventLoop sets up the shards of conns connections to req; nothing is
// dialled before Run.
func NewEventLoop(req *Request, conns, shards int) (*EventLoop, error) {
	family, sa, err := evSockaddr(req.addr)
	if err != nil {
		return nil, err
	}
	loops := make([]*evLoop, shards)
	for i := range loops {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		var w *epollWaiter
		if err == nil {
			if w, err = newEpollWaiter(epfd); err != nil {
				syscall.Close(epfd)
			}
		}
		if err != nil {
			for _, l := range loops[:i] {
				l.w.close()
			}
			return nil, fmt.Errorf("epoll: %w", err)
		}
		loops[i] = &evLoop{req: req, epfd: epfd, w: w, family: family, sa: cloneSockaddr(sa)}
	}
	for i := range conns {
		l := loops[i%shards]
		l.conns = append(l.conns, &evConn{fd: -1, buf: make([]byte, 4<<10), p: respParser{head: req.head, origin: req.origin, lim: req.lim}})
	}
	return &EventLoop{loops: loops}, nil
}

// Shards is how many shards there are: call Run once for each.
func (e *EventLoop) Shards() int { return len(e.loops) }

// Run runs shard i, reporting to sink, until sink says stop and every
// request in flight has completed; it then closes the shard's sockets.
func (e *EventLoop) Run(i int, sink Sink) {
	l := e.loops[i]
	l.sink = sink
	l.run()
}

func (l *evLoop) run() {
	w := l.w
	defer w.close()
	events := make([]syscall.EpollEvent, 256)
	now := l.sink.Now()
	for i, c := range l.conns {
		if l.shouldStop(now) {
			break
		}
		l.send(i, c, now)
	}
	l.drainPending()
	lastCheck := now
	for l.busy > 0 {
		var n int
		var err error
		if len(l.pending) > 0 || len(l.ready) > 0 {
			n, err = w.now(events)
		} else {
			n, err = w.wait(events, evCheck)
		}
		if err != nil {
			l.failAll(os.NewSyscallError("epoll_wait", err))
			break
		}
		for _, ev := range events[:max(n, 0)] {
			i := int(ev.Fd)
			l.handle(i, l.conns[i], ev.Events)
		}
		l.readReady()
		l.drainPending()
		if now := l.sink.Now(); now.Sub(lastCheck) >= evCheck {
			lastCheck = now
			l.shouldStop(now)
			for i, c := range l.conns {
				if c.state != evIdle && c.state != evQueued && now.After(c.deadline) {
					l.fail(i, c, os.ErrDeadlineExceeded, now)
				}
			}
		}
	}
	for _, c := range l.conns {
		l.closeConn(c)
	}
}

func (l *evLoop) shouldStop(now time.Time) bool {
	if !l.stopping && l.sink.Stop(now) {
		l.stopping = true
	}
	return l.stopping
}

// send starts the next request on c (connecting first if needed).
func (l *evLoop) send(i int, c *evConn, now time.Time) {
	c.sent = now
	c.deadline = now.Add(l.req.timeout)
	c.retried = false
	if c.state == evIdle {
		l.busy++
		l.sink.InFlight(1)
	}
	l.start(i, c, now)
}

// start (re)sends the current request, dialling when there is no connection.
func (l *evLoop) start(i int, c *evConn, now time.Time) {
	c.p.reset()
	c.have = 0
	c.woff = 0
	if c.fd >= 0 {
		c.state = evWriting
		l.write(i, c, now)
		return
	}
	fd, err := syscall.Socket(l.family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		l.fail(i, c, os.NewSyscallError("socket", err), now)
		return
	}
	syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1) //nolint:errcheck // latency only
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP | epollET, Fd: int32(i)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		syscall.Close(fd)
		l.fail(i, c, os.NewSyscallError("epoll_ctl", err), now)
		return
	}
	c.fd, c.used = fd, false
	c.state = evConnecting
	if err := syscall.Connect(fd, l.sa); err != nil && !errors.Is(err, syscall.EINPROGRESS) {
		l.fail(i, c, fmt.Errorf("dial: %w", os.NewSyscallError("connect", err)), now)
	}
}

func (l *evLoop) handle(i int, c *evConn, events uint32) {
	switch c.state {
	case evConnecting:
		if events&(syscall.EPOLLOUT|syscall.EPOLLERR|syscall.EPOLLHUP) == 0 {
			return
		}
		soerr, err := syscall.GetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
		if err == nil && soerr != 0 {
			err = syscall.Errno(soerr)
		}
		if err != nil {
			l.fail(i, c, fmt.Errorf("dial: %w", os.NewSyscallError("connect", err)), l.sink.Now())
			return
		}
		c.state = evWriting
		l.write(i, c, l.sink.Now())
	case evWriting:
		if events&(syscall.EPOLLOUT|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
			l.write(i, c, l.sink.Now())
		}
	case evReading:
		if events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
			l.read(i, c)
		}
	}
}

func (l *evLoop) write(i int, c *evConn, now time.Time) {
	for c.woff < len(l.req.wire) {
		n, err := rawIO(syscall.SYS_WRITE, c.fd, l.req.wire[c.woff:])
		if errors.Is(err, syscall.EAGAIN) {
			return // the writable edge resumes us
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			l.fail(i, c, os.NewSyscallError("write", err), now)
			return
		}
		c.woff += n
	}
	c.state = evReading
}

func (l *evLoop) read(i int, c *evConn) {
	for reads := 0; ; reads++ {
		if reads == evReadBudget {
			// More may be waiting, and edge-triggered epoll will not say so
			// again: read on after the others have had their turn.
			if !c.ready {
				c.ready = true
				l.ready = append(l.ready, i)
			}
			return
		}
		if c.have == len(c.buf) {
			// A line longer than the buffer: grow it up to maxLine, where
			// the parser gives up. Most responses never get here, so
			// 10000 connections cost 40 MB, not 160.
			c.buf = append(c.buf, make([]byte, min(len(c.buf), maxLine-len(c.buf)))...)
		}
		n, err := rawIO(syscall.SYS_READ, c.fd, c.buf[c.have:])
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			l.fail(i, c, os.NewSyscallError("read", err), l.sink.Now())
			return
		case n == 0:
			done, perr := c.p.eof()
			if done {
				c.p.keep = false
				l.complete(i, c)
			} else {
				l.fail(i, c, perr, l.sink.Now())
			}
			return
		}
		c.have += n
		used, done, perr := c.p.feed(c.buf[:c.have])
		if perr != nil {
			l.fail(i, c, perr, l.sink.Now())
			return
		}
		c.have = copy(c.buf, c.buf[used:c.have])
		if done {
			l.complete(i, c)
			return
		}
	}
}

// readReady gives the connections whose read budget ran out their next
// turn.
func (l *evLoop) readReady() {
	if len(l.ready) == 0 {
		return
	}
	todo := l.ready
	l.ready = l.spare[:0]
	for _, i := range todo {
		c := l.conns[i]
		c.ready = false
		if c.state == evReading {
			l.read(i, c)
		}
	}
	l.spare = todo[:0]
}

// complete records a response and sends the next request at once.
func (l *evLoop) complete(i int, c *evConn) {
	done := l.sink.Now()
	l.sink.Done(c.sent, done, c.p.resp, nil)
	if !c.p.keep || l.req.closeConn {
		l.closeConn(c)
	} else {
		c.used = true
	}
	l.next(i, c, done)
}

func (l *evLoop) fail(i int, c *evConn, err error, now time.Time) {
	stale := c.used && !c.retried && !errors.Is(err, os.ErrDeadlineExceeded) &&
		(errors.Is(err, errNoBytes) || (c.have == 0 && !c.p.seen &&
			(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))))
	l.closeConn(c)
	if stale && now.Before(c.deadline) {
		// The server closed an idle keep-alive connection before it saw
		// the request: retry once on a new one, as the other client does.
		c.retried = true
		l.start(i, c, now)
		return
	}
	l.sink.Done(c.sent, now, Response{}, err)
	// Not l.next: a failure that happens at once (a refused connect) would
	// recurse once per request until the end of the run.
	c.state = evQueued
	l.pending = append(l.pending, i)
}

// drainPending sends the next request of every connection that failed in
// the last batch. Ones that fail again wait for the next turn of the loop,
// so a dead connection cannot starve the others.
func (l *evLoop) drainPending() {
	if len(l.pending) == 0 {
		return
	}
	todo := l.pending
	l.pending = nil
	now := l.sink.Now()
	for _, i := range todo {
		l.next(i, l.conns[i], now)
	}
}

func (l *evLoop) next(i int, c *evConn, now time.Time) {
	if l.shouldStop(now) {
		c.state = evIdle
		l.busy--
		l.sink.InFlight(-1)
		l.closeConn(c)
		return
	}
	c.retried = false
	c.sent = now
	c.deadline = now.Add(l.req.timeout)
	l.start(i, c, now)
}

func (l *evLoop) failAll(err error) {
	now := l.sink.Now()
	l.stopping = true
	for i, c := range l.conns {
		if c.state != evIdle && c.state != evQueued {
			l.fail(i, c, err, now)
		}
	}
	l.drainPending()
}

// rawIO reads or writes a non-blocking socket without telling the scheduler
// (RawSyscall): the call cannot block, and a goroutine that is seen in a
// syscall on every request keeps sysmon waking every 20 µs to retake its P,
// which on a loadgen pinned to one CPU cost more than the requests' own
// user-space work (strace: a nanosleep per request).
func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, errno := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

func (l *evLoop) closeConn(c *evConn) {
	if c.fd >= 0 {
		syscall.Close(c.fd) // also leaves the epoll set
		c.fd = -1
	}
}
