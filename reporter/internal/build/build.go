// Package build owns assembling a run's report: cells discovered in
// Prometheus (or, failing that, read from the local manifest), each queried
// over its window, judged, checked against SLOs and summarised by repeats.
package build

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/internal/promapi"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
	"proxybench/reporter/internal/collect"
	"proxybench/reporter/internal/report"
)

// Config is one report build.
type Config struct {
	Prom        *promapi.Client // nil: manifest only
	PromURL     string
	Run         string
	RunDir      string // results/<run>
	SLO         report.SLO
	SLOFromFlag bool // flags win over the plan
	Thresholds  report.Thresholds
	Concurrency int
	Now         func() time.Time
	Log         *slog.Logger
}

// Report produces the report of cfg.Run.
func Report(ctx context.Context, cfg Config) (*report.Report, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &report.Report{Schema: report.SchemaVersion, Run: cfg.Run, Generated: cfg.Now().UTC(), Thresholds: cfg.Thresholds,
		Sources: report.Sources{Prometheus: cfg.PromURL}}
	man, err := readManifest(cfg.RunDir)
	if err != nil {
		return nil, err
	}
	r.Sources.Manifest = man != nil
	r.SLO = cfg.SLO
	set, err := planSettings(cfg.RunDir, man)
	slo, margin := set.SLO, set.Margin
	r.RequestTimeoutS = set.Timeout.Seconds()
	if err != nil && !cfg.SLOFromFlag {
		return nil, err
	}
	if slo != nil && !cfg.SLOFromFlag {
		r.SLO = *slo
	}
	if (margin > 0 && margin < 1) || set.Keep {
		q := report.DefaultQuestion
		if margin > 0 && margin < 1 {
			q.Margin = margin
		}
		q.KeepDisturbed = set.Keep
		r.Question = &q
	}

	var windows []collect.Window // from Prometheus
	if cfg.Prom != nil {
		if v, err := cfg.Prom.BuildInfo(ctx); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("Prometheus at %s unreachable (%v): numbers come from the local manifest only.", cfg.PromURL, err))
			cfg.Log.Warn("prometheus unreachable", "url", cfg.PromURL, "err", err)
		} else {
			r.Sources.PrometheusOK, r.Sources.PrometheusVersion = true, v
			windows, err = collect.Discover(ctx, cfg.Prom, cfg.Run, cfg.Now())
			if err != nil && man == nil {
				return nil, err
			}
			if err != nil {
				r.Notes = append(r.Notes, fmt.Sprintf("Discovery in Prometheus failed (%v); windows come from the local manifest.", err))
			}
		}
	}
	r.Sources.Discovery = "prometheus"
	known := len(windows) > 0 // Prometheus holds windows of the run
	if !known {
		if man == nil {
			return nil, fmt.Errorf("run %q: no cells in Prometheus and no %s: nothing to report", cfg.Run, filepath.Join(cfg.RunDir, "manifest.json"))
		}
		r.Sources.Discovery = "manifest"
	}
	windows, onlyManifest := mergeWindows(windows, man)
	if set.Candidate {
		for i := range windows {
			if windows[i].Arm == cellid.ArmCandidate {
				windows[i].Service = stack.CandidateService(windows[i].Proxy)
			}
		}
	}
	unknown := map[string]bool{}
	if man == nil {
		unknown = unknownOutcome(windows)
		for i := range windows {
			if unknown[windows[i].ID] {
				windows[i].Failed = false
			}
		}
	}

	cells := make([]report.Cell, len(windows))
	errs := make([]error, len(windows))
	// A run whose every cell was skipped has no window to ask about.
	if r.Sources.PrometheusOK && len(windows) > 0 {
		from, to := windows[0].Start, windows[0].End
		var proxies []string
		seen := map[string]bool{}
		for _, w := range windows {
			from, to = collect.MinTime(from, w.Start), collect.MaxTime(to, w.End)
			if !seen[w.Svc()] {
				seen[w.Svc()] = true
				proxies = append(proxies, w.Svc())
			}
		}
		if err := collect.AwaitFinalScrape(ctx, cfg.Prom, windows, cfg.Now); err != nil {
			return nil, err
		}
		kinds, err := collect.Probe(ctx, cfg.Prom, from.Add(-collect.MarginBefore), to.Add(collect.MarginAfter))
		if err != nil {
			return nil, err
		}
		scrapes, err := collect.FetchScrapes(ctx, cfg.Prom, windows, proxies, known)
		if err != nil {
			return nil, err
		}
		sem := make(chan struct{}, cfg.Concurrency)
		var wg sync.WaitGroup
		for i, w := range windows {
			if unknown[w.ID] {
				cells[i] = emptyCell(w)
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				cells[i], errs[i] = collect.Cell(ctx, cfg.Prom, w, isGo(w.Proxy), kinds, scrapes.Coverage(w))
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	} else {
		for i, w := range windows {
			cells[i] = emptyCell(w)
		}
	}
	for i := range cells {
		if unknown[cells[i].ID] {
			cells[i].PrometheusGap = &report.Gap{OutcomeUnknown: true}
		}
	}

	byID := map[string]*manifest.Cell{}
	if man != nil {
		for i := range man.Cells {
			byID[man.Cells[i].ID] = &man.Cells[i]
			if mc := man.Cells[i]; mc.Status == manifest.CellSkipped {
				r.NotRun = append(r.NotRun, report.NotRun{Key: mc.Key, Reason: mc.Reason})
			}
		}
	}
	var lacking, gaps []string
	for i := range cells {
		if mc := byID[cells[i].ID]; mc != nil {
			mergeManifest(&cells[i], mc)
		}
	}
	gcTails(cfg.RunDir, cells, byID)
	if over := exceededCeilings(man, cells); len(over) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d cells went past the loadgen's own measured ceiling (%s): that measurement understated the instrument; every cell is still held to it, and those are flagged instrument_ceiling with both numbers.",
			len(over), idList(over)))
	}
	for i := range cells {
		c := &cells[i]
		c.CeilingRPS = report.NaN()
		if ceil := cellCeiling(man, c); ceil != nil && ceil.RPS > 0 {
			c.CeilingRPS = report.Num(ceil.RPS)
		}
		switch {
		case c.PrometheusGap != nil:
			gaps = append(gaps, c.ID)
		case !c.ServerSide:
			lacking = append(lacking, c.ID)
		}
		report.Judge(c, cfg.Thresholds, isGo(c.Proxy))
		report.CheckSLO(c, r.SLO)
	}
	if known && len(onlyManifest) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d windows are in the manifest only (Prometheus never scraped their window series): %s.",
			len(onlyManifest), len(cells), idList(onlyManifest)))
	}
	if len(lacking) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d windows lack server-side series in Prometheus: %s.", len(lacking), len(cells), idList(lacking)))
	}
	if len(gaps) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d windows fall in a gap of Prometheus's scrapes (prometheus_gap): no number of theirs comes from the missing scrapes: %s.",
			len(gaps), len(cells), idList(gaps)))
	}
	r.Cells = cells
	if len(cells) > 0 {
		r.Start, r.End = cells[0].Start, cells[0].End
		for _, c := range cells {
			if c.Start.Before(r.Start) {
				r.Start = c.Start
			}
			if c.End.After(r.End) {
				r.End = c.End
			}
		}
	}
	r.Groups = report.BuildGroups(cells)
	report.MeasureNoise(r)
	if n := sequentialNote(man); n != "" {
		r.Notes = append(r.Notes, n)
	}
	r.Environment = environment(ctx, cfg, r, man)
	r.Support = report.SupportMatrix(man)
	r.TLSCost = report.BuildTLSCost(r.Cells)
	r.TLSHandshakes = report.BuildHandshakeSplit(r.Cells, r.NotRun)
	r.ProxyTax = report.BuildProxyTax(r.Cells, cfg.Thresholds)
	report.Tally(r)
	return r, nil
}

