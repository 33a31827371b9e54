package load

import (
	"errors"
	"fmt"
	"time"
)

// Closed is a closed loop: Connections workers, each sends its next request
// when the previous one completes, for Duration.
type Closed struct {
	Connections int
	Duration    time.Duration
}

var _ Model = Closed{}

// Name implements Model.
func (Closed) Name() string { return NameClosed }

// Validate implements Model.
func (m Closed) Validate() error {
	var errs []error
	if m.Connections < 1 {
		errs = append(errs, problem("Connections", m.Connections, "closed loop needs at least 1 connection"))
	}
	errs = append(errs, checkDuration("closed loop", m.Duration))
	return errors.Join(errs...)
}

// Window implements Model.
func (m Closed) Window() time.Duration { return m.Duration }

// MaxWorkers implements Model: one per connection.
func (m Closed) MaxWorkers() int { return m.Connections }

// Pacer implements Model: a closed loop has none.
func (Closed) Pacer() Pacer { return nil }

// Active implements Model: every connection sends all the time.
func (Closed) Active() func(time.Duration) int { return nil }

// Warmup implements Model: the same connections for d.
func (m Closed) Warmup(d time.Duration) Model { return Closed{Connections: m.Connections, Duration: d} }

// Share implements Model: a share of the connections, at least one.
func (m Closed) Share(f float64) Model {
	return Closed{Connections: shareConns(m.Connections, f), Duration: m.Duration}
}

// Streams implements Model: the connections shared among n streams each.
func (m Closed) Streams(n int) Model { return m.Share(1 / float64(n)) }

// Summary implements Model.
func (m Closed) Summary() (int, float64) { return m.Connections, 0 }

func (m Closed) String() string { return fmt.Sprintf("closed loop, %d connections", m.Connections) }
