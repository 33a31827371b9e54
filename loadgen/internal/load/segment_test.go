package load

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// segments are the n workers' shares of m.
func segments(t *testing.T, m Model, n int) []Model {
	t.Helper()
	out := make([]Model, n)
	for i := range n {
		s, err := Segment{Index: i, Count: n}.Of(m)
		if err != nil {
			t.Fatalf("segment %d of %d of %v: %v", i, n, m, err)
		}
		out[i] = s
	}
	return out
}

// Connections split as evenly as integers allow, and add up exactly.
func TestSegmentConnectionsAddUp(t *testing.T) {
	t.Parallel()
	for c := 1; c <= 120; c++ {
		for n := 1; n <= min(c, 17); n++ {
			sum, lo, hi := 0, c, 0
			for _, s := range segments(t, Closed{Connections: c, Duration: time.Second}, n) {
				k := s.MaxWorkers()
				sum += k
				lo, hi = min(lo, k), max(hi, k)
				if got, _ := s.Summary(); got != k {
					t.Fatalf("%d conns / %d: summary %d, max workers %d", c, n, got, k)
				}
			}
			if sum != c || hi-lo > 1 {
				t.Fatalf("%d connections over %d workers: sum %d, shares %d..%d", c, n, sum, lo, hi)
			}
		}
	}
}

// Every request of an open loop's schedule is exactly one worker's, due
// when the whole schedule has it due: the union of the workers' schedules
// is the schedule, and the workers take turns (no two send in the same
// phase).
func TestSegmentScheduleInterleavesExactly(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	models := []Model{
		Open{Rate: 1000, Duration: 2 * time.Second},
		Open{Rate: 997.3, MaxInFlight: 50, Duration: 1500 * time.Millisecond},
		Open{Rate: 3, MaxInFlight: 7, Duration: 5 * time.Second},
		RateStages{Stages: stages(1, 300, 0.5, 300, 1.3, 20)},
	}
	for range 4 {
		models = append(models, Open{Rate: 1 + rng.Float64()*5000, MaxInFlight: 20 + rng.IntN(100), Duration: time.Duration(1+rng.IntN(3000)) * time.Millisecond})
	}
	for _, m := range models {
		for _, n := range []int{1, 2, 3, 5, 7} {
			segs := segments(t, m, n)
			base := m.Pacer()
			total := CountDue(base, 0, m.Window())
			var sum int64
			for _, s := range segs {
				sum += CountDue(s.Pacer(), 0, s.Window())
			}
			if sum != total {
				t.Fatalf("%v over %d: workers' scheduled %d, the schedule's %d", m, n, sum, total)
			}
			next := make([]uint64, n) // each worker's next request
			for g := uint64(0); ; g++ {
				want, ok := base.Due(g)
				w := int(g % uint64(n))
				got, gok := segs[w].Pacer().Due(next[w])
				if ok != gok || (ok && got != want) {
					t.Fatalf("%v over %d: request %d is due %v %v, worker %d's request %d %v %v", m, n, g, want, ok, w, next[w], got, gok)
				}
				if !ok {
					break
				}
				next[w]++
			}
			var rate float64
			for _, s := range segs {
				rate += s.Pacer().Rate(m.Window() / 3)
			}
			if want := base.Rate(m.Window() / 3); math.Abs(rate-want) > 1e-9*want {
				t.Errorf("%v over %d: rates add up to %v, want %v", m, n, rate, want)
			}
		}
	}
	// Worker 1's first request falls between worker 0's first two: their
	// schedules interleave, they are not copies in the same phase.
	segs := segments(t, Open{Rate: 100, Duration: time.Second}, 2)
	a0, _ := segs[0].Pacer().Due(0)
	a1, _ := segs[0].Pacer().Due(1)
	b0, _ := segs[1].Pacer().Due(0)
	if !(a0 < b0 && b0 < a1) {
		t.Errorf("worker 1's first due %v is not between worker 0's %v and %v", b0, a0, a1)
	}
}

