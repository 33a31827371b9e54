// Package interp owns reading a sampled counter at an instant between its
// samples: the linear interpolation the truth tests use to compare two
// readers of one counter over exactly the same interval (a cgroup read by
// a test, cAdvisor's samples in Prometheus, the engine's stats) when
// neither sampled at the interval's edges.
package interp

import "time"

// At is the value at x interpolated linearly between the samples (ts[i],
// vs[i]) around it, ts ascending, and gap the time between those two
// samples (how coarse the reading is there). ok is false when x is outside
// the samples or they are fewer than two.
func At(ts []time.Time, vs []float64, x time.Time) (v float64, gap time.Duration, ok bool) {
	for i := 1; i < len(ts) && i < len(vs); i++ {
		a, b := ts[i-1], ts[i]
		if x.Before(a) || x.After(b) {
			continue
		}
		gap = b.Sub(a)
		if gap <= 0 {
			return vs[i], 0, true
		}
		return vs[i-1] + (vs[i]-vs[i-1])*float64(x.Sub(a))/float64(gap), gap, true
	}
	return 0, 0, false
}
