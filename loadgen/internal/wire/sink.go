package wire

import "time"

// Sink is what a shard of the event loop reports to, and asks of, its
// owner. One Sink serves one shard: its methods are called from that
// shard's goroutine only.
type Sink interface {
	// Now is the clock of send and completion times.
	Now() time.Time
	// Stop says to send no more requests; once it has said so it is not
	// asked again. The requests in flight are still completed.
	Stop(now time.Time) bool
	// InFlight adds delta to the requests in flight.
	InFlight(delta int64)
	// Done is one finished request: sent at sent (a retry of a stale
	// keep-alive connection keeps the first send), done at done.
	Done(sent, done time.Time, res Response, err error)
}
