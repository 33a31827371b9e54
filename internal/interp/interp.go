// Package interp owns sampling a counter and reading it at an instant
// between its samples: the linear interpolation the truth tests use to compare two
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

// Series is a counter's readings in time order (V[i] read at T[i]).
type Series struct {
	T []time.Time
	V []float64
}

// At is At over the series.
func (s Series) At(x time.Time) (v float64, gap time.Duration, ok bool) { return At(s.T, s.V, x) }

// Sample reads a counter every period from now until the returned stop is
// called, and stop gives the readings (a failed read is left out).
func Sample(read func() (float64, error), period time.Duration) (stop func() Series) {
	var s Series
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			if v, err := read(); err == nil {
				s.T, s.V = append(s.T, time.Now()), append(s.V, v)
			}
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() Series { close(quit); <-done; return s }
}
