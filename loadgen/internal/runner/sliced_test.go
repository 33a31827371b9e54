package runner

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
)

// TestSlicerParts: a request counts for the slice it was sent after the
// guard of and answered in; the slices alternate ABBA from the pair's
// first arm; an arm's cell sums its own slices only and its goodput is
// its typical slice's.
func TestSlicerParts(t *testing.T) {
	t.Parallel()
	st := time.Unix(1000, 0)
	s := &slicer{slice: time.Second, guard: 100 * time.Millisecond, n: 8, first: 1, from: make([]atomic.Int64, 8),
		at: make([]time.Time, 8), measured: make([]time.Duration, 8), cpuUsed: make([]time.Duration, 8)}
	if got := s.Part(st.Add(500*time.Millisecond), st.Add(600*time.Millisecond)); got != -1 {
		t.Errorf("before the window began: part %d, want -1", got)
	}
	s.start.Store(st.UnixNano())
	for k := range 8 {
		s.from[k].Store(st.Add(time.Duration(k)*time.Second + 100*time.Millisecond).UnixNano())
	}
	at := func(ms int) time.Time { return st.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		sent, done, want int
	}{
		{50, 60, -1},     // in slice 0's guard
		{150, 160, 0},    // slice 0
		{990, 1010, -1},  // straddles the switch
		{1200, 1999, 1},  // slice 1
		{7500, 7600, 7},  // the last slice
		{8100, 8200, -1}, // after the window
		{-100, 200, -1},  // before it
	} {
		if got := s.Part(at(tc.sent), at(tc.done)); got != tc.want {
			t.Errorf("sent %d ms, done %d ms: part %d, want %d", tc.sent, tc.done, got, tc.want)
		}
	}
	var arms []int
	for k := range 8 {
		arms = append(arms, s.Group(k))
	}
	if want := []int{1, 0, 0, 1, 1, 0, 0, 1}; !slices.Equal(arms, want) {
		t.Errorf("arms by slice %v, want %v (ABBA, the candidate first)", arms, want)
	}

	// Slice k answered 1000·(k+1) requests in 0.9 s; slice 5 (an arm-0
	// slice) is disturbed.
	res := &attack.Result{}
	for k := range 8 {
		n := int64(1000 * (k + 1))
		if k == 5 {
			n = 10
		}
		res.Parts = append(res.Parts, attack.Part{Requests: n, Codes: map[int]int64{200: n}})
		s.at[k], s.measured[k], s.cpuUsed[k] = at(k*1000+100), 900*time.Millisecond, 450*time.Millisecond
	}
	c := plan.Cell{Key: cellid.NewArm("traefik", "fast", "simple", "4s", "", 1), Duration: plan.Duration(4 * time.Second)}
	mc := s.armCell(manifest.Cell{Codes: map[string]int64{}, Expected: []string{"2xx"}}, c, res, 0)
	if mc.Requests != 2000+3000+10+7000 || mc.Codes["200"] != mc.Requests || mc.Slices.Count != 4 {
		t.Errorf("arm 0: requests %d, codes %v, slices %d", mc.Requests, mc.Codes, mc.Slices.Count)
	}
	if got, want := mc.Slices.MeasuredS, 3.6; math.Abs(got-want) > 1e-9 {
		t.Errorf("measured %g s, want %g", got, want)
	}
	// The median of 2000, 3000, 10 and 7000 per 0.9 s: (2000+3000)/2/0.9.
	if got, want := mc.Slices.Typical(manifest.Slice.Goodput), 2500/0.9; math.Abs(got-want) > 1e-6 {
		t.Errorf("typical goodput %g, want %g", got, want)
	}
	if got, want := gatedValue("goodput_rps", &mc), 2500/0.9; math.Abs(got-want) > 1e-6 {
		t.Errorf("gated goodput %g, want %g", got, want)
	}
}
