package report

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"proxybench/internal/cputime"
	"proxybench/internal/manifest"
)

// judgeWorkers holds each loadgen worker of a cell that several ran as one
// instrument to what a loadgen alone is held to (judgeLoadgen: its CPU
// against its capacity, its cgroup's throttling, its share of the open
// loop's schedule, its send lag), so the cell is loadgen_bound when any
// worker is and the reason names it. Workers that share CPUs are also held
// together to those CPUs: three workers on one core can each use a third of
// it and still have used it up.
func judgeWorkers(c *Cell, th Thresholds, add func(code, sev, format string, a ...any)) {
	open := c.TargetRateRPS.Known() && c.TargetRateRPS > 0
	for _, w := range c.Workers {
		wc := workerCell(c, w, open)
		judgeLoadgen(&wc, th, func(code, sev, format string, a ...any) {
			if code == FlagLoadgenBound { // sut_saturated is the cell's to say, from the merge
				add(code, sev, "loadgen worker %d: "+format, append([]any{w.Index}, a...)...)
			}
		})
	}
	judgeSharedCPUs(c, th, add)
}

// workerCell is worker w's part as a cell of its own, for judgeLoadgen.
func workerCell(c *Cell, w manifest.Worker, open bool) Cell {
	n := NaN()
	wc := Cell{DurationS: c.DurationS, Concurrency: w.Concurrency, TargetRateRPS: 0, Requests: w.Requests, TransportErrors: w.Errors,
		Scheduled: w.Scheduled, Sent: w.Sent, Missed: n, Queued: n, Capped: n,
		LoadgenCPU: LoadgenCPU{MeanCores: n, PeakCores: n, LimitCores: n, ThrottledShare: n, RunDelayShare: n, PressureShare: n, LagP99Seconds: n}}
	if open {
		wc.TargetRateRPS, wc.Missed, wc.Queued, wc.Capped = Num(w.Rate), Num(w.Missed), Num(w.Queued), Num(w.Capped)
		if w.LagP99S > 0 {
			wc.LoadgenCPU.LagP99Seconds = Num(w.LagP99S)
		}
	}
	if w.Loadgen != nil {
		wc.LoadgenCPU.MergeEdges(w.Loadgen, c.DurationS)
	}
	return wc
}

// judgeSharedCPUs flags loadgen workers of one host whose CPU lists are the
// same and that together used up those CPUs (the mean at or above
// LoadgenCPUFraction of them).
func judgeSharedCPUs(c *Cell, th Thresholds, add func(code, sev, format string, a ...any)) {
	if !c.DurationS.Known() || c.DurationS <= 0 {
		return
	}
	cpuSecs := map[int]float64{}
	for _, w := range c.Workers {
		if w.Loadgen != nil {
			cpuSecs[w.Index] = w.Loadgen.CPUSeconds
		}
	}
	groups := map[string][]int{} // host and CPUs -> worker indexes
	for _, r := range c.Contention {
		if r.Worker == nil || r.CPUs == "" {
			continue
		}
		if _, ok := cpuSecs[*r.Worker]; ok {
			k := r.Host + "/" + r.CPUs
			groups[k] = append(groups[k], *r.Worker)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		ws := groups[k]
		_, list, _ := strings.Cut(k, "/")
		cpus, err := cputime.ParseList(list)
		if len(ws) < 2 || err != nil || len(cpus) == 0 {
			continue
		}
		slices.Sort(ws)
		var sum float64
		names := make([]string, len(ws))
		for i, w := range ws {
			sum += cpuSecs[w]
			names[i] = strconv.Itoa(w)
		}
		mean, n := sum/float64(c.DurationS), float64(len(cpus))
		what := "CPU " + list
		if len(cpus) > 1 {
			what = "CPUs " + list
		}
		if mean >= th.LoadgenCPUFraction*n {
			add(FlagLoadgenBound, Invalid, "loadgen workers %s share %s: together %.3g of its %g cores on average (%.0f %%, >= %s): the load generators, not the proxy, may be the ceiling",
				AndList(names), what, mean, n, 100*mean/n, Pct(th.LoadgenCPUFraction))
		}
	}
}
