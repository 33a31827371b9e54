package cputime

import (
	"testing"
	"time"
)

func TestStealShare(t *testing.T) {
	for _, tc := range []struct {
		steal, wall time.Duration
		n           int
		want        float64
	}{
		{300 * time.Millisecond, time.Second, 1, 0.3},
		{300 * time.Millisecond, time.Second, 2, 0.15},
		{0, time.Second, 2, 0},
		{time.Second, 0, 2, 0},
		{time.Second, time.Second, 0, 0},
	} {
		if got := StealShare(tc.steal, tc.wall, tc.n); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("StealShare(%v, %v, %d) = %v, want %v", tc.steal, tc.wall, tc.n, got, tc.want)
		}
	}
}

// TestStealWatchReadsTheHost watches this host's real /proc/stat over
// 1.3 s: a share between 0 and 1, no error.
func TestStealWatchReadsTheHost(t *testing.T) {
	w := WatchSteal(nil)
	time.Sleep(1300 * time.Millisecond)
	worst, err := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if worst < 0 || worst > 1 {
		t.Errorf("worst steal share %v, want within [0, 1]", worst)
	}
	if _, err := w.Stop(); err != nil {
		t.Errorf("a second stop: %v", err)
	}
}
