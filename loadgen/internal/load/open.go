package load

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Open is an open loop: request n is due at n/Rate s whatever the latency,
// for Duration, with at most MaxInFlight requests in flight (0 =
// DefaultMaxInFlight).
type Open struct {
	Rate        float64 // requests/s
	MaxInFlight int
	Duration    time.Duration
}

var _ Model = Open{}

// Name implements Model.
func (Open) Name() string { return NameOpen }

// Validate implements Model.
func (m Open) Validate() error {
	var errs []error
	if !(m.Rate > 0) || math.IsInf(m.Rate, 0) {
		errs = append(errs, problem("Rate", m.Rate, "open loop needs a positive rate in requests/s"))
	}
	errs = append(errs, checkMaxInFlight(m.MaxInFlight), checkDuration("open loop", m.Duration))
	return errors.Join(errs...)
}

// Window implements Model.
func (m Open) Window() time.Duration { return m.Duration }

// MaxWorkers implements Model: one per request in flight.
func (m Open) MaxWorkers() int { return maxInFlight(m.MaxInFlight) }

// Pacer implements Model: a constant rate.
func (m Open) Pacer() Pacer { return ConstantPacer{Freq: m.Rate, Duration: m.Duration} }

// Active implements Model: an open loop's pool grows as it needs.
func (Open) Active() func(time.Duration) int { return nil }

// Warmup implements Model: the same rate for d.
func (m Open) Warmup(d time.Duration) Model {
	return Open{Rate: m.Rate, MaxInFlight: m.MaxInFlight, Duration: d}
}

// Share implements Model: a share of the rate and of the cap (at least one).
func (m Open) Share(f float64) Model {
	return Open{Rate: m.Rate * f, MaxInFlight: shareConns(m.MaxInFlight, f), Duration: m.Duration}
}

// Streams implements Model: the most in flight (the default when 0) over
// n streams a connection, at least one connection; the rate as it is.
func (m Open) Streams(n int) Model {
	if m.MaxInFlight == 0 {
		m.MaxInFlight = DefaultMaxInFlight
	}
	m.MaxInFlight = max(1, m.MaxInFlight/n)
	return m
}

// Summary implements Model: the cap as given (0 = the default) and the rate.
func (m Open) Summary() (int, float64) { return m.MaxInFlight, m.Rate }

func (m Open) String() string {
	return fmt.Sprintf("open loop at %g requests/s, up to %d in flight", m.Rate, m.MaxWorkers())
}
