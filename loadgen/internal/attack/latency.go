package attack

import "proxybench/internal/manifest"

// Latency returns the exact percentiles of the window's responses (late
// ones included), in seconds.
func (r *Result) Latency() manifest.Latency {
	h := r.Hist
	if h == nil || h.TotalCount() == 0 {
		return manifest.Latency{}
	}
	s := func(us int64) float64 { return float64(us) / 1e6 }
	return manifest.Latency{
		Count:  h.TotalCount(),
		Min:    s(h.Min()),
		Mean:   h.Mean() / 1e6,
		Stddev: h.StdDev() / 1e6,
		P50:    s(h.ValueAtQuantile(50)),
		P90:    s(h.ValueAtQuantile(90)),
		P95:    s(h.ValueAtQuantile(95)),
		P99:    s(h.ValueAtQuantile(99)),
		P999:   s(h.ValueAtQuantile(99.9)),
		P9999:  s(h.ValueAtQuantile(99.99)),
		Max:    s(h.Max()),
	}
}

// Window returns the planned measured duration, End - Start.
func (r *Result) Window() float64 { return r.End.Sub(r.Start).Seconds() }

// RPS is the requests completed inside the window (with or without a
// status) per second of the planned window; late completions are not in it.
func (r *Result) RPS() float64 {
	w := r.Window()
	if w <= 0 {
		return 0
	}
	return float64(r.Requests+r.Errors) / w
}
