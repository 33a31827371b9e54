// Package collect owns what the reporter asks Prometheus: it discovers a
// run's cells from the cell-window series and queries each cell over exactly
// its window (anchored increases evaluated with @ at the window's end).
package collect

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
)

// Window is one cell as the loadgen announced it in Prometheus.
type Window struct {
	cellid.Key
	Start, End   time.Time
	Concurrency  int
	TargetRate   float64
	Failed       bool
	MarkedFailed bool      // proxybench_cell_failed was 1 (Failed is also set when no end was published)
	Ended        bool      // an end timestamp was published
	DrainEnd     time.Time // when the last late request completed; zero when not published
	// Read by the loadgen at the window's edges (end minus start), in CPU
	// seconds; nil when not published.
	ProxyCPUSeconds, LoadgenCPUSeconds *float64
	// Workers is how many loadgen workers sent the cell's load as one
	// instrument, their series labelled worker 0 .. Workers-1; 0 = the
	// loadgen alone.
	Workers int
	// Service is the compose service of the container that served the
	// cell: "" for the proxy's own (its name), stack.CandidateService for
	// a duet's candidate container.
	Service string
}

// Svc is the compose service whose container series are the cell's.
func (w Window) Svc() string {
	if w.Service != "" {
		return w.Service
	}
	return w.Proxy
}

// TrafficEnd is where counting the loadgen's traffic counters ends: after
// the planned end, or after the drain of the late requests when later.
func (w Window) TrafficEnd() time.Time {
	if w.DrainEnd.After(w.End) {
		return w.DrainEnd.Add(MarginAfter)
	}
	return w.End.Add(MarginAfter)
}

// Lookback bounds how far back discovery searches for a run's window series.
const Lookback = 400 * 24 * time.Hour

// Discover finds every cell of run from Prometheus alone, sorted by start.
func Discover(ctx context.Context, c *promapi.Client, run string, now time.Time) ([]Window, error) {
	sel := fmt.Sprintf(`{run=%s}[%s]`, strconv.Quote(run), promapi.Duration(Lookback))
	get := func(metric string) (map[string]promapi.Sample, error) {
		vs, err := c.Query(ctx, "last_over_time("+metric+sel+")", now)
		if err != nil {
			return nil, err
		}
		m := make(map[string]promapi.Sample, len(vs))
		for _, v := range vs {
			m[v.Labels["cell"]] = v
		}
		return m, nil
	}
	starts, err := get(metricdefs.CellWindowStart.Name)
	if err != nil {
		return nil, fmt.Errorf("discover cells: %w", err)
	}
	if len(starts) == 0 {
		return nil, fmt.Errorf("run %q: no %s series in Prometheus (is the run id right, and still in retention?)", run, metricdefs.CellWindowStart.Name)
	}
	var ends, conc, rate, failed, drain, proxyCPU, lgCPU, workers map[string]promapi.Sample
	for _, q := range []struct {
		metric *metricdefs.Def
		dst    *map[string]promapi.Sample
	}{{metricdefs.CellWindowEnd, &ends}, {metricdefs.CellConcurrency, &conc},
		{metricdefs.CellTargetRate, &rate}, {metricdefs.CellFailed, &failed},
		// Published by newer loadgens only: absent is not an error.
		{metricdefs.CellDrainEnd, &drain}, {metricdefs.CellProxyCPU, &proxyCPU},
		{metricdefs.CellLoadgenCPU, &lgCPU}, {metricdefs.CellLoadgenWorkers, &workers}} {
		if *q.dst, err = get(q.metric.Name); err != nil {
			return nil, fmt.Errorf("discover cells: %w", err)
		}
	}
	out := make([]Window, 0, len(starts))
	for id, s := range starts {
		w := Window{Key: cellid.FromLabels(s.Labels), Start: unix(s.Value)}
		if e, ok := ends[id]; ok && e.Value > 0 {
			w.End, w.Ended = unix(e.Value), true
		} else {
			// Never ended (the loadgen died mid-cell): no trustworthy window.
			w.End, w.Failed = w.Start, true
		}
		if v, ok := conc[id]; ok {
			w.Concurrency = int(v.Value)
		}
		if v, ok := rate[id]; ok {
			w.TargetRate = v.Value
		}
		if v, ok := failed[id]; ok && v.Value != 0 {
			w.Failed, w.MarkedFailed = true, true
		}
		if v, ok := drain[id]; ok && v.Value > 0 {
			w.DrainEnd = unix(v.Value)
		}
		w.ProxyCPUSeconds, w.LoadgenCPUSeconds = value(proxyCPU, id), value(lgCPU, id)
		if v := value(workers, id); v != nil {
			w.Workers = int(*v)
		}
		out = append(out, w)
	}
	SortWindows(out)
	return out, nil
}

// SortWindows orders windows by start, then id.
func SortWindows(ws []Window) {
	sort.SliceStable(ws, func(i, j int) bool {
		if !ws[i].Start.Equal(ws[j].Start) {
			return ws[i].Start.Before(ws[j].Start)
		}
		return ws[i].ID < ws[j].ID
	})
}

func value(m map[string]promapi.Sample, id string) *float64 {
	v, ok := m[id]
	if !ok || math.IsNaN(v.Value) || v.Value < 0 {
		return nil
	}
	return &v.Value
}

func unix(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}
