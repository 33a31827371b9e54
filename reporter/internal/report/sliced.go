package report

import (
	"math"

	"proxybench/internal/decide"
)

// Sliced is how an arm of a sliced duet was measured: Slices slices of
// SliceS seconds, MeasuredS of them counted after the guards; its goodput
// and the proxy's CPU per request in its typical slice (the median over
// its slices). PerSlice holds, by metric name, the value in each of its
// slices in the order they ran (manifest.SliceMetrics): a sliced pair is
// compared slice by slice (decide.SliceRatio).
type Sliced struct {
	Slices        int              `json:"slices"`
	SliceS        float64          `json:"slice_seconds"`
	MeasuredS     float64          `json:"measured_seconds"`
	GoodputRPS    Num              `json:"goodput_rps"`
	CPUPerRequest Num              `json:"proxy_cpu_seconds_per_request"`
	PerSlice      map[string][]Num `json:"per_slice,omitempty"`
}

// PairRatio is the log ratio of metric name from arm a to arm b of a
// sliced pair, slice by slice (decide.SliceRatio); NaN unless both were
// sliced with name measured per slice.
func PairRatio(name string, a, b *Sliced) float64 {
	if a == nil || b == nil || a.PerSlice[name] == nil || b.PerSlice[name] == nil {
		return math.NaN()
	}
	return decide.SliceRatio(floats(a.PerSlice[name]), floats(b.PerSlice[name]))
}

func floats(ns []Num) []float64 {
	out := make([]float64, len(ns))
	for i, n := range ns {
		out[i] = float64(n)
	}
	return out
}