func isGo(proxy string) bool {
	p, err := stack.LookupProxy(proxy)
	return err == nil && p.Go
}

// idList names up to 12 cells, then how many more.
func idList(ids []string) string {
	if len(ids) > 12 {
		return strings.Join(ids[:12], ", ") + fmt.Sprintf(" and %d more", len(ids)-12)
	}
	return strings.Join(ids, ", ")
}

// mergeWindows is the run's set of cells: the windows Prometheus holds
// (prom) united with the manifest's cells that ran (skipped ones go to
// not_run). For a cell in both, the manifest is the authority on the
// window's edges, its drain end and its outcome: a cell it says finished ok
// is not failed, whatever Prometheus missed of its end. Cells only in
// Prometheus (the loadgen died before writing the manifest) stay as
// discovered. onlyManifest lists the cells Prometheus does not hold.
func mergeWindows(prom []collect.Window, m *manifest.Manifest) (out []collect.Window, onlyManifest []string) {
	if m == nil {
		return prom, nil
	}
	byID := make(map[string]collect.Window, len(prom))
	for _, w := range prom {
		byID[w.ID] = w
	}
	inManifest := map[string]bool{}
	for _, c := range m.Cells {
		inManifest[c.ID] = true
		if c.Status == manifest.CellSkipped {
			continue
		}
		w, ok := byID[c.ID]
		if !ok {
			w = collect.Window{Key: c.Key}
			onlyManifest = append(onlyManifest, c.ID)
		}
		w.Start, w.End, w.Ended = c.Start, c.End, true
		w.Failed = c.Status == manifest.CellFailed || c.Status == manifest.CellAborted
		if c.DrainEnd != nil {
			w.DrainEnd = *c.DrainEnd
		}
		if w.Concurrency == 0 {
			w.Concurrency = c.Concurrency
		}
		if w.TargetRate == 0 {
			w.TargetRate = c.Rate
		}
		if w.Workers == 0 {
			w.Workers = len(c.Workers)
		}
		out = append(out, w)
	}
	for _, w := range prom {
		if !inManifest[w.ID] {
			out = append(out, w)
		}
	}
	collect.SortWindows(out)
	return out, onlyManifest
}

