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

// StdDoer sends through net/http: used for https URLs (the lean client
// speaks plain HTTP/1.1 only) and as the reference the lean client is
// benchmarked and tested against (WithNetHTTP). It applies the same
// response limits: the head's through the Transport, the body's itself.
type StdDoer struct {
	client *http.Client
	spec   *Target
	origin string
	lim    Limits
	buf    []byte
	lr     io.LimitedReader
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
		TLSClientConfig:        &tls.Config{},
	}
}

// NewStdDoer is a worker's Doer of t through client (NewStdClient).
func NewStdDoer(client *http.Client, s *Target) *StdDoer {
	d := &StdDoer{client: client, spec: s, origin: s.ExpectOrigin, lim: s.Limits}
	d.trace = &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { d.conn = info.Conn }}
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
	var body io.Reader
	if len(d.spec.Body) > 0 {
		body = bytes.NewReader(d.spec.Body)
	}
	method := d.spec.Method
	if method == "" {
		method = http.MethodGet
	}
	d.conn = nil
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, d.trace), method, d.spec.URL, body)
	if err != nil {
		return Response{}, err
	}
	for k, vs := range d.spec.Header {
		req.Header[k] = vs
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "proxybench-loadgen")
	}
	res, err := d.client.Do(req)
	if err != nil {
		if d.headTooLarge(err) {
			return Response{}, errHeaderTooLarge(d.lim.Header)
		}
		return Response{}, err
	}
	// Closing a body that was not read to its end closes the connection.
	defer res.Body.Close()
	if res.Body != http.NoBody && res.ContentLength > d.lim.Body {
		return Response{}, errBodyTooLarge(d.lim.Body)
	}
	if d.buf == nil {
		d.buf = make([]byte, 32<<10)
	}
	d.lr = io.LimitedReader{R: res.Body, N: d.lim.Body + 1}
	n, err := io.CopyBuffer(io.Discard, &d.lr, d.buf)
	r := Response{Code: res.StatusCode, Bytes: n, OriginOK: d.origin == "" || res.Header.Get("X-Origin") == d.origin}
	if err == nil && n > d.lim.Body {
		return r, errBodyTooLarge(d.lim.Body)
	}
	return r, err
}

// Close is a no-op: the client's pool owns the connections.
func (d *StdDoer) Close() {}
