package load

import (
	"math"
	"time"
)

// Pacer decides when each request of an open-loop attack is due. Due is pure
// (no state, safe for concurrent use): workers claim request numbers from a
// shared counter and each asks when its request is due, so the schedule is
// absolute and never drifts with how late anyone woke up.
type Pacer interface {
	// Due returns the offset from the start of the attack at which request
	// n (0-based) is due, and false when the attack sends no request n.
	Due(n uint64) (at time.Duration, ok bool)
	// Rate is the offered rate at offset t, in requests per second.
	Rate(t time.Duration) float64
}

var (
	_ Pacer = ConstantPacer{}
	_ Pacer = (*LinearPacer)(nil)
)

// ConstantPacer offers Freq requests per second for Duration.
type ConstantPacer struct {
	Freq     float64
	Duration time.Duration
}

// Due implements Pacer.
func (p ConstantPacer) Due(n uint64) (time.Duration, bool) {
	if p.Freq <= 0 {
		return 0, false
	}
	at := time.Duration(float64(n) / p.Freq * float64(time.Second))
	return at, at < p.Duration
}

// Rate implements Pacer.
func (p ConstantPacer) Rate(t time.Duration) float64 {
	if t < 0 || t >= p.Duration {
		return 0
	}
	return p.Freq
}

// LinearPacer ramps the rate linearly within each stage from the previous
// target (0 before the first stage) to the stage's Target, k6 style. The
// n-th request is due when the integral of the rate reaches n.
type LinearPacer struct {
	stages []Stage
	offset []time.Duration // start of each stage
	cum    []float64       // requests due before each stage
}

// NewLinearPacer builds the pacer of stages.
func NewLinearPacer(stages []Stage) *LinearPacer {
	p := &LinearPacer{stages: stages}
	var off time.Duration
	var cum float64
	prev := 0.0
	for _, s := range stages {
		p.offset = append(p.offset, off)
		p.cum = append(p.cum, cum)
		off += s.Duration
		cum += (prev + s.Target) / 2 * s.Duration.Seconds()
		prev = s.Target
	}
	p.offset = append(p.offset, off)
	p.cum = append(p.cum, cum)
	return p
}

// Due implements Pacer.
func (p *LinearPacer) Due(n uint64) (time.Duration, bool) {
	x := float64(n)
	last := len(p.stages)
	if x >= p.cum[last] {
		return 0, false
	}
	prev := 0.0
	for i, s := range p.stages {
		if x >= p.cum[i+1] {
			prev = s.Target
			continue
		}
		// Solve r0*t + (r1-r0)/(2D)*t^2 = x - cum[i] for t in [0, D]; the
		// form 2x/(b+sqrt(b^2+4ax)) stays exact when a -> 0.
		dx := x - p.cum[i]
		if dx <= 0 {
			return p.offset[i], true
		}
		d := s.Duration.Seconds()
		a := (s.Target - prev) / (2 * d)
		b := prev
		disc := b*b + 4*a*dx
		if disc < 0 {
			disc = 0
		}
		t := 2 * dx / (b + math.Sqrt(disc))
		return p.offset[i] + time.Duration(t*float64(time.Second)), true
	}
	return 0, false
}

// Rate implements Pacer.
func (p *LinearPacer) Rate(t time.Duration) float64 { return stageValue(0, p.stages, t) }

// CountDue counts the requests p has due in [from, to), by binary search:
// Due is monotonic.
func CountDue(p Pacer, from, to time.Duration) int64 {
	if to <= from {
		return 0
	}
	first := searchDue(p, from)
	last := searchDue(p, to)
	return int64(last - first)
}

// searchDue returns the first n whose due offset is >= t (or the total).
func searchDue(p Pacer, t time.Duration) uint64 {
	lo, hi := uint64(0), uint64(1)
	for {
		at, ok := p.Due(hi)
		if !ok || at >= t {
			break
		}
		lo, hi = hi, hi*2
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if at, ok := p.Due(mid); ok && at < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
