package wire

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// StdDoer sends HTTP/1.1 through net/http, over TCP or TLS: the reference
// the lean client is benchmarked and tested against (WithNetHTTP). It
// applies the same response limits (the head's through the Transport, the
// body's itself) and offers only ALPN http/1.1 over TLS.
type StdDoer struct {
	// Observer, when set, receives the TLS handshakes of the connections
	// this worker's requests dialled.
	Observer HandshakeObserver

	client *http.Client
	spec   *Target
	origin string
	lim    Limits
	body   bodyReader
	trace  *httptrace.ClientTrace
	conn   net.Conn // the connection of the current request (GotConn)
}

var _ Doer = (*StdDoer)(nil)

// NewStdClient is the net/http client of a run of t with up to conns
// connections: no environment proxy, no compression, no HTTP/2, redirects
// not followed, the head limit applied by the Transport.
func NewStdClient(t *Target, conns int) *http.Client {
	return &http.Client{Transport: newStdTransport(t, conns), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func newStdTransport(s *Target, conns int) *http.Transport {
	dialer := &net.Dialer{KeepAlive: -1}
	return &http.Transport{
		Proxy: nil, // never a proxy from the environment: we measure the target
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countConn{Conn: c}, nil
		},
		DisableCompression:     true,
		DisableKeepAlives:      s.NewConnPerRequest,
		MaxIdleConns:           conns,
		MaxIdleConnsPerHost:    conns,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: int64(s.Limits.Header), // 1xx heads included, as the lean client counts
		ForceAttemptHTTP2:      false,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{}, // no HTTP/2
		TLSClientConfig:        clientTLS(s.TLS, ProtoTLS, ""),
	}
}

// NewStdDoer is a worker's Doer of t through client (NewStdClient).
func NewStdDoer(client *http.Client, s *Target) *StdDoer {
	d := &StdDoer{client: client, spec: s, origin: s.ExpectOrigin, lim: s.Limits}
	var t0 atomic.Int64 // net/http may dial on a goroutine of its own
	d.trace = &httptrace.ClientTrace{
		GotConn:           func(info httptrace.GotConnInfo) { d.conn = info.Conn },
		TLSHandshakeStart: func() { t0.Store(time.Now().UnixNano()) },
		TLSHandshakeDone: func(st tls.ConnectionState, err error) {
			if d.Observer == nil {
				return
			}
			h := Handshake{Duration: time.Duration(time.Now().UnixNano() - t0.Load())}
			if err != nil {
				h.Result, h.Err = ClassifyHandshake(err), err
			} else {
				observeState(&h, &st, ProtoTLS.ALPN()) //nolint:errcheck // in h
			}
			d.Observer.Handshake(&h)
		},
	}
	return d
}

// countConn counts the bytes read since the last write, i.e. of the
// response to the request written last: net/http reports a head beyond
// MaxResponseHeaderBytes with an error of no type of its own, and this is
// how it is told from other failures without reading the message.
type countConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	c.read.Store(0)
	return c.Conn.Write(p)
}

// headTooLarge tells whether err, from Client.Do, is net/http giving up on
// a head beyond the limit: an error of no known kind after the connection
// delivered at least the limit (the Transport reads exactly up to it).
func (d *StdDoer) headTooLarge(err error) bool {
	c := d.conn
	if t, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = t.NetConn()
	}
	cc, ok := c.(*countConn)
	return ok && Classify(err) == ReasonOther && cc.read.Load() >= int64(d.lim.Header)
}

// Do sends the request and reads the whole response until deadline.
func (d *StdDoer) Do(deadline time.Time) (Response, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	d.conn = nil
	req, err := newStdRequest(httptrace.WithClientTrace(ctx, d.trace), d.spec)
	if err != nil {
		return Response{}, err
	}
	res, err := d.client.Do(req)
	if err != nil {
		if d.headTooLarge(err) {
			return Response{}, errHeaderTooLarge(d.lim.Header)
		}
		return Response{}, err
	}
	return d.body.read(res, d.origin, d.lim)
}

// newStdRequest is one request of t for net/http's (or x/net/http2's, or
// quic-go's) client.
func newStdRequest(ctx context.Context, t *Target) (*http.Request, error) {
	var body io.Reader
	if len(t.Body) > 0 {
		body = bytes.NewReader(t.Body)
	}
	method := t.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, t.URL, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range t.Header {
		req.Header[k] = vs
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "proxybench-loadgen")
	}
	return req, nil
}

// bodyReader discards a net/http response body within the limits, with
// a buffer of its own worker's.
type bodyReader struct {
	buf []byte
	lr  io.LimitedReader
}

// read reads res's body to its end, discarding it, and closes it.
func (b *bodyReader) read(res *http.Response, origin string, lim Limits) (Response, error) {
	// Closing a body that was not read to its end closes the connection
	// (HTTP/1.1) or resets the stream (HTTP/2, HTTP/3).
	defer res.Body.Close()
	if res.Body != http.NoBody && res.ContentLength > lim.Body {
		return Response{}, errBodyTooLarge(lim.Body)
	}
	if b.buf == nil {
		b.buf = make([]byte, 32<<10)
	}
	b.lr = io.LimitedReader{R: res.Body, N: lim.Body + 1}
	n, err := io.CopyBuffer(io.Discard, &b.lr, b.buf)
	r := Response{Code: res.StatusCode, Bytes: n, OriginOK: origin == "" || res.Header.Get("X-Origin") == origin}
	if err == nil && n > lim.Body {
		return r, errBodyTooLarge(lim.Body)
	}
	return r, err
}

// Close is a no-op: the client's pool owns the connections.
func (d *StdDoer) Close() {}
