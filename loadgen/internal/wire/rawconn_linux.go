//go:build linux

package wire

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// rawConn is a TCP connection whose reads and writes are RawSyscalls on
// its non-blocking socket, waiting on Go's poller (syscall.RawConn) only
// when the socket would block: the same syscalls as net.TCPConn, without
// the scheduler's entersyscall/exitsyscall around each. Under TLS and
// HTTP/2 every request costs a write and a read; as ordinary syscalls
// they keep sysmon waking (a nanosleep per request under strace) and the
// processor changing hands, which on a loadgen pinned to one CPU costs
// more than the requests' own work (the event loop's reason for
// RawSyscall, see rawIO). Deadlines hold as on the TCPConn: the poller
// enforces them.
type rawConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

// rawTCP wraps c when it is a TCP connection; anything else is returned
// as is.
func rawTCP(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawConn{TCPConn: tc, rc: rc}
}

func (c *rawConn) Read(p []byte) (int, error) {
	var n int
	var err error
	rerr := c.rc.Read(func(fd uintptr) bool {
		n, err = rawIO(syscall.SYS_READ, int(fd), p)
		return !errors.Is(err, syscall.EAGAIN)
	})
	switch {
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: rerr}
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	written := 0
	var err error
	rerr := c.rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			var n int
			n, err = rawIO(syscall.SYS_WRITE, int(fd), p[written:])
			if errors.Is(err, syscall.EAGAIN) {
				err = nil
				return false // wait until writable
			}
			if err != nil {
				return true
			}
			written += n
		}
		return true
	})
	if rerr == nil {
		rerr = err
	}
	if rerr != nil {
		return written, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: rerr}
	}
	return written, nil
}
