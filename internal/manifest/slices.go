package manifest

import (
	"math"
	"slices"
	"time"

	"proxybench/internal/decide"
	"proxybench/internal/stats"
)

// Slices is how a sliced duet measured one arm: its pair's window
// alternates the two arms every SliceS seconds in ABBA order; after each
// switch a guard of GuardS seconds is left out; a request counts for the
// slice it was sent and answered in. MeasuredS is this arm's time counted
// (its slices less their guards): rates are per MeasuredS.
type Slices struct {
	SliceS    float64 `json:"slice_seconds"`
	GuardS    float64 `json:"guard_seconds"`
	Count     int     `json:"count"` // this arm's slices
	MeasuredS float64 `json:"measured_seconds"`
	// SwitchMaxS is the slowest switch between the arms (the Docker API
	// call that set the quota), which the guard must cover.
	SwitchMaxS float64 `json:"switch_max_seconds"`
	// Each is this arm's slices in the order they ran.
	Each []Slice `json:"each"`
}

// Slice is one slice of a sliced duet's arm: what was counted in it.
type Slice struct {
	At        time.Time `json:"at"`         // its counted part's start
	MeasuredS float64   `json:"measured_s"` // its counted part's length
	Requests  int64     `json:"requests"`   // with an HTTP status
	Errors    int64     `json:"errors"`
	Good      int64     `json:"good"`                  // with a status the scenario expects
	CPUS      *float64  `json:"proxy_cpu_s,omitempty"` // the proxy's cgroup CPU over it
}

// Typical is an arm's value in its typical slice: the median over its
// slices of f (NaN where f is unknown), NaN when no slice has one. A
// sliced duet's goodput and CPU per request are its arms' typical
// slices': a host's disturbance of a second or two, which lands on one
// arm's slice, moves the median of an arm's slices far less than their
// sum, and the arms' medians stay exchangeable, so an A/A pair is still
// unbiased.
func (s *Slices) Typical(f func(Slice) float64) float64 {
	return stats.Median(slices.DeleteFunc(s.Values(f), func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }))
}

// Values is f of each of the arm's slices in the order they ran (NaN
// where f is unknown).
func (s *Slices) Values(f func(Slice) float64) []float64 {
	out := make([]float64, len(s.Each))
	for i, e := range s.Each {
		out[i] = f(e)
	}
	return out
}

// SliceMetrics are the metrics a sliced arm is measured by in every
// slice, by their names in package decide: the ones a sliced pair is
// compared on slice by slice (PairRatio).
var SliceMetrics = map[string]func(Slice) float64{
	decide.Goodput:       Slice.Goodput,
	decide.CPUPerRequest: Slice.CPUPerRequest,
}

// PairRatio is the log ratio of metric name from arm a to arm b of one
// sliced pair, slice by slice (decide.SliceRatio); NaN unless both arms
// were sliced and name is measured per slice.
func PairRatio(name string, a, b *Slices) float64 {
	f := SliceMetrics[name]
	if f == nil || a == nil || b == nil {
		return math.NaN()
	}
	return decide.SliceRatio(a.Values(f), b.Values(f))
}

// Goodput is a slice's responses with an expected status per second.
func (e Slice) Goodput() float64 {
	if e.MeasuredS <= 0 {
		return math.NaN()
	}
	return float64(e.Good) / e.MeasuredS
}

// CPUPerRequest is the proxy's CPU per response of a slice.
func (e Slice) CPUPerRequest() float64 {
	if e.CPUS == nil || e.Requests <= 0 {
		return math.NaN()
	}
	return *e.CPUS / float64(e.Requests)
}

// Seconds is what a cell's rates are per: an arm of a sliced duet its
// measured slices, any other cell its planned window.
func (c *Cell) Seconds() float64 {
	if c.Slices != nil {
		return c.Slices.MeasuredS
	}
	return c.DurationS
}
