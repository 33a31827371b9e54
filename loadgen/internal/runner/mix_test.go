package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
)

func histOf(us ...int64) *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, 60_000_000, 3)
	for _, v := range us {
		h.RecordValue(v) //nolint:errcheck // in range
	}
	return h
}

func TestMergeResultsLateAndOpenLoop(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := &attack.Result{Start: t0, End: t0.Add(10 * time.Second), Requests: 90, Scheduled: 100, Sent: 95, Missed: 5, Capped: 7,
		Codes: map[int]int64{200: 90}, Late: 3, LateCodes: map[int]int64{200: 2}, LateReasons: map[string]int64{"timeout": 1},
		DrainEnd: t0.Add(11 * time.Second), LagP99: 2 * time.Millisecond, Hist: histOf(100, 200)}
	b := &attack.Result{Start: t0.Add(time.Millisecond), End: t0.Add(10*time.Second + time.Millisecond), Requests: 10, Scheduled: 10,
		Sent: 10, Codes: map[int]int64{401: 10}, Late: 1, LateCodes: map[int]int64{401: 1}, LateReasons: map[string]int64{},
		DrainEnd: t0.Add(12 * time.Second), LagP99: time.Millisecond, Hist: histOf(300)}
	m := mergeResults([]*attack.Result{a, nil, b})
	if m.Late != 4 || m.LateCodes[200] != 2 || m.LateCodes[401] != 1 || m.LateReasons["timeout"] != 1 {
		t.Errorf("late %d %v %v", m.Late, m.LateCodes, m.LateReasons)
	}
	if m.Missed != 5 || m.Capped != 7 || m.Scheduled != 110 || m.Sent != 105 || m.LagP99 != 2*time.Millisecond {
		t.Errorf("missed %d capped %d scheduled %d sent %d lag %v", m.Missed, m.Capped, m.Scheduled, m.Sent, m.LagP99)
	}
	if !m.DrainEnd.Equal(t0.Add(12*time.Second)) || !m.Start.Equal(t0) || !m.End.Equal(b.End) {
		t.Errorf("window %v .. %v, drain end %v", m.Start, m.End, m.DrainEnd)
	}
	if m.Hist.TotalCount() != 3 || a.Hist.TotalCount() != 2 {
		t.Errorf("merged histogram %d samples, the first variant's now %d (want 3 and its own 2)", m.Hist.TotalCount(), a.Hist.TotalCount())
	}
}

func TestFillCopiesLateAndOpenLoop(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res := &attack.Result{Start: t0, End: t0.Add(time.Second), Requests: 5, Codes: map[int]int64{200: 5},
		Late: 3, LateCodes: map[int]int64{503: 2}, LateReasons: map[string]int64{"timeout": 1}, DrainEnd: t0.Add(1500 * time.Millisecond),
		Scheduled: 10, Sent: 8, Missed: 2, Capped: 4, LagP99: 1500 * time.Microsecond}
	mc := manifest.Cell{Codes: map[string]int64{}}
	fill(&mc, res, t0)
	if mc.Late != 3 || mc.LateCodes["503"] != 2 || mc.LateReasons["timeout"] != 1 || mc.DrainEnd == nil || !mc.DrainEnd.Equal(res.DrainEnd) {
		t.Errorf("late %d %v %v drain end %v", mc.Late, mc.LateCodes, mc.LateReasons, mc.DrainEnd)
	}
	if mc.Missed != 2 || mc.Capped != 4 || mc.LagP99S != 0.0015 || !mc.End.Equal(res.End) {
		t.Errorf("missed %d capped %d lag %v end %v", mc.Missed, mc.Capped, mc.LagP99S, mc.End)
	}
	mc = manifest.Cell{Codes: map[string]int64{}}
	fill(&mc, &attack.Result{Start: t0, End: t0.Add(time.Second)}, t0)
	if mc.DrainEnd != nil || mc.LateCodes != nil || mc.LateReasons != nil {
		t.Errorf("nothing late, yet drain end %v late codes %v reasons %v", mc.DrainEnd, mc.LateCodes, mc.LateReasons)
	}
}

// Two variants running at once report one start edge (the first start) and
// one end edge (the last end), as the cell's window has.
func TestJoinEdgesOnePairForTheMix(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	type call struct {
		end bool
		at  time.Time
	}
	var mu sync.Mutex
	var calls []call
	spec := attack.Spec{URL: srv.URL, Load: load.Closed{Connections: 2, Duration: 300 * time.Millisecond},
		OnEdge: func(end bool, at time.Time) { mu.Lock(); calls = append(calls, call{end, at}); mu.Unlock() }}
	specs := []attack.Spec{spec, spec}
	finish := joinEdges(specs, spec.OnEdge)
	a := attack.New(attack.NewMetrics(prometheus.NewRegistry()), attack.WithGoroutinePerConn())
	results := make([]*attack.Result, len(specs))
	var wg sync.WaitGroup
	for i := range specs {
		wg.Go(func() {
			var err error
			if results[i], err = a.Run(context.Background(), specs[i], nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	finish()
	m := mergeResults(results)
	if len(calls) != 2 || calls[0].end || !calls[1].end {
		t.Fatalf("edges %+v, want one start and one end", calls)
	}
	if !calls[0].at.Equal(m.Start) || !calls[1].at.Equal(m.End) {
		t.Errorf("edges at %v and %v, the mix's window %v .. %v", calls[0].at, calls[1].at, m.Start, m.End)
	}
}
