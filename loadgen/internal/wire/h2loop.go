package wire

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The HTTP/2 loop is the closed-loop HTTP/2 engine: one goroutine owns
// one TLS connection and its streams, with no goroutine, channel or lock
// per request. The request's header block is HPACK-encoded once per run
// (literals never indexed, so the same bytes fit every stream); the loop
// reads frames with x/net/http2's Framer, answers SETTINGS and PING,
// opens a new stream as soon as one completes, and writes every HEADERS
// frame queued while it processed a read in one TLS record. Flow control
// is turned off in practice: the loop advertises 1 GiB windows and tops
// the connection's up. It is what h2load does, in Go.

// h2Window is the flow-control window the loop advertises per stream and
// for the connection: responses are bounded by Limits.Body far below it.
const h2Window = 1 << 30

// H2MaxLoopBody is the largest request body the loop sends: one DATA
// frame at the default SETTINGS_MAX_FRAME_SIZE, within the peer's initial
// windows. A larger body goes through the multiplexed pool (MuxPool).
const H2MaxLoopBody = 16 << 10

// H2Loop is the closed-loop HTTP/2 engine of a run: Conns connections of
// up to streams requests in flight each (fewer if the server's
// SETTINGS_MAX_CONCURRENT_STREAMS says so).
type H2Loop struct {
	t       *Target
	addr    string
	tls     *tls.Config
	conns   int
	streams int
	block   []byte // the request's HPACK header block
	body    []byte
	origin  string
	timeout time.Duration
	lim     Limits
}

// NewH2Loop is the loop of a run of t (Proto h2) with conns connections of
// streams streams each.
func NewH2Loop(t *Target, conns, streams int) (*H2Loop, error) {
	if t.Proto != ProtoH2 {
		return nil, fmt.Errorf("the HTTP/2 loop speaks h2, not %q", t.Proto)
	}
	if len(t.Body) > H2MaxLoopBody || t.NewConnPerRequest {
		return nil, errors.New("the HTTP/2 loop keeps its connections and sends bodies up to 16 KiB: use the multiplexed pool")
	}
	u, addr, err := dialAddr(t)
	if err != nil {
		return nil, err
	}
	l := &H2Loop{t: t, addr: addr, tls: clientTLS(t.TLS, ProtoH2, u.Hostname()), conns: max(conns, 1), streams: max(streams, 1),
		body: t.Body, origin: t.ExpectOrigin, timeout: t.Timeout, lim: t.Limits}
	l.block = h2HeaderBlock(t, u)
	return l, nil
}

// Conns is how many connections there are: call Run once for each.
func (l *H2Loop) Conns() int { return l.conns }

// h2HeaderBlock is the request's header block: pseudo-headers, then the
// spec's headers in lower case (Host becomes :authority; the
// connection-specific ones are dropped, as HTTP/2 forbids them).
func h2HeaderBlock(t *Target, u *url.URL) []byte {
	method := t.Method
	if method == "" {
		method = "GET"
	}
	authority := u.Host
	if h := t.Header.Get("Host"); h != "" {
		authority = h
	}
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	write := func(name, value string) {
		enc.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: true}) //nolint:errcheck // a bytes.Buffer
	}
	write(":method", method)
	write(":scheme", "https")
	write(":authority", authority)
	write(":path", u.RequestURI())
	hasUA := false
	for k, vs := range t.Header {
		name := strings.ToLower(k)
		switch name {
		case "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length":
			continue
		case "user-agent":
			hasUA = true
		}
		for _, v := range vs {
			write(name, v)
		}
	}
	if !hasUA {
		write("user-agent", "proxybench-loadgen")
	}
	if len(t.Body) > 0 || method == "POST" || method == "PUT" || method == "PATCH" {
		write("content-length", strconv.Itoa(len(t.Body)))
	}
	return b.Bytes()
}

// h2Stream is one request in flight on a connection.
type h2Stream struct {
	id       uint32 // 0: free
	sent     time.Time
	deadline time.Time
	resp     Response
	head     int   // decoded header list size so far (RFC 7541 4.1)
	err      error // a limit it went beyond, reported when the stream ends
	got      bool  // any frame of its response arrived
	retried  bool
}

