package wire

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
)

// MuxPool is the multiplexed connections of a run, HTTP/2 (x/net/http2's
// ClientConn over the lean TLS dial) or HTTP/3 (quic-go's): worker w
// sends on connection w / streams, so each connection carries up to
// streams requests at once. A connection is dialled by the first of its
// workers to need it, and anew by the next one once it closed or got a
// GOAWAY. With NewConnPerRequest every request dials a connection of its
// own and closes it.
type MuxPool struct {
	t       *Target
	proto   Proto
	streams int
	addr    string
	tls     *tls.Config
	h2      *http2.Transport
	h3      *http3.Transport
	quic    *quic.Config

	mu    sync.Mutex
	slots []*muxSlot // by connection, made on first use
}

// NewMuxPool is the pool of a run of t (Proto h2 or h3) with up to conns
// connections of streams requests each.
func NewMuxPool(t *Target, conns, streams int) (*MuxPool, error) {
	if !t.Proto.Multiplexed() {
		return nil, fmt.Errorf("a multiplexed pool speaks h2 or h3, not %q", t.Proto)
	}
	u, addr, err := dialAddr(t)
	if err != nil {
		return nil, err
	}
	p := &MuxPool{t: t, proto: t.Proto, streams: max(streams, 1), addr: addr, tls: clientTLS(t.TLS, t.Proto, u.Hostname())}
	if !t.NewConnPerRequest {
		p.slots = make([]*muxSlot, max(conns, 1))
	}
	switch t.Proto {
	case ProtoH2:
		p.h2 = &http2.Transport{DisableCompression: true, MaxHeaderListSize: uint32(t.Limits.Header)}
	case ProtoH3:
		p.h3 = &http3.Transport{DisableCompression: true, MaxResponseHeaderBytes: t.Limits.Header}
		p.quic = &quic.Config{MaxIncomingStreams: -1, KeepAlivePeriod: 10 * time.Second} // http3's own client defaults
	}
	return p, nil
}

// Doer is worker w's Doer; obs (nil = nobody) receives the handshakes of
// the connections it dials.
func (p *MuxPool) Doer(w int, obs HandshakeObserver) *MuxDoer {
	d := &MuxDoer{Observer: obs, p: p}
	if p.slots != nil {
		i := (w / p.streams) % len(p.slots)
		p.mu.Lock()
		if p.slots[i] == nil {
			p.slots[i] = &muxSlot{}
		}
		d.slot = p.slots[i]
		p.mu.Unlock()
	}
	return d
}

// Close closes every connection of the pool.
func (p *MuxPool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.slots {
		if s != nil {
			s.drop(nil)
		}
	}
	if p.h3 != nil {
		p.h3.Close() //nolint:errcheck // nothing pooled by the transport itself
	}
}

// muxConn is one HTTP/2 or HTTP/3 connection.
type muxConn interface {
	RoundTrip(*http.Request) (*http.Response, error)
	usable() bool // neither closed nor going away: takes new streams
	close()
}

type muxH2Conn struct{ cc *http2.ClientConn }

func (c muxH2Conn) RoundTrip(r *http.Request) (*http.Response, error) { return c.cc.RoundTrip(r) }
func (c muxH2Conn) usable() bool                                      { st := c.cc.State(); return !st.Closed && !st.Closing }
func (c muxH2Conn) close()                                            { c.cc.Close() } //nolint:errcheck // closing

type muxH3Conn struct {
	qc *quic.Conn
	cc *http3.ClientConn
}

func (c muxH3Conn) RoundTrip(r *http.Request) (*http.Response, error) { return c.cc.RoundTrip(r) }
func (c muxH3Conn) usable() bool                                      { return c.qc.Context().Err() == nil }
func (c muxH3Conn) close()                                            { c.qc.CloseWithError(0, "") } //nolint:errcheck // closing