// unknownOutcome finds, without a manifest, the windows whose end
// Prometheus never scraped although a later cell of the run started: the
// loadgen lived on, so the end was published and missed, and the cell is
// not known to have failed. A window without an end and nothing after it
// (the loadgen died in it) stays failed.
func unknownOutcome(windows []collect.Window) map[string]bool {
	out := map[string]bool{}
	for _, w := range windows {
		if w.Ended || w.MarkedFailed {
			continue
		}
		for _, later := range windows {
			if later.Start.After(w.Start) {
				out[w.ID] = true
				break
			}
		}
	}
	return out
}

func emptyCell(w collect.Window) report.Cell {
	n := report.NaN()
	return report.Cell{Key: w.Key,
		Start: w.Start, End: w.End, DurationS: report.Num(w.End.Sub(w.Start).Seconds()), Concurrency: w.Concurrency,
		TargetRateRPS: report.Num(w.TargetRate), Failed: w.Failed, Codes: map[string]int64{}, ErrorReasons: map[string]int64{},
		RPS: n, GoodputRPS: n, OKRPS: n, ErrorRatio: n, RateLimitedRatio: n, InFlightMean: n, Missed: n, Capped: n, LateShare: n,
		Latency:  report.Latency{Mean: n, P50: n, P90: n, P95: n, P99: n, P999: n, Max: n},
		ProxyRes: report.Resources{CPUMeanCores: n, CPUPeakCores: n, MemMeanBytes: n, MemPeakBytes: n, MemSlopeMBPerMin: n},
		LoadgenCPU: report.LoadgenCPU{MeanCores: n, PeakCores: n, LimitCores: n, ThrottledShare: n, RunDelayShare: n,
			PressureShare: n, LagP99Seconds: n}}
}