// h2Conn is the state of one connection of the loop.
type h2Conn struct {
	l      *H2Loop
	sink   Sink
	obs    HandshakeObserver
	c      *tls.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	fr     *http2.Framer
	dec    *hpack.Decoder
	cur    *h2Stream // the stream whose header block is being decoded
	gone   h2Stream  // stands in for a stream we reset while its headers are decoded
	st     []h2Stream
	retry  []h2Stream // requests to send again on a new connection (GOAWAY, a stale connection)
	active int
	limit  int // streams in flight at most: min(streams, the server's max)
	nextID uint32
	goaway bool // no new stream on this connection
	used   bool // a response completed on it
	recv   int64
	dl     time.Time
	stop   bool
}

// Run runs connection i, reporting to sink and its handshakes to obs,
// until sink says stop and every request in flight has completed.
func (l *H2Loop) Run(i int, sink Sink, obs HandshakeObserver) {
	c := &h2Conn{l: l, sink: sink, obs: obs, st: make([]h2Stream, l.streams)}
	c.run()
}

func (c *h2Conn) stopping(now time.Time) bool {
	if !c.stop && c.sink.Stop(now) {
		c.stop = true
	}
	return c.stop
}

func (c *h2Conn) run() {
	defer c.close()
	for {
		now := c.sink.Now()
		stop := c.stopping(now)
		if c.c == nil {
			if stop && len(c.retry) == 0 {
				return
			}
			if err := c.connect(now); err != nil {
				c.failConnect(now, err)
				continue
			}
		}
		for len(c.retry) > 0 && c.active < c.limit && !c.goaway {
			s := c.retry[len(c.retry)-1]
			c.retry = c.retry[:len(c.retry)-1]
			if !now.Before(s.deadline) { // sent again and again: its time is up
				c.sink.Done(s.sent, now, Response{}, os.ErrDeadlineExceeded)
				c.sink.InFlight(-1)
				continue
			}
			c.open(&s, false)
		}
		for !stop && c.active < c.limit && !c.goaway {
			c.open(&h2Stream{sent: now, deadline: now.Add(c.l.timeout)}, true)
		}
		if c.active == 0 {
			if stop && len(c.retry) == 0 {
				return
			}
			if c.goaway { // drained: the next turn dials anew
				c.close()
			}
			continue
		}
		if !c.frameBuffered() && !c.drained() {
			c.armDeadline()
			if err := c.bw.Flush(); err != nil {
				c.failAll(err, now)
				continue
			}
			if err := c.fill(); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					c.expire(c.sink.Now())
					continue
				}
				c.failAll(frameErr(err), c.sink.Now())
				continue
			}
		}
		// A whole frame is buffered: the Framer never stops inside one
		// (a read timeout there would lose its framing).
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.failAll(frameErr(err), c.sink.Now())
			continue
		}
		if err := c.handle(f); err != nil {
			c.failAll(err, c.sink.Now())
		}
	}
}

// frameBuffered says a whole frame is already read: the loop handles it
// before it flushes its writes and waits.
func (c *h2Conn) frameBuffered() bool {
	n := c.br.Buffered()
	if n < 9 {
		return false
	}
	h, _ := c.br.Peek(3)
	return n >= 9+int(uint32(h[0])<<16|uint32(h[1])<<8|uint32(h[2]))
}

// drained says whether the TLS records already read from the socket hold
// a whole frame more: tls.Conn returns one record per Read, and the
// HEADERS frames queued so far should go out in one write with the streams
// the next records complete, not one write per record. A read deadline in
// the past makes the check free: Go's poller fails it before any syscall,
// and a timeout is no error to tls.Conn or the Framer (nothing consumed).
func (c *h2Conn) drained() bool {
	if c.c.SetReadDeadline(pastDeadline) != nil {
		return false
	}
	c.dl = time.Time{} // armDeadline sets it again before the next wait
	return c.fill() == nil
}

// pastDeadline is a deadline that has passed.
var pastDeadline = time.Unix(1, 0)

// fill reads until a whole frame is buffered, consuming nothing.
func (c *h2Conn) fill() error {
	h, err := c.br.Peek(9)
	if err != nil {
		return err
	}
	n := 9 + int(uint32(h[0])<<16|uint32(h[1])<<8|uint32(h[2]))
	if n > c.br.Size() {
		return errProto("HTTP/2 frame of %d bytes beyond SETTINGS_MAX_FRAME_SIZE", n-9)
	}
	_, err = c.br.Peek(n)
	return err
}

