package wiretest

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"proxybench/internal/tlscert"
)

// LabCert makes a lab CA and server certificate of internal/tlscert in a
// temporary directory of t (ECDSA keys take a millisecond): the server's
// key pair, a pool holding the CA alone, and the CA's file.
func LabCert(t testing.TB) (tls.Certificate, *x509.CertPool, string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := tlscert.Ensure(dir, tlscert.ECDSA, time.Now()); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(tlscert.Path(dir, tlscert.CertFile), tlscert.Path(dir, tlscert.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := tlscert.CAPool(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cert, pool, tlscert.Path(dir, tlscert.CAFile)
}

// TLSServer is a Counted serving over TLS with the lab certificate; it
// also counts the handshakes that resumed a session and the protocols its
// requests came in.
type TLSServer struct {
	*Counted
	Pool    *x509.CertPool // trusts the lab CA alone
	CAFile  string         // the lab CA's certificate
	Resumed atomic.Int64   // handshakes that resumed a session
	H2, H1  atomic.Int64   // requests over HTTP/2, over HTTP/1.1
	Version atomic.Uint32  // the version of the last handshake
}

// NewTLSServer starts a TLSServer serving h with ALPN protos (e.g.
// {"h2", "http/1.1"}, or {"http/1.1"} for a server that knows no HTTP/2),
// at TLS versions min..max (0 = Go's defaults), closed when t ends;
// configure, if any, adjusts the http.Server before it starts.
func NewTLSServer(t testing.TB, h http.HandlerFunc, protos []string, minV, maxV uint16, configure ...func(*http.Server)) *TLSServer {
	t.Helper()
	cert, pool, caFile := LabCert(t)
	s := &TLSServer{Counted: &Counted{}, Pool: pool, CAFile: caFile}
	c := s.Counted
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			s.H2.Add(1)
		} else {
			s.H1.Add(1)
		}
		h(w, r)
		c.Handled.Add(1)
	}))
	c.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			c.Conns.Add(1)
		}
	}
	c.EnableHTTP2 = slices.Contains(protos, "h2")
	c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: protos, MinVersion: minV, MaxVersion: maxV,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cs.DidResume {
				s.Resumed.Add(1)
			}
			s.Version.Store(uint32(cs.Version))
			return nil
		}}
	c.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes tests fail on purpose
	for _, f := range configure {
		f(c.Config)
	}
	c.StartTLS()
	t.Cleanup(c.Close)
	return s
}

// H3Server is an HTTP/3 server (quic-go) with the lab certificate on a
// loopback UDP port, counting requests, connections and resumed
// handshakes.
type H3Server struct {
	URL                     string // https://127.0.0.1:port
	Pool                    *x509.CertPool
	Handled, Conns, Resumed atomic.Int64
}

// NewH3Server starts an H3Server serving h, closed when t ends.
func NewH3Server(t testing.TB, h http.HandlerFunc) *H3Server {
	t.Helper()
	cert, pool, _ := LabCert(t)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &H3Server{URL: "https://" + pc.LocalAddr().String(), Pool: pool}
	srv := &http3.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h(w, r)
			s.Handled.Add(1)
		}),
		TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert},
			VerifyConnection: func(cs tls.ConnectionState) error {
				s.Conns.Add(1)
				if cs.DidResume {
					s.Resumed.Add(1)
				}
				return nil
			}}),
		QUICConfig: &quic.Config{MaxIncomingStreams: 1000},
	}
	go srv.Serve(pc) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close(); pc.Close() })
	return s
}
