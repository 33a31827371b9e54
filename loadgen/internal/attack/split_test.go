package attack

import (
	"testing"
	"time"

	"proxybench/loadgen/internal/load"
)

// every puts each completion in part 0; alternate in the part of the
// 50 ms slice it was sent in, unless it was answered in another, and the
// even and the odd slices' latencies in two groups.
type every struct{}

func (every) Parts() int              { return 1 }
func (every) Groups() int             { return 1 }
func (every) Part(_, _ time.Time) int { return 0 }
func (every) Group(int) int           { return 0 }

type alternate struct{ start time.Time }

func (alternate) Parts() int      { return 8 }
func (alternate) Groups() int     { return 2 }
func (alternate) Group(p int) int { return p % 2 }
func (a alternate) Part(sent, done time.Time) int {
	k, j := sent.Sub(a.start)/(50*time.Millisecond), done.Sub(a.start)/(50*time.Millisecond)
	if k != j || sent.Before(a.start) {
		return -1
	}
	return int(k)
}

// TestSplitAccountsExactly: a splitter that takes every completion
// reproduces the window's own account exactly; one that alternates
// gives each part its own completions and leaves out those that
// straddle a switch, never counting one twice.
func TestSplitAccountsExactly(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	a, _ := newAttacker(t)
	res := mustRun(t, a, Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 4, Duration: 300 * time.Millisecond}, Split: every{}})
	if len(res.Parts) != 1 {
		t.Fatalf("parts %d, want 1", len(res.Parts))
	}
	p := res.Parts[0]
	if p.Requests != res.Requests || p.Errors != res.Errors || p.Codes[200] != res.Codes[200] {
		t.Errorf("part %d requests %d errors %v codes, window %d %d %v", p.Requests, p.Errors, p.Codes, res.Requests, res.Errors, res.Codes)
	}
	if n := res.GroupHists[0].TotalCount(); n != res.Requests { // the window's histogram also holds the late ones
		t.Errorf("group histogram %d, want %d", n, res.Requests)
	}

	start := time.Now().Add(100 * time.Millisecond)
	alt := alternate{start: start}
	res = mustRun(t, a, Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 4, Duration: 400 * time.Millisecond}, StartAt: start, Split: alt})
	if len(res.Parts) != 8 || len(res.GroupHists) != 2 {
		t.Fatalf("parts %d, groups %d, want 8 and 2", len(res.Parts), len(res.GroupHists))
	}
	var sum, group [2]int64
	empty := 0
	for i, p := range res.Parts {
		if p.Codes[200] != p.Requests {
			t.Errorf("part %d: codes %v, requests %d", i, p.Codes, p.Requests)
		}
		if p.Requests == 0 {
			empty++
		}
		sum[i%2] += p.Requests
	}
	// A part is 50 ms: a host's stall that long (seen with the unit tests
	// of other packages beside it) leaves one empty, never more than two.
	if empty > 2 {
		t.Errorf("%d of 8 parts took no completion", empty)
	}
	for g := range group {
		if n := res.GroupHists[g].TotalCount(); n != sum[g] {
			t.Errorf("group %d: histogram %d, its parts' requests %d", g, n, sum[g])
		}
	}
	if sum[0]+sum[1] > res.Requests {
		t.Errorf("parts %d + %d of the window's %d", sum[0], sum[1], res.Requests)
	}
}
