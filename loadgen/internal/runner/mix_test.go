package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
)

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
	m := attack.Merge(results...)
	if len(calls) != 2 || calls[0].end || !calls[1].end {
		t.Fatalf("edges %+v, want one start and one end", calls)
	}
	if !calls[0].at.Equal(m.Start) || !calls[1].at.Equal(m.End) {
		t.Errorf("edges at %v and %v, the mix's window %v .. %v", calls[0].at, calls[1].at, m.Start, m.End)
	}
}