// mergeManifest adds the exact percentiles, and what Prometheus lacks: the
// late completions, open-loop missed and capped sends and lag, and the CPU
// read at the window's edges (preferred over cAdvisor's increase). Where
// Prometheus had no traffic series it also takes the counts, so the cell
// still says something.
//
// An arm of a sliced duet (manifest.Slices) shares its window with the
// other arm, so Prometheus's series of the window hold both: its counts,
// latencies and the proxy's CPU come from the manifest alone, its rates are
// per its measured slices (DurationS), and the loadgen's CPU is the
// window's.
func mergeManifest(c *report.Cell, mc *manifest.Cell) {
	window := c.DurationS
	if sl := mc.Slices; sl != nil {
		c.DurationS = report.Num(sl.MeasuredS)
		c.SetProxyCPU(report.NaN(), "")
		c.Sliced = &report.Sliced{Slices: sl.Count, SliceS: sl.SliceS, MeasuredS: sl.MeasuredS,
			GoodputRPS: report.Num(sl.Typical(manifest.Slice.Goodput)), CPUPerRequest: report.Num(sl.Typical(manifest.Slice.CPUPerRequest)),
			PerSlice: map[string][]report.Num{}}
		for name, f := range manifest.SliceMetrics {
			for _, v := range sl.Values(f) {
				c.Sliced.PerSlice[name] = append(c.Sliced.PerSlice[name], report.Num(v))
			}
		}
	}
	c.WarmupStart = mc.WarmupStart // only the manifest knows when warm-up began
	c.ScenarioData = mc.ScenarioData
	c.WrongAnswers = scenario.WrongAnswers(c.Scenario, mc.ScenarioData, mc.End.Sub(mc.Start).Seconds())
	c.Protocol, c.TLS = mc.Protocol, mc.TLS
	l := mc.Latency
	if l.Count > 0 {
		c.Latency.Exact = &report.Exact{Mean: report.Num(l.Mean), P50: report.Num(l.P50), P90: report.Num(l.P90),
			P95: report.Num(l.P95), P99: report.Num(l.P99), P999: report.Num(l.P999), Max: report.Num(l.Max)}
		if mc.Slices != nil { // Prometheus's buckets of the window hold both arms
			e := c.Latency.Exact
			c.Latency.Mean, c.Latency.P50, c.Latency.P90, c.Latency.P95, c.Latency.P99, c.Latency.P999, c.Latency.Max = e.Mean, e.P50, e.P90, e.P95, e.P99, e.P999, e.Max
		}
	}
	if c.DrainEnd == nil && mc.DrainEnd != nil {
		de := *mc.DrainEnd
		c.DrainEnd = &de
	}
	if openLoop := mc.Rate > 0 || mc.Scheduled > 0; openLoop {
		if !c.Missed.Known() {
			c.Missed = report.Num(mc.Missed)
		}
		if !c.Capped.Known() {
			c.Capped = report.Num(mc.Capped)
		}
		if !c.Queued.Known() {
			c.Queued = report.Num(mc.Queued)
		}
		if !c.LoadgenCPU.LagP99Seconds.Known() && mc.LagP99S > 0 {
			c.LoadgenCPU.LagP99Seconds = report.Num(mc.LagP99S)
		}
	}
	if mc.ProxyCPUSeconds != nil && c.ProxyRes.CPUSource != report.ProxyCPUEdges {
		c.SetProxyCPU(report.Num(*mc.ProxyCPUSeconds), report.ProxyCPUEdges)
	}
	if lg := mc.Loadgen; lg != nil {
		c.LoadgenCPU.MergeEdges(lg, window)
	}
	c.Contention = report.ContentionOf(mc.Contention)
	if mc.StealWorstSecond != nil {
		c.StealWorstSecond = report.Num(*mc.StealWorstSecond)
	}
	c.Disturbed = mc.Disturbed
	c.Stall = mc.Stall
	c.Workers = mc.Workers
	takeLate := func() {
		c.Late, c.LateCodes, c.LateReasons, c.LateSource = mc.Late, mc.LateCodes, mc.LateReasons, report.LateFromManifest
	}
	if c.ServerSide && mc.Slices == nil {
		// Prometheus's totals count every completion; take out the late ones
		// the manifest knows of when Prometheus has no late series.
		if c.LateSource == "" && mc.Late > 0 {
			collect.SplitLate(c.Codes, mc.LateCodes)
			collect.SplitLate(c.ErrorReasons, mc.LateReasons)
			takeLate()
		}
		report.Classify(c)
		return
	}
	if mc.Late > 0 {
		takeLate()
	}
	c.Codes = map[string]int64{}
	for k, v := range mc.Codes {
		c.Codes[k] = v
	}
	c.ErrorReasons = map[string]int64{}
	for k, v := range mc.ErrorReasons {
		c.ErrorReasons[k] = v
	}
	c.WrongOrigin, c.Scheduled, c.Sent = mc.WrongOrigin, mc.Scheduled, mc.Sent
	report.Classify(c)
	if c.Sliced != nil {
		c.GoodputRPS = c.Sliced.GoodputRPS
	}
	if l.Count > 0 && !c.Latency.Mean.Known() {
		c.Latency.Mean = report.Num(l.Mean)
	}
}

// cellCeiling is the instrument ceiling a cell's claim is held to: the
// open-loop engine's for an open-loop cell when the run measured one, else
// the closed-loop one; nil without a manifest.
func cellCeiling(man *manifest.Manifest, c *report.Cell) *manifest.Ceiling {
	if man == nil {
		return nil
	}
	if c.TargetRateRPS.Known() && c.TargetRateRPS > 0 && man.OpenCeiling != nil {
		return man.OpenCeiling
	}
	return man.Ceiling
}

// exceededCeilings are the cells that went past their instrument
// ceiling: the loadgen sent more through a proxy than the measurement said
// it could against a trivial server, so that measurement was low (taken
// while something else held the CPUs, or cached from such a time). The
// ceiling is kept: dropping it for every cell would let the flag come and
// go between runs on its own.
func exceededCeilings(man *manifest.Manifest, cells []report.Cell) []string {
	var out []string
	for i := range cells {
		c := &cells[i]
		ceil := cellCeiling(man, c)
		if ceil == nil || !(ceil.RPS > 0) {
			continue
		}
		if _, rps := c.CeilingClaim(); rps.Known() && float64(rps) > ceil.RPS {
			out = append(out, c.ID)
		}
	}
	return out
}
