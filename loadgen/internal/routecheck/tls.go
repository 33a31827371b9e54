package routecheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/quic-go/quic-go"

	"proxybench/internal/stack"
	"proxybench/loadgen/internal/wire"
)

// TLSWant is what a proxy's TLS port must negotiate for a cell.
type TLSWant struct {
	ALPN                   string // the one protocol offered and required: http/1.1, h2 or h3 (h3: over QUIC)
	MinVersion, MaxVersion uint16 // offered versions, tls.VersionTLS12 / 13; 0 = 1.2 .. 1.3
	RootCAs                *x509.CertPool
	ServerName             string // "" = the address's host
}

// NewTLSWant is what a cell speaking p at version ("1.2", "1.3"; "" =
// both offered) asks of a TLS port whose certificate roots verifies.
func NewTLSWant(p wire.Proto, version string, roots *x509.CertPool) (TLSWant, error) {
	if !p.Secure() {
		return TLSWant{}, fmt.Errorf("protocol %s does not run over TLS: use tls, h2 or h3", p)
	}
	v, err := wire.ParseTLSVersion(version)
	if err != nil {
		return TLSWant{}, err
	}
	return TLSWant{ALPN: p.ALPN(), MinVersion: v, MaxVersion: v, RootCAs: roots}, nil
}

// StackTLSTarget is the real stack's TLS ports: https://127.0.0.1:<TLS
// port of the proxy>.
func StackTLSTarget(proxy string) (string, error) {
	p, err := stack.LookupProxy(proxy)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("https://127.0.0.1:%d", p.TLSPort), nil
}

// TLSNotServed is why a failed CheckTLS r of protocol p means the proxy
// serves no p on its TLS port (not applicable) rather than a broken port;
// "" when it is broken. Only the custom proxy (the user's image) may serve
// none, and then nothing answers (refused, or no QUIC answer).
func TLSNotServed(r Result, p wire.Proto) string {
	if r.OK || r.Proxy != "custom" || (r.Short != "refused" && r.Short != "timeout") {
		return ""
	}
	return fmt.Sprintf("the custom proxy serves no %s on its TLS port (%s)", p, r.Short)
}

func (w TLSWant) versions() string {
	lo, hi := w.MinVersion, w.MaxVersion
	if lo == 0 {
		lo = tls.VersionTLS12
	}
	if hi == 0 {
		hi = tls.VersionTLS13
	}
	if lo == hi {
		return tls.VersionName(lo)
	}
	return tls.VersionName(lo) + " .. " + tls.VersionName(hi)
}

// CheckTLS shakes hands with addr (host:port; TCP, or UDP for h3) as a
// cell would and checks what was negotiated: the certificate verifies
// against the CAs given, a version asked is accepted, and the protocol
// asked is selected. A proxy that silently falls back (to HTTP/1.1 when
// h2 is asked, or to no ALPN) fails with short "alpn mismatch".
func CheckTLS(ctx context.Context, proxy, addr string, want TLSWant, timeout time.Duration) Result {
	r := Result{Proxy: proxy, URL: "https://" + addr}
	fail := func(short, format string, a ...any) Result {
		r.Short, r.Reason = short, fmt.Sprintf("%s TLS %s (ALPN %s, %s): ", proxy, addr, want.ALPN, want.versions())+fmt.Sprintf(format, a...)
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fail("bad address", "%v", err)
	}
	cfg := &tls.Config{RootCAs: want.RootCAs, MinVersion: want.MinVersion, MaxVersion: want.MaxVersion, ServerName: want.ServerName, NextProtos: []string{want.ALPN}}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	var st tls.ConnectionState
	if want.ALPN == "h3" {
		qc, err := quic.DialAddr(ctx, addr, cfg, &quic.Config{})
		if err != nil {
			return tlsFail(fail, want, err)
		}
		st = qc.ConnectionState().TLS
		qc.CloseWithError(0, "") //nolint:errcheck // closing
	} else {
		var d tls.Dialer
		d.Config = cfg
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return tlsFail(fail, want, err)
		}
		st = c.(*tls.Conn).ConnectionState()
		c.Close()
	}
	if st.NegotiatedProtocol != want.ALPN {
		got := st.NegotiatedProtocol
		if got == "" {
			got = "none"
		}
		return fail("alpn mismatch", "the proxy negotiated ALPN %s (%s), not %s: it would fall back to another protocol than the cell measures (check its TLS listener's ALPN list)",
			got, tls.VersionName(st.Version), want.ALPN)
	}
	r.OK, r.Short = true, "ok"
	r.Reason = fmt.Sprintf("%s, %s, ALPN %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), st.NegotiatedProtocol)
	return r
}

func tlsFail(fail func(short, format string, a ...any) Result, want TLSWant, err error) Result {
	var cv *tls.CertificateVerificationError
	switch short := transportShort(err); {
	case errors.As(err, &cv):
		return fail("certificate", "the certificate does not verify against the CA trusted: %v (scripts/stack.sh up renews the lab's; loadgen certs shows it)", cv.Err)
	case short == "refused":
		return fail(short, "connection refused: is the proxy's TLS port up? (make up)")
	case short == "timeout":
		return fail(short, "no handshake within the timeout")
	default:
		switch wire.ClassifyHandshake(err) {
		case wire.HandshakeALPN:
			return fail("alpn mismatch", "the proxy refused ALPN %s (no_application_protocol): it does not speak the protocol the cell measures", want.ALPN)
		case wire.HandshakeVersion:
			return fail("tls version", "the proxy refused %s (protocol_version): check its minimum TLS version (TLS_MIN_VERSION)", want.versions())
		}
		return fail(short, "%v", err)
	}
}
