// Package wire owns sending one request and reading its whole response,
// exactly and cheaply, over HTTP/1.1, HTTP/1.1 over TLS, HTTP/2 and
// HTTP/3: the lean HTTP/1.1 client (one net.Conn or tls.Conn per worker,
// keep-alive or a new connection per request), the closed-loop epoll event
// loop on Linux, the closed-loop HTTP/2 loop (a goroutine per connection,
// its own framing on x/net/http2's Framer), the multiplexed pool of
// x/net/http2 and quic-go connections (MuxPool), the net/http client (the
// reference the others are tested against), the two HTTP/1.1 response
// parsers (in place from a bufio.Reader for the lean client, incremental
// for the event loop; a fuzz test holds them to the same answers), the TLS
// handshake with the protocol asked (ALPN) and its account (Handshake),
// the limits on what one response may cost, and the bounded reason of
// every failure. It reports status, body bytes, whether X-Origin matched,
// and the error; package attack owns when to send (pacing, windows) and
// the accounting.
package wire

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Doer sends one request and reads the whole response. A Doer is one
// worker's: it is not safe for concurrent use.
type Doer interface {
	// Do sends the request and reads the response until deadline.
	Do(deadline time.Time) (Response, error)
	// Close drops the connection, if any; the next Do opens a new one.
	Close()
}

// Connector is a Doer that can connect ahead of its first request.
type Connector interface {
	// Connect dials unless connected.
	Connect(deadline time.Time) error
}

// Response is what one request got back.
type Response struct {
	Code     int
	Bytes    int64 // body bytes read
	OriginOK bool  // X-Origin matched (or nothing was expected)
}

// Target is what to send, once per run.
type Target struct {
	URL               string
	Method            string // default GET
	Header            http.Header
	Body              []byte
	NewConnPerRequest bool
	ExpectOrigin      string // "" = no check
	Timeout           time.Duration
	Limits            Limits

	// Proto is what is spoken: "" or ProtoH1 plain HTTP/1.1 (http://
	// URLs), the others TLS (https:// URLs). The client offers only the
	// protocol's ALPN ID and a handshake that selects another fails
	// (HandshakeALPN, reason tls): a server that falls back is caught.
	Proto Proto
	// TLS is the run's TLS config: trust (RootCAs), versions, ServerName
	// and the session cache shared by its connections (nil: every
	// handshake is full). NextProtos is set from Proto. nil = Go's
	// defaults.
	TLS *tls.Config
}

// Limits bound what the client reads of one response, so that a
// misbehaving target costs a bounded time and memory and a clear reason
// instead of the whole timeout spent reading (or parsing) at full speed.
type Limits struct {
	// Header bounds the response head: status line, header lines and the
	// blank line, summed over any 1xx interim responses (as net/http
	// does), and separately the trailers of a chunked body.
	Header int
	// Body bounds the body bytes: a Content-Length above it fails at once,
	// a chunked or until-close body as soon as it goes beyond.
	Body int64
}

// protocolError is a response the client could not parse.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "malformed response: " + e.msg }

func errProto(format string, a ...any) error { return &protocolError{fmt.Sprintf(format, a...)} }

// limitError is a response beyond one of the client's limits.
type limitError struct {
	reason Reason // ReasonHeaderTooLarge or ReasonBodyTooLarge
	msg    string
}

func (e *limitError) Error() string { return e.msg }

func errHeaderTooLarge(max int) error {
	return &limitError{ReasonHeaderTooLarge, fmt.Sprintf("response head beyond %d bytes", max)}
}

var errLineTooLong = &limitError{ReasonHeaderTooLarge, "response head line longer than 16 KiB"}

func errBodyTooLarge(max int64) error {
	return &limitError{ReasonBodyTooLarge, fmt.Sprintf("response body beyond %d bytes", max)}
}

// dialAddr parses t's URL and gives the address to dial: its host and
// port, the scheme's default port (80, or 443 over TLS) when it names
// none.
func dialAddr(t *Target) (*url.URL, string, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, "", fmt.Errorf("spec URL %q: %w", t.URL, err)
	}
	if u.Port() != "" {
		return u, u.Host, nil
	}
	port := "80"
	if t.Proto.Secure() {
		port = "443"
	}
	return u, net.JoinHostPort(u.Hostname(), port), nil
}