// Concurrency stages: at every instant the workers' active connections add
// up to the ramp's.
func TestSegmentStagesScale(t *testing.T) {
	t.Parallel()
	m := ConcurrencyStages{Stages: stages(1, 10, 2, 37, 1, 3)}
	for _, n := range []int{2, 3, 4} {
		segs := segments(t, m, n)
		peak := 0
		for _, s := range segs {
			peak += s.MaxWorkers()
			if s.Window() != m.Window() {
				t.Fatalf("window %v, want %v", s.Window(), m.Window())
			}
		}
		if peak != m.MaxWorkers() {
			t.Errorf("over %d: peaks add up to %d, want %d", n, peak, m.MaxWorkers())
		}
		for ms := 0; ms < int(m.Window()/time.Millisecond); ms += 7 {
			at := time.Duration(ms) * time.Millisecond
			sum := 0
			for _, s := range segs {
				sum += s.Active()(at)
			}
			if want := m.Active()(at); sum != want {
				t.Fatalf("over %d at %v: %d active, want %d", n, at, sum, want)
			}
		}
	}
	// A warm-up of the segments is the segments of the warm-up.
	w := segments(t, Open{Rate: 90, Duration: time.Second}, 3)
	var due int64
	for _, s := range w {
		due += CountDue(s.Warmup(2*time.Second).Pacer(), 0, 2*time.Second)
	}
	if due != 180 {
		t.Errorf("warm-ups schedule %d, want 180", due)
	}
}

func TestSegmentValidates(t *testing.T) {
	t.Parallel()
	closed := Closed{Connections: 2, Duration: time.Second}
	for _, tc := range []struct {
		seg  Segment
		m    Model
		want string
	}{
		{Segment{Index: 0, Count: 3}, closed, "Connections 2: a closed loop of 2 connections cannot be split over 3 loadgen workers"},
		{Segment{Index: 1, Count: 4}, Open{Rate: 10, MaxInFlight: 3, Duration: time.Second}, "at most 3 in flight cannot be split over 4 loadgen workers"},
		{Segment{Index: 0, Count: 5}, ConcurrencyStages{Stages: stages(1, 4)}, "peaking at 4 connections cannot be split over 5"},
		{Segment{Index: 3, Count: 3}, closed, "Segment 3: a worker index must be in 0..2 for 3 workers"},
		{Segment{Index: 0, Count: -1}, closed, "Segment -1: the number of loadgen workers must be at least 1"},
		{Segment{Index: 0, Count: 2}, Closed{Duration: time.Second}, "Connections 0: closed loop needs at least 1 connection"},
	} {
		_, err := tc.seg.Of(tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v of %v: %v, want %q", tc.seg, tc.m, err, tc.want)
		}
	}
	for _, tc := range []struct {
		m    Model
		want int
	}{{closed, 2}, {Open{Rate: 1, Duration: time.Second}, DefaultMaxInFlight},
		{RateStages{Stages: stages(1, 5), MaxInFlight: 7}, 7}, {ConcurrencyStages{Stages: stages(1, 3.5)}, 4}} {
		if got := MaxSegments(tc.m); got != tc.want {
			t.Errorf("MaxSegments(%v) = %d, want %d", tc.m, got, tc.want)
		}
	}
	if m, err := (Segment{}).Of(closed); err != nil || m != Model(closed) {
		t.Errorf("one worker: %v, %v; want the model itself", m, err)
	}
	if got := (Segmented{Base: Open{Rate: 30, Duration: time.Second}, Seg: Segment{Index: 2, Count: 3}}).String(); got != "worker 2 of 3 of open loop at 30 requests/s, up to 10000 in flight" {
		t.Errorf("String %q", got)
	}
}

// A model travels as its settings and comes back the same.
func TestSettingsOfRoundTrips(t *testing.T) {
	t.Parallel()
	for _, m := range []Model{
		Closed{Connections: 5, Duration: time.Second},
		Open{Rate: 12.5, MaxInFlight: 3, Duration: 2 * time.Second},
		RateStages{Stages: stages(1, 10, 2, 0), MaxInFlight: 9},
		ConcurrencyStages{Stages: stages(1, 4)},
	} {
		s, err := SettingsOf(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := s.Model()
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Errorf("%v -> %+v -> %v, %v", m, s, back, err)
		}
	}
	if _, err := SettingsOf(Segmented{Base: Closed{Connections: 2, Duration: time.Second}, Seg: Segment{Count: 2}}); err == nil {
		t.Error("a segmented model has settings")
	}
}
