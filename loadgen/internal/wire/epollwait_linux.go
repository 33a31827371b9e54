//go:build linux

package wire

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// epollWaiter waits for an event loop's epoll set without a blocking
// syscall: it asks the set with epoll_wait(0) as a RawSyscall, and when
// nothing is ready parks the goroutine on Go's own poller, where the set's
// descriptor (an epoll set is itself pollable) becomes readable as soon as
// one of its sockets has an event. A blocking epoll_wait would be an
// ordinary syscall: each one that waits longer than sysmon's 20 µs tick
// loses the processor to sysmon and keeps sysmon waking every 20 µs: with
// the loadgen beside the origin on CPU 0 and nginx on CPU 1 that was 0.6-0.75
// context switches and 21-24 µs of CPU per request, against wrk's 0.15 and
// 18.5-20 (perf stat); parked on the poller, the loop's thread sleeps in
// the scheduler's netpoll instead, sysmon backs off, and the loop takes
// 0.15-0.17 and 17-19 µs (make perf's shared-CPU table, docs/measured.md).
type epollWaiter struct {
	epfd int
	f    *os.File
	rc   syscall.RawConn
}

// newEpollWaiter takes ownership of epfd (close closes it).
func newEpollWaiter(epfd int) (*epollWaiter, error) {
	if err := syscall.SetNonblock(epfd, true); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(epfd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &epollWaiter{epfd: epfd, f: f, rc: rc}, nil
}

// now is what is ready at once, without waiting.
func (w *epollWaiter) now(events []syscall.EpollEvent) (int, error) {
	for {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(w.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		}
		return 0, errno
	}
}

// wait returns the events ready within d (none when d passes first).
func (w *epollWaiter) wait(events []syscall.EpollEvent, d time.Duration) (int, error) {
	if n, err := w.now(events); n > 0 || err != nil {
		return n, err
	}
	if err := w.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		return 0, err
	}
	var n int
	var err error
	rerr := w.rc.Read(func(uintptr) bool {
		n, err = w.now(events)
		return n > 0 || err != nil
	})
	if rerr != nil && !errors.Is(rerr, os.ErrDeadlineExceeded) {
		return 0, rerr
	}
	return n, err
}

func (w *epollWaiter) close() { w.f.Close() }
