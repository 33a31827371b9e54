package wire

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"proxybench/loadgen/internal/wire/wiretest"
)

// testSink counts what a loop reports, and stops it at until.
type testSink struct {
	until    time.Time
	mu       sync.Mutex
	ok, errs int64
	reasons  map[Reason]int64
	inFlight atomic.Int64
}

func (s *testSink) Now() time.Time          { return time.Now() }
func (s *testSink) Stop(now time.Time) bool { return !now.Before(s.until) }
func (s *testSink) InFlight(d int64)        { s.inFlight.Add(d) }
func (s *testSink) Done(_, _ time.Time, r Response, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs++
		if s.reasons == nil {
			s.reasons = map[Reason]int64{}
		}
		s.reasons[Classify(err)]++
		return
	}
	if r.Code == 200 && r.Bytes == 2 {
		s.ok++
	}
}

// rawH2Server is a minimal HTTP/2 server over TLS: it answers every
// request "ok", and after perConn requests on a connection sends GOAWAY
// naming the last one it answered and refuses the rest (a server's
// request limit per connection, nginx's keepalive_requests). It counts
// the requests it answered and the connections.
func rawH2Server(t *testing.T, perConn int) (addr string, roots *x509.CertPool, answered, conns *atomic.Int64) {
	t.Helper()
	cert, roots, _ := wiretest.LabCert(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	answered, conns = &atomic.Int64{}, &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go serveRawH2(c, perConn, answered)
		}
	}()
	return ln.Addr().String(), roots, answered, conns
}

func serveRawH2(c net.Conn, perConn int, answered *atomic.Int64) {
	defer c.Close()
	br := bufio.NewReader(c)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(br, preface); err != nil {
		return
	}
	fr := http2.NewFramer(c, br)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100}) //nolint:errcheck // test server
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})  //nolint:errcheck // a buffer
	enc.WriteField(hpack.HeaderField{Name: "x-origin", Value: "raw"}) //nolint:errcheck // a buffer
	block := hb.Bytes()
	n, last := 0, uint32(0)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck() //nolint:errcheck // test server
			}
		case *http2.HeadersFrame:
			switch {
			case n == perConn: // the limit: GOAWAY, the rest ignored
				fr.WriteGoAway(last, http2.ErrCodeNo, nil) //nolint:errcheck // test server
				n++
				go func() { time.Sleep(50 * time.Millisecond); c.Close() }()
				continue
			case n > perConn:
				continue
			}
			n++
			last = f.StreamID
			answered.Add(1)                                                                                        // before the client can see it
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: block, EndHeaders: true}) //nolint:errcheck // test server
			fr.WriteData(f.StreamID, true, []byte("ok"))                                                           //nolint:errcheck // test server
		}
	}
}

// A GOAWAY after a server's per-connection request limit costs no
// request: the streams it left unprocessed are sent again on a new
// connection, and every request is answered exactly once.
func TestH2LoopGoAway(t *testing.T) {
	t.Parallel()
	addr, roots, answered, conns := rawH2Server(t, 50)
	tgt := &Target{URL: "https://" + addr + "/", Proto: ProtoH2, TLS: &tls.Config{RootCAs: roots}, Timeout: 2 * time.Second,
		Limits: Limits{Header: 64 << 10, Body: 1 << 20}, ExpectOrigin: "raw"}
	loop, err := NewH2Loop(tgt, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	sink := &testSink{until: time.Now().Add(300 * time.Millisecond)}
	var hs []HandshakeResult
	loop.Run(0, sink, observerFunc(func(h *Handshake) { hs = append(hs, h.Result) }))
	if sink.errs != 0 || sink.ok == 0 || sink.ok != answered.Load() || sink.inFlight.Load() != 0 {
		t.Fatalf("ok %d, errors %d %v, server answered %d, in flight %d", sink.ok, sink.errs, sink.reasons, answered.Load(), sink.inFlight.Load())
	}
	if c := conns.Load(); c < 2 || int64(len(hs)) != c || c != (sink.ok+49)/50 {
		t.Errorf("%d connections (%d handshakes) for %d requests, want one per 50", c, len(hs), sink.ok)
	}
}

type observerFunc func(*Handshake)

func (f observerFunc) Handshake(h *Handshake) { f(h) }
