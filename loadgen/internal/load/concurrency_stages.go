package load

import (
	"errors"
	"math"
	"time"
)

// ConcurrencyStages is a closed loop whose number of active connections
// ramps linearly within each stage from the previous target (0 before the
// first) to the stage's, k6's ramping-vus. The window is the sum of the
// stages.
type ConcurrencyStages struct {
	Stages []Stage
}

var _ Model = ConcurrencyStages{}

// Name implements Model.
func (ConcurrencyStages) Name() string { return NameStages }

// Validate implements Model.
func (m ConcurrencyStages) Validate() error {
	errs := checkStages(m.Stages)
	p := peak(m.Stages)
	if len(m.Stages) > 0 && p < 1 {
		errs = append(errs, problem("Stages", FormatStages(m.Stages), "concurrency stages need a target of at least 1 somewhere"))
	}
	if p > DefaultMaxInFlight {
		errs = append(errs, problem("Stages", FormatStages(m.Stages), "concurrency target %v is above %d connections", p, DefaultMaxInFlight))
	}
	return errors.Join(errs...)
}

// Window implements Model: the stages' total.
func (m ConcurrencyStages) Window() time.Duration { return sumStages(m.Stages) }

// MaxWorkers implements Model: the peak, rounded up.
func (m ConcurrencyStages) MaxWorkers() int { return int(math.Ceil(peak(m.Stages))) }

// Pacer implements Model: a closed loop has none.
func (ConcurrencyStages) Pacer() Pacer { return nil }

// Active implements Model: the ramp, rounded to whole connections.
func (m ConcurrencyStages) Active() func(time.Duration) int {
	return func(t time.Duration) int { return int(math.Round(stageValue(0, m.Stages, t))) }
}

// Warmup implements Model: a ramp to the first stage's target over d.
func (m ConcurrencyStages) Warmup(d time.Duration) Model {
	return ConcurrencyStages{Stages: warmStages(m.Stages, d)}
}

// Share implements Model: a share of every target, at least one connection.
func (m ConcurrencyStages) Share(f float64) Model {
	return ConcurrencyStages{Stages: shareStages(m.Stages, f, true)}
}

// Streams implements Model: the stages as they are, each connection
// carrying n streams.
func (m ConcurrencyStages) Streams(int) Model { return m }

// Summary implements Model: the peak connections, no rate.
func (m ConcurrencyStages) Summary() (int, float64) { return int(peak(m.Stages)), 0 }

func (m ConcurrencyStages) String() string {
	return KindConcurrency + " stages " + FormatStages(m.Stages)
}
