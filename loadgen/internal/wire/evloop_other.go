//go:build !linux

package wire

import "errors"

// EventLoopAvailable says whether this OS has the event loop.
const EventLoopAvailable = false

// EventLoop is the closed-loop engine of Linux.
type EventLoop struct{}

// NewEventLoop fails: the event loop needs Linux.
func NewEventLoop(*Request, int, int) (*EventLoop, error) {
	return nil, errors.New("the event loop needs Linux")
}

// Shards is 0.
func (*EventLoop) Shards() int { return 0 }

// Run does nothing.
func (*EventLoop) Run(int, Sink) {}
