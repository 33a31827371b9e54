package interp

import (
	"testing"
	"time"
)

func TestAt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ts := []time.Time{t0, t0.Add(2 * time.Second), t0.Add(3 * time.Second), t0.Add(3 * time.Second)}
	vs := []float64{10, 14, 20, 20}
	for _, c := range []struct {
		at    time.Duration
		want  float64
		gap   time.Duration
		found bool
	}{
		{0, 10, 2 * time.Second, true},
		{500 * time.Millisecond, 11, 2 * time.Second, true},
		{2 * time.Second, 14, 2 * time.Second, true},
		{2500 * time.Millisecond, 17, time.Second, true},
		{3 * time.Second, 20, time.Second, true},
		{-time.Millisecond, 0, 0, false},
		{3001 * time.Millisecond, 0, 0, false},
	} {
		v, gap, ok := At(ts, vs, t0.Add(c.at))
		if v != c.want || gap != c.gap || ok != c.found {
			t.Errorf("At(+%v) = %v, %v, %v; want %v, %v, %v", c.at, v, gap, ok, c.want, c.gap, c.found)
		}
	}
	if _, _, ok := At(ts[:1], vs[:1], t0); ok {
		t.Error("one sample: want not ok")
	}
}

func TestSample(t *testing.T) {
	n := 0.0
	stop := Sample(func() (float64, error) { n++; return n, nil }, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	s := stop()
	if len(s.T) < 2 || len(s.T) != len(s.V) || s.V[0] != 1 || s.V[len(s.V)-1] != float64(len(s.V)) {
		t.Fatalf("%d times, %d values %v: want every reading in order", len(s.T), len(s.V), s.V)
	}
	if v, _, ok := s.At(s.T[0]); !ok || v != 1 {
		t.Errorf("At(first reading) = %v, %v", v, ok)
	}
}
