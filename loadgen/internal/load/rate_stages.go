package load

import (
	"errors"
	"time"
)

// RateStages is an open loop whose rate ramps linearly within each stage
// from the previous target (0 before the first) to the stage's, k6's
// ramping-arrival-rate, with at most MaxInFlight requests in flight (0 =
// DefaultMaxInFlight). The window is the sum of the stages.
type RateStages struct {
	Stages      []Stage
	MaxInFlight int
}

var _ Model = RateStages{}

// Name implements Model.
func (RateStages) Name() string { return NameStages }

// Validate implements Model.
func (m RateStages) Validate() error {
	return errors.Join(append(checkStages(m.Stages), checkMaxInFlight(m.MaxInFlight))...)
}

// Window implements Model: the stages' total.
func (m RateStages) Window() time.Duration { return sumStages(m.Stages) }

// MaxWorkers implements Model: one per request in flight.
func (m RateStages) MaxWorkers() int { return maxInFlight(m.MaxInFlight) }

// Pacer implements Model: the ramps.
func (m RateStages) Pacer() Pacer { return NewLinearPacer(m.Stages) }

// Active implements Model: an open loop's pool grows as it needs.
func (RateStages) Active() func(time.Duration) int { return nil }

// Warmup implements Model: a ramp to the first stage's target over d.
func (m RateStages) Warmup(d time.Duration) Model {
	return RateStages{Stages: warmStages(m.Stages, d), MaxInFlight: m.MaxInFlight}
}

// Share implements Model: a share of every target and of the cap.
func (m RateStages) Share(f float64) Model {
	return RateStages{Stages: shareStages(m.Stages, f, false), MaxInFlight: shareConns(m.MaxInFlight, f)}
}

// Streams implements Model: the stages as they are, each connection
// carrying n streams.
func (m RateStages) Streams(int) Model { return m }

// Summary implements Model: the cap as given and the schedule's average rate.
func (m RateStages) Summary() (int, float64) { return m.MaxInFlight, mean(m.Stages) }

func (m RateStages) String() string { return KindRate + " stages " + FormatStages(m.Stages) }
