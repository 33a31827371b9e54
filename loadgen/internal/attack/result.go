package attack

import "time"

// Quantile is the exact latency at quantile q (0..100) of the window's
// responses (late ones included), to the histogram's microsecond; 0 when
// there are none.
func (r *Result) Quantile(q float64) time.Duration {
	if r.Hist == nil || r.Hist.TotalCount() == 0 {
		return 0
	}
	return time.Duration(r.Hist.ValueAtQuantile(q)) * time.Microsecond
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
