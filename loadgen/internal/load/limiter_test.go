package load

import (
	"sync"
	"testing"
	"time"
)

// Reserved slots are 1/rate apart whatever the number of callers, and an
// unused stretch gives no burst credit.
func TestLimiterSpacing(t *testing.T) {
	t.Parallel()
	origin := time.Unix(1000, 0)
	l := NewLimiter(1000, origin) // a slot per ms
	var mu sync.Mutex
	var slots []time.Time
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				s := l.Reserve(origin)
				mu.Lock()
				slots = append(slots, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	seen := map[time.Duration]bool{}
	for _, s := range slots {
		off := s.Sub(origin)
		if off%time.Millisecond != 0 || off < 0 || off >= 800*time.Millisecond || seen[off] {
			t.Fatalf("slot %v: want distinct whole ms in [0, 800ms)", off)
		}
		seen[off] = true
	}
	// 10 s of silence, then a burst: still one slot per ms from now on.
	now := origin.Add(10 * time.Second)
	for i := range 5 {
		if got := l.Reserve(now).Sub(now); got != time.Duration(i)*time.Millisecond {
			t.Fatalf("slot %d after a pause is %v after now, want %d ms", i, got, i)
		}
	}
}

func TestLimiterOff(t *testing.T) {
	t.Parallel()
	var l *Limiter = NewLimiter(0, time.Now())
	if l != nil {
		t.Fatal("rate 0 is no cap (nil)")
	}
	now := time.Now()
	if got := l.Reserve(now); !got.Equal(now) {
		t.Fatalf("no cap holds nothing: %v", got.Sub(now))
	}
	for _, bad := range []float64{-1} {
		if CheckMaxRate(bad) == nil {
			t.Errorf("max rate %v accepted", bad)
		}
	}
	if CheckMaxRate(0) != nil || CheckMaxRate(5000) != nil {
		t.Error("0 and 5000 are valid caps")
	}
}
