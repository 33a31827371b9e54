package attack

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// classify maps a transport error to one of the bounded reasons. It looks at
// error types and errnos, never at error text, so a new message from the
// runtime cannot leak into a label.
func classify(err error) errReason {
	var pe *protocolError
	var le *limitError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return reasonCanceled
	case errors.As(err, &le):
		return le.reason
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ETIMEDOUT):
		return reasonTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return reasonRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return reasonReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return reasonEOF
	case errors.As(err, &pe):
		return reasonProtocol
	case errors.As(err, &ne) && ne.Timeout():
		return reasonTimeout
	}
	// net/http reports malformed responses with unexported error types; those
	// land here, as does anything new.
	return reasonOther
}
