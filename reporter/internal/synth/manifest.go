package synth

import (
	"math"
	"sort"

	"proxybench/internal/manifest"
)

// Manifest is the loadgen's manifest of the run, as a real run leaves it:
// every cell finished ok with its exact counts, its exact latency
// percentiles and the readings a real loadgen takes at the window's edges
// (only those the synthetic loadgen publishes to Prometheus too, so that
// both sources agree).
func (r *Run) Manifest() *manifest.Manifest {
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: r.ID, Status: "done", Started: r.Start, Updated: r.End(),
		Placement: r.placement()}
	for i := range r.Cells {
		m.Cells = append(m.Cells, r.Cells[i].manifest())
	}
	return m
}

// placement is the run's CPU placement: none on a 2-CPU host, the proxies
// at the 2-CPU quota the synthetic container series carry.
func (r *Run) placement() *manifest.Placement {
	p := &manifest.Placement{Mode: "none", Reason: "placement none: no cpusets; every process may run on every CPU", CPUs: 2, Online: "0-1",
		ProxyCPUs: 2, Workers: 2, OriginWorkers: 2, Loadgen: manifest.LoadgenAffinity{CPUs: "0-1", Threads: 9, GOMAXPROCS: 2}}
	for _, px := range r.proxies() {
		p.Containers = append(p.Containers, manifest.ContainerCPUs{Name: "proxybench-" + px, Service: px, Role: "proxy", State: "running", CPUs: 2})
	}
	for _, s := range []string{"exporter", "prometheus"} {
		p.Containers = append(p.Containers, manifest.ContainerCPUs{Name: "proxybench-" + s, Service: s, Role: "observability", State: "running"})
	}
	return p
}

func (c *Cell) manifest() manifest.Cell {
	d := c.Duration()
	mc := manifest.Cell{Key: c.Key,
		Mode: "closed", Concurrency: c.Concurrency, Rate: c.TargetRate, DurationS: d, Start: c.Start, End: c.End,
		Status: manifest.CellOK, Requests: c.InWindow(), Errors: sum(c.Reasons), Codes: nonZero(c.Codes),
		ErrorReasons: nonZero(c.Reasons), Scheduled: c.Scheduled, Sent: c.Sent, WrongOrigin: c.WrongOrigin,
		Late: c.Late(), LateCodes: nonZero(c.LateCodes), Missed: c.Missed, Queued: c.Queued, Capped: c.Capped,
		Latency: exactLatency(c.Latencies),
		Loadgen: &manifest.LoadgenCPU{CapacityCores: c.LoadgenLimit, CapacitySource: "gomaxprocs",
			Periods: int64(10 * d), ThrottledPeriods: int64(math.Round(10 * d * c.ThrottledShare)), RunDelaySeconds: c.RunDelayPerS * d}}
	if c.TargetRate > 0 {
		mc.Mode = "open"
		mc.LagP99S = exactLatency(c.Lags).P99
	}
	if len(mc.LateCodes) == 0 {
		mc.LateCodes = nil
	}
	de := c.End
	if !c.DrainEnd.IsZero() {
		de = c.DrainEnd
	}
	mc.DrainEnd = &de
	if c.ProxyCPUEdgeS > 0 {
		v := c.ProxyCPUEdgeS
		mc.ProxyCPUSeconds = &v
	}
	if c.LoadgenCPUEdgeS > 0 {
		mc.Loadgen.CPUSeconds = c.LoadgenCPUEdgeS
	}
	return mc
}

// exactLatency is what the loadgen's HdrHistogram reports for obs: the
// nearest-rank percentiles.
func exactLatency(obs []float64) manifest.Latency {
	if len(obs) == 0 {
		return manifest.Latency{}
	}
	s := append([]float64(nil), obs...)
	sort.Float64s(s)
	q := func(p float64) float64 { return s[max(0, int(math.Ceil(p*float64(len(s))))-1)] }
	mean := 0.0
	for _, x := range s {
		mean += x
	}
	return manifest.Latency{Count: int64(len(s)), Min: s[0], Mean: mean / float64(len(s)), P50: q(0.5), P90: q(0.9), P95: q(0.95),
		P99: q(0.99), P999: q(0.999), P9999: q(0.9999), Max: s[len(s)-1]}
}

func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
