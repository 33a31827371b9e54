package wire

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// The lean client speaks HTTP/1.1 over one net.Conn per worker: the request
// bytes are built once per run, the response is parsed in place from a
// bufio.Reader and the body discarded, so a request costs two syscalls and no
// allocation. net/http costs several times more CPU per request (see
// BenchmarkRequest), which would make the instrument the bottleneck.

// Request is the immutable part shared by every connection of a run.
type Request struct {
	addr      string // host:port to dial
	wire      []byte // the full request, headers and body
	head      bool   // HEAD: responses have no body
	closeConn bool   // new connection per request
	origin    []byte // expected X-Origin, nil = no check
	timeout   time.Duration
	lim       Limits
	tls       *tls.Config // nil = plain TCP
	alpn      string
}

// NewRequest builds the request bytes of t once for every connection.
func NewRequest(s Target) (*Request, error) {
	u, addr, err := dialAddr(&s)
	if err != nil {
		return nil, err
	}
	host := u.Host
	path := u.RequestURI()
	method := s.Method
	if method == "" {
		method = "GET"
	}
	if h := s.Header.Get("Host"); h != "" {
		host = h // virtual hosting: the connection still goes to the URL's address
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, host)
	hasUA := false
	for k, vs := range s.Header {
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Connection") {
			continue // owned by the client: they decide framing and routing
		}
		if strings.EqualFold(k, "User-Agent") {
			hasUA = true
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	if !hasUA {
		b.WriteString("User-Agent: proxybench-loadgen\r\n")
	}
	if len(s.Body) > 0 || method == "POST" || method == "PUT" || method == "PATCH" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(s.Body))
	}
	if s.NewConnPerRequest {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(s.Body)
	r := &Request{
		addr:      addr,
		wire:      b.Bytes(),
		head:      method == "HEAD",
		closeConn: s.NewConnPerRequest,
		timeout:   s.Timeout,
		lim:       s.Limits,
	}
	if s.ExpectOrigin != "" {
		r.origin = []byte(s.ExpectOrigin)
	}
	if s.Proto.Secure() {
		r.tls, r.alpn = clientTLS(s.TLS, s.Proto, u.Hostname()), s.Proto.ALPN()
	}
	return r, nil
}

// Secure says the request goes over TLS: the event loop cannot send it.
func (r *Request) Secure() bool { return r.tls != nil }

// LeanConn is one worker's connection of the lean client, over TCP or
// TLS (ProtoTLS).
type LeanConn struct {
	// Observer, when set, receives every TLS handshake of the connection.
	Observer HandshakeObserver

	req    *Request
	dialer net.Dialer
	c      net.Conn
	br     *bufio.Reader
	used   bool      // c already carried a response: a failure before any byte may be a stale keep-alive
	dl     time.Time // deadline set on c
}

var (
	_ Doer      = (*LeanConn)(nil)
	_ Connector = (*LeanConn)(nil)
)

// NewLeanConn is a worker's connection for r, not connected yet.
func NewLeanConn(r *Request) *LeanConn {
	return &LeanConn{req: r}
}

// Close drops the connection.
func (l *LeanConn) Close() {
	if l.c != nil {
		l.c.Close()
		l.c = nil
	}
}

// Connect dials ahead of the first request (open-loop workers joining the
// pool): a no-op when connected.
func (l *LeanConn) Connect(deadline time.Time) error {
	if l.c != nil {
		return nil
	}
	return l.dial(deadline)
}

// dial connects, and over TLS shakes hands, until deadline.
func (l *LeanConn) dial(deadline time.Time) error {
	l.dialer.Deadline = deadline
	c, err := l.dialer.Dial("tcp", l.req.addr)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	if l.req.tls != nil {
		tc, err := handshakeTLS(c, l.req.tls, l.req.alpn, deadline, l.Observer)
		if err != nil {
			c.Close()
			return err
		}
		c = tc
	}
	l.attach(c)
	return nil
}

func (l *LeanConn) attach(c net.Conn) {
	l.c = c
	l.used = false
	l.dl = time.Time{}
	if l.br == nil {
		l.br = newBufReader(c)
	} else {
		l.br.Reset(c)
	}
}

