package load

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Segment is worker Index's share of a load run by Count loadgen workers as
// one instrument, after k6's execution segments: the load is cut into Count
// equal segments and their units are striped across the workers, as k6's
// segment sequence stripes iterations. Unit j (a connection slot of a
// closed loop, request number j of an open loop's schedule) belongs to
// worker j mod Count, so
//
//   - connections split as evenly as integers allow, the first workers
//     taking one more, and the shares add up to the total exactly;
//   - an open loop's request n is worker (n mod Count)'s, due when the whole
//     schedule has it due: every worker's schedule interleaves with the
//     others' (worker 1 sends the requests between worker 0's), the shares
//     add up to the schedule exactly, and the rates to the rate;
//   - stages keep their durations, each worker's share of the ramp scaled
//     the same way at every instant (rate stages by the striped schedule,
//     concurrency stages by the striped connection slots).
//
// The zero Segment is one worker alone: the load itself.
type Segment struct {
	Index int `json:"index"` // 0-based: the worker label's value
	Count int `json:"count"` // how many workers share the load; 0 counts as 1
}

// Workers is how many workers share the load (Count, at least 1).
func (s Segment) Workers() int { return max(1, s.Count) }

func (s Segment) String() string { return fmt.Sprintf("worker %d of %d", s.Index, s.Workers()) }

// Validate reports a segment that names no worker of its count.
func (s Segment) Validate() error {
	var errs []error
	if s.Count < 0 {
		errs = append(errs, problem("Segment", s.Count, "the number of loadgen workers must be at least 1"))
	}
	if s.Index < 0 || s.Index >= s.Workers() {
		errs = append(errs, problem("Segment", s.Index, "a worker index must be in 0..%d for %d workers", s.Workers()-1, s.Workers()))
	}
	return errors.Join(errs...)
}

// Slots is how many of n striped units (connections, requests) are the
// segment's: those j < n with j mod Count == Index. The slots of a
// segment's workers add up to n.
func (s Segment) Slots(n int) int {
	w := s.Workers()
	if n <= s.Index {
		return 0
	}
	return (n - s.Index + w - 1) / w
}

// Of is the segment's share of m, validated: m's own problems, the
// segment's, and a model with fewer connections (a closed loop's, the peak
// of concurrency stages, an open loop's max in flight) than workers, which
// would leave a worker nothing to send.
func (s Segment) Of(m Model) (Model, error) {
	if err := errors.Join(m.Validate(), s.Validate()); err != nil {
		return nil, err
	}
	w := s.Workers()
	if w == 1 {
		return m, nil
	}
	if err := splittable(m, w); err != nil {
		return nil, err
	}
	return Segmented{Base: m, Seg: s}, nil
}

// MaxSegments is how many workers m can be split over: one connection
// each at least (a closed loop's connections, the peak of concurrency
// stages, an open loop's max in flight).
func MaxSegments(m Model) int {
	switch m.(type) {
	case Closed, ConcurrencyStages, Open, RateStages:
		return m.MaxWorkers()
	}
	return math.MaxInt
}

// splittable is the problem of a model whose connections are fewer than
// the workers.
func splittable(m Model, workers int) error {
	var field, what string
	switch m.(type) {
	case Closed:
		field, what = "Connections", "a closed loop of %d connections"
	case ConcurrencyStages:
		field, what = "Stages", "concurrency stages peaking at %d connections"
	case Open, RateStages:
		field, what = "MaxInFlight", "an open loop of at most %d in flight"
	default:
		return nil
	}
	n := MaxSegments(m)
	if n >= workers {
		return nil
	}
	return problem(field, n, what+" cannot be split over %d loadgen workers: each needs at least 1 connection (give at least %d, or fewer workers)", n, workers, workers)
}

// Segmented is Seg's share of Base (Segment.Of builds it validated).
type Segmented struct {
	Base Model
	Seg  Segment
}

var _ Model = Segmented{}

// Name implements Model: the base's mode.
func (m Segmented) Name() string { return m.Base.Name() }

// Validate implements Model.
func (m Segmented) Validate() error {
	if err := errors.Join(m.Base.Validate(), m.Seg.Validate()); err != nil {
		return err
	}
	return splittable(m.Base, m.Seg.Workers())
}

// Window implements Model: the base's.
func (m Segmented) Window() time.Duration { return m.Base.Window() }

// MaxWorkers implements Model: the segment's slots of the base's.
func (m Segmented) MaxWorkers() int { return m.Seg.Slots(m.Base.MaxWorkers()) }

// Pacer implements Model: the base's schedule, every Count-th request from
// Index on.
func (m Segmented) Pacer() Pacer {
	p := m.Base.Pacer()
	if p == nil {
		return nil
	}
	return StripedPacer{Base: p, Seg: m.Seg}
}

// Active implements Model: the segment's slots of the base's active
// connections.
func (m Segmented) Active() func(time.Duration) int {
	a := m.Base.Active()
	if a == nil {
		return nil
	}
	return func(t time.Duration) int { return m.Seg.Slots(a(t)) }
}

// Warmup implements Model: the segment's share of the base's warm-up.
func (m Segmented) Warmup(d time.Duration) Model {
	return Segmented{Base: m.Base.Warmup(d), Seg: m.Seg}
}

// Share implements Model: the segment's share of the base's share.
func (m Segmented) Share(f float64) Model { return Segmented{Base: m.Base.Share(f), Seg: m.Seg} }

// Streams implements Model: as it is (a segment of a fleet's load keeps its
// connections).
func (m Segmented) Streams(int) Model { return m }

// Summary implements Model: the segment's connections (or max in flight)
// and its share of the rate.
func (m Segmented) Summary() (int, float64) {
	c, r := m.Base.Summary()
	if c == 0 && m.Base.Pacer() != nil { // an open loop's default cap
		c = m.Base.MaxWorkers()
	}
	return m.Seg.Slots(c), r / float64(m.Seg.Workers())
}

func (m Segmented) String() string { return fmt.Sprintf("%s of %s", m.Seg, m.Base) }

// StripedPacer is Seg's requests of Base's schedule: its request n is
// Base's request n*Count+Index, due when Base has it due.
type StripedPacer struct {
	Base Pacer
	Seg  Segment
}

var _ Pacer = StripedPacer{}

// Due implements Pacer.
func (p StripedPacer) Due(n uint64) (time.Duration, bool) {
	return p.Base.Due(n*uint64(p.Seg.Workers()) + uint64(p.Seg.Index))
}

// Rate implements Pacer: the segment's share of Base's rate.
func (p StripedPacer) Rate(t time.Duration) float64 { return p.Base.Rate(t) / float64(p.Seg.Workers()) }
