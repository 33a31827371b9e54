// Package load owns the load models: what an attack offers the target over
// time. Each model is a type of its own that validates itself (closed loop,
// open loop, rate stages, concurrency stages), modelled on k6's executors:
// the engine of package attack asks a Model for its window, its workers and
// its schedule (a Pacer for the open loops, the active workers over time for
// ramping concurrency) and never switches on a mode; the plan and
// `loadgen attack` parse their settings into a Model through Settings, and a
// warm-up is the model's own Warmup load.
package load

import (
	"fmt"
	"time"
)

// Model is one load model.
type Model interface {
	// Name is the mode as the manifest, the plan and the labels write it:
	// closed, open or stages.
	Name() string
	// Validate reports every problem at once, each a *Problem naming the
	// model's field.
	Validate() error
	// Window is the measured duration.
	Window() time.Duration
	// MaxWorkers is how many workers the engine may run: the connections
	// of a closed loop (the peak of concurrency stages), the most requests
	// in flight of an open loop.
	MaxWorkers() int
	// Pacer is when each request of an open loop is due, offsets from the
	// start over Window; nil for a closed loop.
	Pacer() Pacer
	// Active is how many workers of a closed loop whose pool varies send at
	// offset t; nil when all MaxWorkers always do.
	Active() func(t time.Duration) int
	// Warmup is the load of a warm-up of d before the window: the same load
	// held for d, or for stages a ramp from 0 to the first stage's target.
	Warmup(d time.Duration) Model
	// Share is the share f (0..1] of this load, for one variant of a
	// traffic mix: of the rate, of the connections (at least one each).
	Share(f float64) Model
	// Streams is this load of requests in flight as connections that carry
	// n concurrent streams each (HTTP/2, HTTP/3): a closed loop's
	// connections and an open loop's most in flight divided by n (at least
	// one); stages keep theirs (each connection carries n streams).
	Streams(n int) Model
	// Summary is the concurrency and rate a cell or a summary shows: the
	// connections (closed loop, the peak of concurrency stages) or the most
	// in flight (open loop), and the offered rate (open loop; rate stages:
	// the schedule's average over the window; 0 for a closed loop).
	Summary() (concurrency int, rate float64)
	// String says what is sent, for a summary or a log line.
	String() string
}

// The models' names (Model.Name), the modes of the plan and of -mode.
const (
	NameClosed = "closed"
	NameOpen   = "open"
	NameStages = "stages"
)

// Stage kinds: what stages ramp.
const (
	KindRate        = "rate"        // the offered rate: an open loop
	KindConcurrency = "concurrency" // the active connections: a closed loop
)

// DefaultMaxInFlight caps an open loop's requests in flight when none is given.
const DefaultMaxInFlight = 10000

// Problem is one thing wrong with a model's settings: which field (and
// which stage, for a stage's), its value and what a valid one is, so that a
// front end can name the setting in its own words.
type Problem struct {
	Field string // Connections, Rate, MaxInFlight, Duration, Stages, Stage, Target; Mode, StageKind for Settings
	Stage int    // the stage's index for Stage and Target, else -1
	Value any
	Need  string // what is wrong and what to do, e.g. "closed loop needs at least 1 connection"
}

func (p *Problem) Error() string {
	name := p.Field
	if p.Stage >= 0 {
		name = fmt.Sprintf("Stages[%d]", p.Stage)
		if p.Field == "Target" {
			name += " target"
		}
	}
	return fmt.Sprintf("%s %v: %s", name, p.Value, p.Need)
}

func problem(field string, value any, need string, a ...any) error {
	return &Problem{Field: field, Stage: -1, Value: value, Need: fmt.Sprintf(need, a...)}
}