// armDeadline sets the read deadline to the earliest stream deadline,
// moving it only when that is more than 1 % of the timeout earlier or
// later than the one set (a runtime timer update each time).
func (c *h2Conn) armDeadline() {
	var first time.Time
	for i := range c.st {
		if s := &c.st[i]; s.id != 0 && (first.IsZero() || s.deadline.Before(first)) {
			first = s.deadline
		}
	}
	if d := first.Sub(c.dl); d < 0 || d > c.l.timeout/100 {
		c.c.SetDeadline(first) //nolint:errcheck // a later read or write reports it
		c.dl = first
	}
}

// connect dials, shakes hands and exchanges the connection prefaces.
func (c *h2Conn) connect(now time.Time) error {
	deadline := now.Add(c.l.timeout)
	d := net.Dialer{Deadline: deadline}
	raw, err := d.Dial("tcp", c.l.addr)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	tc, err := handshakeTLS(raw, c.l.tls, "h2", deadline, c.obs)
	if err != nil {
		raw.Close()
		return err
	}
	c.c, c.dl = tc, deadline
	if c.br == nil {
		c.br, c.bw = bufio.NewReaderSize(tc, 32<<10), bufio.NewWriterSize(tc, 16<<10)
	} else {
		c.br.Reset(tc)
		c.bw.Reset(tc)
	}
	c.fr = http2.NewFramer(c.bw, c.br)
	c.fr.SetReuseFrames()
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.dec.SetMaxStringLength(c.l.lim.Header)
	c.nextID, c.goaway, c.used, c.recv, c.limit = 1, false, false, 0, 1
	c.bw.WriteString(http2.ClientPreface) //nolint:errcheck // Flush reports it
	c.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2Window},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(c.l.lim.Header)}) //nolint:errcheck // Flush reports it
	c.fr.WriteWindowUpdate(0, h2Window-65535) //nolint:errcheck // Flush reports it
	if err := c.bw.Flush(); err != nil {
		c.close()
		return err
	}
	// The server's preface is a SETTINGS frame: its stream limit bounds
	// the streams opened at once.
	f, err := c.fr.ReadFrame()
	if err != nil {
		c.close()
		return frameErr(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		c.close()
		return errProto("HTTP/2 server preface is a %s frame, not SETTINGS", f.Header().Type)
	}
	c.limit = c.l.streams
	c.settings(sf)
	return nil
}

func (c *h2Conn) settings(sf *http2.SettingsFrame) {
	if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); ok {
		c.limit = max(1, min(c.l.streams, int(v)))
	}
	c.fr.WriteSettingsAck() //nolint:errcheck // Flush reports it
}

// failConnect: a connection that could not be made fails one request,
// as the other engines' dial does.
func (c *h2Conn) failConnect(now time.Time, err error) {
	c.close()
	if len(c.retry) > 0 { // a retried request fails with it
		s := c.retry[len(c.retry)-1]
		c.retry = c.retry[:len(c.retry)-1]
		c.sink.Done(s.sent, c.sink.Now(), Response{}, err)
		c.sink.InFlight(-1)
		return
	}
	c.sink.InFlight(1)
	c.sink.Done(now, c.sink.Now(), Response{}, err)
	c.sink.InFlight(-1)
}

// open starts the stream s on a free slot: a fresh request, or one sent
// again keeping its send time (and its place in flight).
func (c *h2Conn) open(s *h2Stream, fresh bool) {
	if fresh {
		c.sink.InFlight(1)
	}
	if c.nextID > 1<<31-1 {
		c.goaway = true // stream IDs used up: a new connection
		c.retry = append(c.retry, *s)
		return
	}
	var slot *h2Stream
	for i := range c.st {
		if c.st[i].id == 0 {
			slot = &c.st[i]
			break
		}
	}
	*slot = h2Stream{id: c.nextID, sent: s.sent, deadline: s.deadline, retried: s.retried}
	c.nextID += 2
	c.active++
	end := len(c.l.body) == 0
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: slot.id, BlockFragment: c.l.block, EndStream: end, EndHeaders: true}) //nolint:errcheck // Flush reports it
	if !end {
		c.fr.WriteData(slot.id, true, c.l.body) //nolint:errcheck // Flush reports it
	}
}

func (c *h2Conn) stream(id uint32) *h2Stream {
	for i := range c.st {
		if c.st[i].id == id {
			return &c.st[i]
		}
	}
	return nil
}