// Do sends the request and reads the whole response until deadline.
func (l *LeanConn) Do(deadline time.Time) (Response, error) {
	resp, err, stale := l.try(deadline)
	if stale && time.Now().Before(deadline) {
		// The server closed an idle keep-alive connection before it saw our
		// request (net/http retries the same way): nothing was processed.
		resp, err, _ = l.try(deadline)
	}
	return resp, err
}

func (l *LeanConn) try(deadline time.Time) (resp Response, err error, stale bool) {
	if l.c == nil {
		if err := l.dial(deadline); err != nil {
			return resp, err, false
		}
	}
	// Moving the deadline costs a runtime timer update; move it only when it
	// would be more than 1 % of the timeout early, so the effective timeout
	// is within [0.99, 1] x Timeout.
	if deadline.Sub(l.dl) > l.req.timeout/100 || deadline.Before(l.dl) {
		if err := l.c.SetDeadline(deadline); err != nil {
			l.Close()
			return resp, err, false
		}
		l.dl = deadline
	}
	if _, err := l.c.Write(l.req.wire); err != nil {
		stale = l.used
		l.Close()
		return resp, err, stale
	}
	resp, keep, err := readResponse(l.br, l.req.head, l.req.origin, l.req.lim)
	if err != nil {
		// Stale only when the server closed the connection: a request the
		// server held past the deadline timed out (the deadline on the
		// connection may be up to 1 % of the timeout before the request's,
		// so a retry would still fit and would hide the timeout).
		stale = l.used && errors.Is(err, errNoBytes) && !errors.Is(err, os.ErrDeadlineExceeded)
		l.Close()
		return resp, err, stale
	}
	if !keep || l.req.closeConn {
		l.Close()
	} else {
		l.used = true
	}
	return resp, nil, false
}

// errNoBytes marks a connection that ended before the first response byte.
var errNoBytes = errors.New("connection closed before any response byte")

type noBytesError struct{ err error }

func (e *noBytesError) Error() string   { return e.err.Error() }
func (e *noBytesError) Unwrap() []error { return []error{e.err, errNoBytes} }

// readResponse reads one response, skipping 1xx interim responses, and
// discards its body. keep reports whether the connection may carry another.
func readResponse(br *bufio.Reader, head bool, origin []byte, lim Limits) (resp Response, keep bool, err error) {
	first := true
	budget := lim.Header // head bytes left, interim responses included
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if first && len(line) == 0 {
				if err == io.EOF {
					return resp, false, &noBytesError{io.EOF}
				}
				return resp, false, &noBytesError{err}
			}
			return resp, false, headErr(err, len(line) > budget, lim)
		}
		first = false
		if budget -= len(line); budget < 0 {
			return resp, false, errHeaderTooLarge(lim.Header)
		}
		code, minor, err := parseStatusLine(line)
		if err != nil {
			return resp, false, err
		}
		var h headers
		h, budget, err = readHeaders(br, origin, budget, lim)
		if err != nil {
			return resp, false, err
		}
		if code == 101 {
			return resp, false, errProto("unexpected 101 switching protocols")
		}
		if code >= 100 && code < 200 {
			continue
		}
		resp.Code = code
		resp.OriginOK = origin == nil || h.originOK
		keep = !h.close && (minor >= 1 || h.keepAlive)
		switch {
		case head || code == 204 || code == 304:
		case h.chunked:
			resp.Bytes, err = discardChunked(br, lim)
		case h.length > lim.Body:
			return resp, false, errBodyTooLarge(lim.Body)
		case h.length >= 0:
			var n int
			n, err = br.Discard(int(h.length))
			resp.Bytes = int64(n)
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
		default: // body until the server closes
			var n int64
			n, err = io.CopyN(io.Discard, br, lim.Body+1)
			resp.Bytes = n
			keep = false
			switch {
			case n > lim.Body:
				err = errBodyTooLarge(lim.Body)
			case err == io.EOF:
				err = nil
			}
		}
		if err != nil {
			return resp, false, fmt.Errorf("read body: %w", err)
		}
		return resp, keep, nil
	}
}

func statusErr(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	if err == bufio.ErrBufferFull {
		return errProto("line longer than 16 KiB")
	}
	return err
}

// headErr is statusErr for a line of the head or the trailers: one that
// fills the buffer, or a partial one already beyond the budget, is too
// large.
func headErr(err error, over bool, lim Limits) error {
	switch {
	case err == bufio.ErrBufferFull:
		return errLineTooLong
	case over:
		return errHeaderTooLarge(lim.Header)
	}
	return statusErr(err)
}

