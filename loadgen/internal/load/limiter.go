package load

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// Limiter is a configured cap on the rate at which an attack's sends start,
// like JMeter's throughput timer: every send reserves the next free slot and
// is held until it. Slots are 1/rate apart and never bunch up: a slot left
// unused while nobody asked is gone (no burst credit), so over any interval
// of length T at most T*rate+1 sends start. It is safe for concurrent use. A
// nil *Limiter is no cap: Reserve returns now.
type Limiter struct {
	origin   time.Time
	interval int64        // ns between slots
	next     atomic.Int64 // ns after origin of the next free slot
}

// NewLimiter returns the cap of rate sends per second whose slots start at
// origin, or nil (no cap) when rate is 0.
func NewLimiter(rate float64, origin time.Time) *Limiter {
	if rate <= 0 {
		return nil
	}
	return &Limiter{origin: origin, interval: max(1, int64(math.Round(float64(time.Second)/rate)))}
}

// Reserve takes the first free slot at or after now and returns its time:
// the caller sends then, not before.
func (l *Limiter) Reserve(now time.Time) time.Time {
	if l == nil {
		return now
	}
	at := int64(now.Sub(l.origin))
	for {
		cur := l.next.Load()
		slot := max(cur, at)
		if l.next.CompareAndSwap(cur, slot+l.interval) {
			return l.origin.Add(time.Duration(slot))
		}
	}
}

// CheckMaxRate validates a -max-rate cap in requests/s: 0 (none) or
// positive and finite.
func CheckMaxRate(rate float64) error {
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("max rate %v: use a positive cap in requests/s, or 0 for none", rate)
	}
	return nil
}
