package manifest

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

// LatencyOf is the exact percentiles of h, a histogram of microseconds
// (the loadgen's), in seconds; zero when h holds nothing.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	s := func(us int64) float64 { return float64(us) / 1e6 }
	return Latency{
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