func parseStatusLine(line []byte) (code, minor int, err error) {
	// "HTTP/1.1 200 OK\r\n"; the reason phrase may be empty.
	if len(line) < 14 || string(line[:7]) != "HTTP/1." || line[8] != ' ' ||
		(len(line) > 12 && line[12] != ' ' && line[12] != '\r' && line[12] != '\n') {
		return 0, 0, errProto("bad status line %q", trim(line))
	}
	minor = int(line[7] - '0')
	if minor < 0 || minor > 9 {
		return 0, 0, errProto("bad status line %q", trim(line))
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, 0, errProto("bad status code %q", trim(line))
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return 0, 0, errProto("bad status code %q", trim(line))
	}
	return code, minor, nil
}

func trim(b []byte) []byte {
	if len(b) > 40 {
		b = b[:40]
	}
	return bytes.TrimRight(b, "\r\n")
}

type headers struct {
	length    int64 // -1: none
	chunked   bool
	close     bool
	keepAlive bool
	originOK  bool
}

var (
	hContentLength    = []byte("content-length")
	hTransferEncoding = []byte("transfer-encoding")
	hConnection       = []byte("connection")
	hXOrigin          = []byte("x-origin")
)

// readHeaders reads header lines up to the blank line, taking their bytes
// from budget; left is what remains of it.
func readHeaders(br *bufio.Reader, origin []byte, budget int, lim Limits) (h headers, left int, err error) {
	h.length = -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return h, budget, headErr(err, len(line) > budget, lim)
		}
		if budget -= len(line); budget < 0 {
			return h, budget, errHeaderTooLarge(lim.Header)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return h, budget, nil
		}
		if err := h.parseLine(line, origin); err != nil {
			return h, budget, err
		}
	}
}

// parseLine reads one header line (without its CRLF) into h.
func (h *headers) parseLine(line, origin []byte) error {
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return errProto("bad header line %q", trim(line))
	}
	name, val := line[:i], bytes.TrimSpace(line[i+1:])
	switch {
	case bytes.EqualFold(name, hContentLength):
		n, ok := parseUint(val, 10)
		if !ok || (h.length >= 0 && h.length != n) {
			return errProto("bad Content-Length %q", trim(val))
		}
		h.length = n
	case bytes.EqualFold(name, hTransferEncoding):
		switch {
		case bytes.EqualFold(val, []byte("chunked")):
			h.chunked = true
		case bytes.EqualFold(val, []byte("identity")):
		default:
			return errProto("unsupported Transfer-Encoding %q", trim(val))
		}
	case bytes.EqualFold(name, hConnection):
		for _, tok := range bytes.Split(val, []byte(",")) {
			tok = bytes.TrimSpace(tok)
			h.close = h.close || bytes.EqualFold(tok, []byte("close"))
			h.keepAlive = h.keepAlive || bytes.EqualFold(tok, []byte("keep-alive"))
		}
	case origin != nil && bytes.EqualFold(name, hXOrigin):
		h.originOK = bytes.Equal(val, origin)
	}
	return nil
}

// parseUint parses a non-empty number in base 10 or 16 without allocating.
func parseUint(b []byte, base int64) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		var d int64
		switch {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = int64(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = int64(c-'A') + 10
		default:
			return 0, false
		}
		n = n*base + d
	}
	return n, true
}

func discardChunked(br *bufio.Reader, lim Limits) (total int64, err error) {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return total, statusErr(err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimSpace(line)
		size, ok := parseUint(line, 16)
		if !ok {
			return total, errProto("bad chunk size %q", trim(line))
		}
		if size == 0 {
			// Trailers end with an empty line; they have a head's budget.
			if _, _, err := readHeaders(br, nil, lim.Header, lim); err != nil {
				return total, err
			}
			return total, nil
		}
		if size > lim.Body-total {
			return total, errBodyTooLarge(lim.Body)
		}
		n, err := br.Discard(int(size))
		total += int64(n)
		if err != nil {
			return total, statusErr(err)
		}
		crlf, err := br.ReadSlice('\n')
		if err != nil {
			return total, statusErr(err)
		}
		if len(bytes.TrimRight(crlf, "\r\n")) != 0 {
			return total, errProto("chunk not followed by CRLF")
		}
	}
}

func newBufReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 16<<10) }
