package render

import (
	"bytes"
	"os"
	"testing"
	"time"

	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/synth"
)

func TestZZPreview(t *testing.T) {
	out := os.Getenv("PREVIEW")
	if out == "" {
		t.Skip()
	}
	run := synth.New(synth.Options{ID: "preview", Start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Proxies: []string{"nginx", "haproxy", "traefik", "caddy"},
		Origins: []string{"node", "python", "go", "fast"}, Repeats: 2, DurationS: 5})
	r := &report.Report{Schema: report.SchemaVersion, Run: "preview", Thresholds: report.DefaultThresholds, SLO: report.SLO{P99: 10 * time.Millisecond}}
	for _, sc := range run.Cells {
		c := report.Cell{ID: sc.ID, Proxy: sc.Proxy, Origin: sc.Origin, Scenario: "simple", Tier: "quick", Repeat: sc.Repeat, Start: sc.Start, End: sc.End,
			DurationS: 5, Codes: sc.Codes, ErrorReasons: sc.Reasons, ServerSide: true, InFlightMean: report.Num(sc.InFlight), Scrapes: 5}
		report.Classify(&c)
		n := len(sc.Latencies)
		q := func(p float64) report.Num { return report.Num(sc.Latencies[int(p*float64(n-1))]) }
		m := 0.0
		for _, x := range sc.Latencies {
			m += x
		}
		c.Latency = report.Latency{Source: "classic", Count: int64(n), Mean: report.Num(m / float64(n)), P50: q(.5), P90: q(.9), P95: q(.95), P99: q(.99), P999: q(.999), Max: q(1)}
		c.ProxyRes = report.Resources{CPUMeanCores: report.Num(sc.ProxyCPU), CPUPeakCores: report.Num(sc.ProxyCPU * 1.2), MemMeanBytes: report.Num(sc.MemStartMB * 1e6), MemPeakBytes: report.Num(sc.MemStartMB * 1.1e6), MemSlopeMBPerMin: report.Num(sc.MemSlopeMBPerS * 60)}
		c.LoadgenCPU = report.LoadgenCPU{MeanCores: report.Num(sc.LoadgenCPU), PeakCores: report.Num(sc.LoadgenCPU), LimitCores: 2}
		for k := 1; k <= 5; k++ {
			c.Series.T = append(c.Series.T, float64(k))
			c.Series.CPU = append(c.Series.CPU, sc.ProxyCPU*(1+0.1*float64(k%2)))
			c.Series.MemMB = append(c.Series.MemMB, sc.MemStartMB+sc.MemSlopeMBPerS*float64(k))
		}
		if sc.Go {
			c.GC = &report.GC{Cycles: report.Num(sc.GCCyclesPerS * 5), CyclesPerS: report.Num(sc.GCCyclesPerS), CPUPercent: report.Num(sc.GCCPUPerS * 50), ShareOfProxyCPU: 5,
				PauseP50: report.Num(sc.Pauses[len(sc.Pauses)/2]), PauseP99: report.Num(sc.Pauses[len(sc.Pauses)-2]), PauseMax: report.Num(sc.Pauses[len(sc.Pauses)-1]), LiveHeapMeanBytes: report.Num(sc.HeapMB * 1e6), LiveHeapSlope: 0.3}
		}
		report.Judge(&c, r.Thresholds, sc.Go)
		report.CheckSLO(&c, r.SLO)
		r.Cells = append(r.Cells, c)
	}
	r.Start, r.End = run.Cells[0].Start, run.Cells[len(run.Cells)-1].End
	r.Groups = report.BuildGroups(r.Cells)
	report.Tally(r)
	figs := Figures(r)
	d := Build(r)
	var md, page bytes.Buffer
	Markdown(&md, d)
	HTML(&page, d, figs)
	os.WriteFile(out+"/report.md", md.Bytes(), 0o644)
	os.WriteFile(out+"/report.html", page.Bytes(), 0o644)
}