// dial opens one connection and reports its handshake to obs.
func (p *MuxPool) dial(ctx context.Context, obs HandshakeObserver) (muxConn, error) {
	deadline, _ := ctx.Deadline()
	if p.proto == ProtoH2 {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", p.addr)
		if err != nil {
			return nil, fmt.Errorf("dial: %w", err)
		}
		tc, err := handshakeTLS(c, p.tls, "h2", deadline, obs)
		if err != nil {
			c.Close()
			return nil, err
		}
		tc.SetDeadline(time.Time{}) //nolint:errcheck // each request has its context's deadline
		cc, err := p.h2.NewClientConn(tc)
		if err != nil {
			tc.Close()
			return nil, err
		}
		return muxH2Conn{cc}, nil
	}
	t0 := time.Now()
	qc, err := quic.DialAddr(ctx, p.addr, p.tls, p.quic)
	h := Handshake{Duration: time.Since(t0)}
	if err != nil {
		h.Result, h.Err = ClassifyHandshake(err), err
		if obs != nil {
			obs.Handshake(&h)
		}
		return nil, &handshakeError{h.Result, err}
	}
	st := qc.ConnectionState().TLS
	err = observeState(&h, &st, "h3")
	if obs != nil {
		obs.Handshake(&h)
	}
	if err != nil {
		qc.CloseWithError(0, "") //nolint:errcheck // closing
		return nil, err
	}
	return muxH3Conn{qc, p.h3.NewClientConn(qc)}, nil
}

// muxSlot is one connection of the pool, shared by its workers.
type muxSlot struct {
	mu sync.Mutex
	c  muxConn
}

// get is the slot's connection, dialled when there is none usable.
func (s *muxSlot) get(ctx context.Context, p *MuxPool, obs HandshakeObserver) (muxConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil && s.c.usable() {
		return s.c, nil
	}
	if s.c != nil {
		s.c.close()
		s.c = nil
	}
	c, err := p.dial(ctx, obs)
	if err != nil {
		return nil, err
	}
	s.c = c
	return c, nil
}

// drop closes c if it is still the slot's connection (nil: whatever it is).
func (s *muxSlot) drop(c muxConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil && (c == nil || s.c == c) {
		s.c.close()
		s.c = nil
	}
}

// MuxDoer is one worker of a MuxPool: one stream at a time on its
// connection.
type MuxDoer struct {
	Observer HandshakeObserver
	p        *MuxPool
	slot     *muxSlot // nil: a new connection per request
	body     bodyReader
}

var (
	_ Doer      = (*MuxDoer)(nil)
	_ Connector = (*MuxDoer)(nil)
)

// Connect dials the worker's connection unless it is up (open-loop
// workers joining the pool connect before their first request); with a
// new connection per request it does nothing.
func (d *MuxDoer) Connect(deadline time.Time) error {
	if d.slot == nil {
		return nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	_, err := d.slot.get(ctx, d.p, d.Observer)
	return err
}

// Do sends the request on the worker's connection and reads the whole
// response until deadline. A request that failed because its connection
// went away (a GOAWAY after the server's request limit, a close) is sent
// once more on a new connection, as net/http's Transport does.
func (d *MuxDoer) Do(deadline time.Time) (Response, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	resp, err, retry := d.try(ctx)
	if retry && ctx.Err() == nil {
		resp, err, _ = d.try(ctx)
	}
	return resp, err
}

func (d *MuxDoer) try(ctx context.Context) (Response, error, bool) {
	var c muxConn
	var err error
	if d.slot == nil {
		c, err = d.p.dial(ctx, d.Observer)
		if err != nil {
			return Response{}, err, false
		}
		defer c.close()
	} else if c, err = d.slot.get(ctx, d.p, d.Observer); err != nil {
		return Response{}, err, false
	}
	req, err := newStdRequest(ctx, d.p.t)
	if err != nil {
		return Response{}, err, false
	}
	res, err := c.RoundTrip(req)
	if err != nil {
		gone := !c.usable()
		if gone && d.slot != nil {
			d.slot.drop(c)
		}
		return Response{}, err, gone && d.slot != nil
	}
	r, err := d.body.read(res, d.p.t.ExpectOrigin, d.p.t.Limits)
	return r, err, false
}

// Close is a no-op: the pool owns the connections (MuxPool.Close).
func (d *MuxDoer) Close() {}
