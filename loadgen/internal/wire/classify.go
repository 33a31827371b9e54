package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Reason is the bounded reason a request got no complete HTTP response: a
// label value of the loadgen's error series.
type Reason uint8

// The reasons, in the order of ReasonNames.
const (
	ReasonTimeout Reason = iota
	ReasonRefused
	ReasonReset
	ReasonEOF
	ReasonProtocol
	ReasonHeaderTooLarge
	ReasonBodyTooLarge
	ReasonTLS // the TLS handshake failed: certificate, version, ALPN or an alert
	ReasonCanceled
	ReasonOther
	NumReasons
)

// ReasonNames are the reasons' label values.
var ReasonNames = [NumReasons]string{"timeout", "refused", "reset", "eof", "protocol", "header_too_large", "body_too_large", "tls", "canceled", "other"}

func (r Reason) String() string { return ReasonNames[r] }

// Classify maps a transport error to one of the bounded reasons. It looks at
// error types and errnos, never at error text, so a new message from the
// runtime cannot leak into a label.
func Classify(err error) Reason {
	var pe *protocolError
	var le *limitError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case errors.As(err, &le):
		return le.reason
	case isTLSFailure(err):
		return ReasonTLS
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ETIMEDOUT):
		return ReasonTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return ReasonReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonEOF
	case errors.As(err, &pe):
		return ReasonProtocol
	case errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	}
	// net/http reports malformed responses with unexported error types; those
	// land here, as does anything new.
	return ReasonOther
}