// Problems lists the *Problem values of an error of Validate or
// Settings.Model.
func Problems(err error) []*Problem {
	var out []*Problem
	var walk func(error)
	walk = func(err error) {
		if p, ok := err.(*Problem); ok {
			out = append(out, p)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// Settings are the load settings as the plan and `loadgen attack` take
// them: a mode and flat numbers, parsed into a Model by Model.
type Settings struct {
	Mode        string        // closed, open or stages; "" = DefaultMode
	Concurrency int           // closed loop: connections; open loop and rate stages: max in flight (0 = DefaultMaxInFlight)
	Rate        float64       // open loop: requests/s
	Stages      []Stage       // stages
	StageKind   string        // stages: KindRate or KindConcurrency
	Duration    time.Duration // closed and open loop: the window (stages have their own)
}

// DefaultMode is the mode of settings that name none: stages when stages
// are given, else open when a rate is, else closed.
func DefaultMode(rate float64, stages int) string {
	switch {
	case stages > 0:
		return NameStages
	case rate > 0:
		return NameOpen
	}
	return NameClosed
}

func (s Settings) mode() string {
	if s.Mode == "" {
		return DefaultMode(s.Rate, len(s.Stages))
	}
	return s.Mode
}

// OpenLoop reports whether the settings ask for an open loop (open, or
// rate stages), where Concurrency caps what is in flight rather than sizing
// a pool.
func (s Settings) OpenLoop() bool {
	m := s.mode()
	return m == NameOpen || m == NameStages && s.StageKind == KindRate
}

// Model parses the settings into their model; it does not validate the
// model's numbers (Model.Validate does). Settings a mode does not use are
// ignored. An unknown mode or stage kind is a *Problem of field Mode or
// StageKind.
func (s Settings) Model() (Model, error) {
	switch m := s.mode(); m {
	case NameClosed:
		return Closed{Connections: s.Concurrency, Duration: s.Duration}, nil
	case NameOpen:
		return Open{Rate: s.Rate, MaxInFlight: s.Concurrency, Duration: s.Duration}, nil
	case NameStages:
		switch s.StageKind {
		case KindRate:
			return RateStages{Stages: s.Stages, MaxInFlight: s.Concurrency}, nil
		case KindConcurrency:
			return ConcurrencyStages{Stages: s.Stages}, nil
		}
		return nil, problem("StageKind", fmt.Sprintf("%q", s.StageKind), "use %s (open loop) or %s (closed loop)", KindRate, KindConcurrency)
	default:
		return nil, problem("Mode", fmt.Sprintf("%q", m), "use %s, %s or %s", NameClosed, NameOpen, NameStages)
	}
}

// SettingsOf is the settings Model parses into m: how a model is written
// down to travel (a loadgen worker receives its cell's load so). Only the
// four models of this package have settings; a Segmented model travels as
// its base and its Segment apart.
func SettingsOf(m Model) (Settings, error) {
	switch l := m.(type) {
	case Closed:
		return Settings{Mode: NameClosed, Concurrency: l.Connections, Duration: l.Duration}, nil
	case Open:
		return Settings{Mode: NameOpen, Concurrency: l.MaxInFlight, Rate: l.Rate, Duration: l.Duration}, nil
	case RateStages:
		return Settings{Mode: NameStages, StageKind: KindRate, Concurrency: l.MaxInFlight, Stages: l.Stages}, nil
	case ConcurrencyStages:
		return Settings{Mode: NameStages, StageKind: KindConcurrency, Stages: l.Stages}, nil
	}
	return Settings{}, fmt.Errorf("load model %T (%v) has no settings to send", m, m)
}

// maxInFlight is an open loop's cap: n, or the default for 0.
func maxInFlight(n int) int {
	if n == 0 {
		return DefaultMaxInFlight
	}
	return n
}

func checkMaxInFlight(n int) error {
	if n < 0 {
		return problem("MaxInFlight", n, "an open loop's max in flight must not be negative (0 = %d)", DefaultMaxInFlight)
	}
	return nil
}

func checkDuration(name string, d time.Duration) error {
	if d <= 0 {
		return problem("Duration", d, "%s needs a positive duration such as 10s", name)
	}
	return nil
}
