package load

import (
	"math"
	"testing"
	"time"
)

func TestConstantPacer(t *testing.T) {
	t.Parallel()
	p := ConstantPacer{Freq: 2000, Duration: 3 * time.Second}
	if at, ok := p.Due(0); !ok || at != 0 {
		t.Errorf("first due %v %v", at, ok)
	}
	if at, _ := p.Due(1000); at != 500*time.Millisecond {
		t.Errorf("due(1000) %v, want 500ms", at)
	}
	if _, ok := p.Due(5999); !ok {
		t.Error("request 5999 is due at 2.9995 s")
	}
	if _, ok := p.Due(6000); ok {
		t.Error("request 6000 would be due at the end")
	}
	if got := CountDue(p, time.Second, 2*time.Second); got != 2000 {
		t.Errorf("due in [1s, 2s): %d", got)
	}
}

// The n-th request of a linear ramp is due when the integral of the rate
// reaches n: check counts per interval against the integral and that due
// times never go backwards.
func TestLinearPacer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stages []Stage
	}{
		{"ramp up", []Stage{{2 * time.Second, 1000}}},
		{"ramp up, hold, down", []Stage{{time.Second, 500}, {time.Second, 500}, {2 * time.Second, 0}}},
		{"from a start rate", []Stage{{time.Second, 100}, {500 * time.Millisecond, 3000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := NewLinearPacer(tc.stages)
			integral := func(t time.Duration) float64 { // trapezoids of 1 ms
				var sum float64
				for x := time.Duration(0); x < t; x += time.Millisecond {
					sum += (p.Rate(x) + p.Rate(x+time.Millisecond)) / 2 * 0.001
				}
				return sum
			}
			total := sumStages(tc.stages)
			for at := time.Duration(0); at <= total; at += 250 * time.Millisecond {
				want := integral(at)
				got := float64(CountDue(p, 0, at))
				if math.Abs(got-want) > 2 {
					t.Errorf("due before %v: %v, integral %.1f", at, got, want)
				}
			}
			var prev time.Duration
			for n := uint64(0); ; n++ {
				at, ok := p.Due(n)
				if !ok {
					break
				}
				if at < prev || at >= total {
					t.Fatalf("due(%d) = %v after %v (total %v)", n, at, prev, total)
				}
				prev = at
			}
		})
	}
}
