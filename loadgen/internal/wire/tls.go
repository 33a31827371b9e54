package wire

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"reflect"
	"time"

	"github.com/quic-go/quic-go"
)

// Proto is the protocol a run speaks on the wire.
type Proto string

// The protocols.
const (
	ProtoH1  Proto = "h1"  // HTTP/1.1 over TCP
	ProtoTLS Proto = "tls" // HTTP/1.1 over TLS, ALPN http/1.1
	ProtoH2  Proto = "h2"  // HTTP/2 over TLS, ALPN h2
	ProtoH3  Proto = "h3"  // HTTP/3 over QUIC, ALPN h3
)

// Protos are the protocols, in the order of the docs and the label values.
var Protos = []Proto{ProtoH1, ProtoTLS, ProtoH2, ProtoH3}

// ParseProto accepts the names of Protos.
func ParseProto(s string) (Proto, error) {
	for _, p := range Protos {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("protocol %q: use h1 (HTTP/1.1 over TCP), tls (HTTP/1.1 over TLS), h2 (HTTP/2 over TLS) or h3 (HTTP/3 over QUIC)", s)
}

// ParseTLSVersion is a TLS version as the flags and plans name it, "1.2"
// or "1.3", in crypto/tls's numbering; "" is 0 (no bound: 1.2 and 1.3
// offered).
func ParseTLSVersion(s string) (uint16, error) {
	switch s {
	case "":
		return 0, nil
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("TLS version %q: use 1.2 or 1.3", s)
}

// ALPN is the protocol ID the client offers for p, and requires the server
// to select: "" for h1.
func (p Proto) ALPN() string {
	switch p {
	case ProtoTLS:
		return "http/1.1"
	case ProtoH2:
		return "h2"
	case ProtoH3:
		return "h3"
	}
	return ""
}

// Secure says whether p runs over TLS (or QUIC's TLS).
func (p Proto) Secure() bool { return p != ProtoH1 && p != "" }

// Multiplexed says whether p carries several requests at once on one
// connection (streams).
func (p Proto) Multiplexed() bool { return p == ProtoH2 || p == ProtoH3 }

// HandshakeResult is the bounded outcome of one TLS handshake: a label
// value of the handshake counter.
type HandshakeResult uint8

// The results, in the order of HandshakeResultNames.
const (
	HandshakeFull      HandshakeResult = iota // completed without resumption
	HandshakeResumed                          // completed, session resumed
	HandshakeCertError                        // the server's certificate did not verify
	HandshakeALPN                             // the server selected another protocol than asked, or refused it (no_application_protocol)
	HandshakeVersion                          // the peer refused the TLS versions asked (protocol_version alert)
	HandshakeError                            // anything else: timeout, reset, other alerts
	NumHandshakeResults
)

// HandshakeResultNames are the results' label values.
var HandshakeResultNames = [NumHandshakeResults]string{"full", "resumed", "cert_error", "alpn_mismatch", "version_mismatch", "error"}

func (r HandshakeResult) String() string { return HandshakeResultNames[r] }

// OK says the handshake completed with the protocol asked.
func (r HandshakeResult) OK() bool { return r == HandshakeFull || r == HandshakeResumed }

// Handshake is the account of one TLS handshake (QUIC's included).
type Handshake struct {
	Result   HandshakeResult
	Duration time.Duration // from the first ClientHello byte to the handshake's end (TCP connect excluded; QUIC: the whole dial)
	Version  uint16        // negotiated, tls.VersionTLS13 ...; 0 when it failed
	Cipher   uint16
	ALPN     string // the protocol the server selected
	Err      error  // nil when Result.OK()
}

// HandshakeObserver receives every handshake of the connections of a
// worker. It is called from the worker's goroutine, or for a multiplexed
// connection from whichever of its streams' goroutines dialled it.
type HandshakeObserver interface {
	Handshake(h *Handshake)
}

// handshakeError is a handshake that failed or selected another protocol
// than asked. Classify gives it ReasonTLS, unless the transport below
// failed (timeout, reset, eof), which keeps its own reason.
type handshakeError struct {
	result HandshakeResult
	err    error
}

func (e *handshakeError) Error() string {
	return "TLS handshake (" + e.result.String() + "): " + e.err.Error()
}
func (e *handshakeError) Unwrap() error { return e.err }

// TLS alerts (RFC 8446 6) a handshake's result names.
const (
	alertProtocolVersion       = 70  // no version in common
	alertNoApplicationProtocol = 120 // no ALPN protocol in common (a server that knows only others)
)

// ClassifyHandshake is the result of a handshake that failed with err.
func ClassifyHandshake(err error) HandshakeResult {
	var cv *tls.CertificateVerificationError
	var oe *net.OpError
	var ae tls.AlertError
	if a, ok := quicAlert(err); ok {
		ae = a
		err = errors.Join(err, ae)
	}
	switch {
	case errors.As(err, &cv):
		return HandshakeCertError
	case errors.As(err, &ae) && ae == alertProtocolVersion:
		return HandshakeVersion
	case errors.As(err, &ae) && ae == alertNoApplicationProtocol:
		return HandshakeALPN
	case errors.As(err, &oe) && oe.Op == "remote error" && isAlert(oe.Err, alertProtocolVersion):
		// crypto/tls reports a peer's alert as a net.OpError around its
		// unexported alert type, a uint8.
		return HandshakeVersion
	case errors.As(err, &oe) && oe.Op == "remote error" && isAlert(oe.Err, alertNoApplicationProtocol):
		return HandshakeALPN
	}
	return HandshakeError
}

// quicAlert is the TLS alert a QUIC handshake failed with (QUIC's crypto
// error codes are 0x100 + the alert).
func quicAlert(err error) (tls.AlertError, bool) {
	var te *quic.TransportError
	if errors.As(err, &te) && te.ErrorCode.IsCryptoError() {
		return tls.AlertError(te.ErrorCode - 0x100), true
	}
	return 0, false
}

func isAlert(err error, code uint64) bool {
	v := reflect.ValueOf(err)
	return v.IsValid() && v.Kind() == reflect.Uint8 && v.Uint() == code
}

// observeState completes h from a finished handshake's state and checks
// the protocol selected against alpn; the error is a handshakeError when
// it differs.
func observeState(h *Handshake, st *tls.ConnectionState, alpn string) error {
	h.Version, h.Cipher, h.ALPN = st.Version, st.CipherSuite, st.NegotiatedProtocol
	h.Result = HandshakeFull
	if st.DidResume {
		h.Result = HandshakeResumed
	}
	if st.NegotiatedProtocol != alpn {
		h.Result = HandshakeALPN
		h.Err = &handshakeError{HandshakeALPN, fmt.Errorf("the server selected ALPN %q, asked for %q (a fall back to another protocol)", st.NegotiatedProtocol, alpn)}
	}
	return h.Err
}

// clientTLS is a run's TLS config for p: cfg (its trust, versions, session
// cache) with the protocol offered set. ServerName defaults to host.
func clientTLS(cfg *tls.Config, p Proto, host string) *tls.Config {
	var c *tls.Config
	if cfg != nil {
		c = cfg.Clone()
	} else {
		c = &tls.Config{}
	}
	c.NextProtos = []string{p.ALPN()}
	if c.ServerName == "" {
		c.ServerName = host
	}
	return c
}

// handshakeTLS runs the client handshake on c until deadline and reports
// it to obs (nil = nobody).
func handshakeTLS(c net.Conn, cfg *tls.Config, alpn string, deadline time.Time, obs HandshakeObserver) (*tls.Conn, error) {
	tc := tls.Client(rawTCP(c), cfg)
	if err := tc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	t0 := time.Now()
	err := tc.Handshake()
	h := Handshake{Duration: time.Since(t0)}
	if err != nil {
		h.Result, h.Err = ClassifyHandshake(err), err
		err = &handshakeError{h.Result, err}
	} else {
		st := tc.ConnectionState()
		err = observeState(&h, &st, alpn)
	}
	if obs != nil {
		obs.Handshake(&h)
	}
	if err != nil {
		return nil, err
	}
	return tc, nil
}

// isTLSFailure says err is a handshake that failed for TLS's own reasons
// (certificate, version, ALPN, an alert), not for the transport's.
func isTLSFailure(err error) bool {
	var he *handshakeError
	if !errors.As(err, &he) {
		var cv *tls.CertificateVerificationError
		return errors.As(err, &cv)
	}
	if he.result != HandshakeError {
		return true
	}
	var oe *net.OpError
	var ae tls.AlertError
	_, qa := quicAlert(he.err)
	return qa || errors.As(he.err, &ae) || (errors.As(he.err, &oe) && oe.Op == "remote error")
}
