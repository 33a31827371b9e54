package collect

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
	"proxybench/internal/stack"
	"proxybench/reporter/internal/report"
)

// Coverage thresholds (README.md, prometheus_gap). A window's numbers are
// exact only if Prometheus really scraped around and through it: counters
// are read as anchored increases whose baseline is the last sample at or
// before the span's start, and gauges as the samples inside it; across a
// hole in the scrapes the first would take a stale baseline from before
// the hole and the second would find nothing, or, through Prometheus's
// 5-minute lookback, a previous cell's values.
const (
	// Quiet is how long the loadgen keeps a label set quiet before a
	// window (--settle, 3 s by default; docs/design-notes.md, timing
	// guarantee). The counting baseline start - MarginBefore is exact when
	// a scrape falls in the quiet time before it: (start - Quiet, start -
	// MarginBefore].
	Quiet = 3 * time.Second
	// MinInterval floors the estimated scrape interval: prometheus.yml
	// scrapes every 1 s, and a smaller median delta means the samples of
	// two targets interleave, not that a gap of 1 s would be one.
	MinInterval = time.Second
	// LoadgenMaxLost: over the loadgen's counting span at most 2 scrapes
	// in a row may be lost (timed out on a loaded host, or the loadgen
	// stopped for a second): the longest stretch without one may be
	// 2 + 1 intervals, plus half an interval for timestamp jitter (3.5 s
	// at 1 s). Counts would survive longer ones (counters are cumulative),
	// but the in-flight mean, the 1-s CPU peak and the scrape count would
	// rest on too few points.
	LoadgenMaxLost = 2
	// ExporterMaxLost is the exporter's (cAdvisor, gctrace) allowance,
	// more lenient (5.5 s at 1 s): its numbers are means, peaks and slopes
	// of slowly moving series over the window, and a gap only leaves them
	// unknown.
	ExporterMaxLost = 4
	// scrapeChunk bounds the span of one query for raw scrape timestamps.
	scrapeChunk = 6 * time.Hour
)

// Series that exist only when a scrape of their target succeeded (a failed
// scrape writes up == 0 and no sample of them): the loadgen's capacity
// gauge, which every loadgen process exports whatever its job is called
// (unlabelled; a loadgen worker's with its worker label), and the cAdvisor
// CPU counter of the proxy's containers.
var (
	loadgenScrapeSeries = metricdefs.LoadgenCPULimit.Name
	// loadgenProcess tells the loadgen's processes apart: each exports
	// its start time (client_golang's process collector), the same in
	// every sample of one process.
	loadgenProcess       = `process_start_time_seconds{job="loadgen"}`
	exporterScrapeSeries = metricdefs.ContainerCPUUsage.Name + `{job="exporter",cpu=~"total|",service=~%s}`
)

// ScrapeLog is when Prometheus successfully scraped one target: the sorted,
// distinct raw timestamps of its samples, and the interval estimated from
// them (the median delta, at least MinInterval).
type ScrapeLog struct {
	Times    []time.Time
	Interval time.Duration
}

func newScrapeLog(ts []time.Time) ScrapeLog {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	out := ts[:0]
	for i, t := range ts {
		if i == 0 || !t.Equal(out[len(out)-1]) {
			out = append(out, t)
		}
	}
	l := ScrapeLog{Times: out, Interval: MinInterval}
	if len(out) >= 2 {
		d := make([]time.Duration, len(out)-1)
		for i := 1; i < len(out); i++ {
			d[i-1] = out[i].Sub(out[i-1])
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		l.Interval = max(d[len(d)/2], MinInterval)
	}
	return l
}

// between counts the scrapes in (from, to].
func (l ScrapeLog) between(from, to time.Time) int {
	return l.index(to) - l.index(from)
}

// index is the number of scrapes at or before t.
func (l ScrapeLog) index(t time.Time) int {
	return sort.Search(len(l.Times), func(i int) bool { return l.Times[i].After(t) })
}

// check measures the scrapes over (from, to]: a baseline scrape at most
// baseline before from (strictly within it), one after afterFrom, and the
// longest stretch without a scrape from the last scrape at or before from
// (from itself when there is none) to to.
func (l ScrapeLog) check(job string, from, to time.Time, baseline time.Duration, afterFrom time.Time, allowed time.Duration) *report.ScrapeCoverage {
	i0, i1 := l.index(from), l.index(to)
	c := &report.ScrapeCoverage{Job: job, From: from, To: to, Scrapes: i1 - i0, IntervalS: report.Num(l.Interval.Seconds()),
		BaselineS: report.Num(baseline.Seconds()), AfterFrom: afterFrom, AllowedGapS: report.Num(allowed.Seconds())}
	c.Expected = int(math.Round(float64(to.Sub(from)) / float64(l.Interval)))
	c.After = i1 > i0 && l.Times[i1-1].After(afterFrom)
	prev := from
	if i0 > 0 {
		prev = l.Times[i0-1]
		c.Baseline = from.Sub(prev) < baseline
	}
	c.GapFrom, c.GapTo = prev, to
	longest := time.Duration(-1)
	for i := i0; i <= i1; i++ {
		t := to // the stretch after the last scrape runs to the span's end
		if i < i1 {
			t = l.Times[i]
		}
		if g := t.Sub(prev); g > longest {
			longest, c.GapFrom, c.GapTo = g, prev, t
		}
		prev = t
	}
	c.GapS = report.Num(longest.Seconds())
	return c
}

// Scrapes is what Prometheus scraped over a run: the loadgen's scrapes,
// each loadgen worker's (by its worker label) and the exporter's per
// compose service (of the series for that service's containers).
type Scrapes struct {
	Loadgen ScrapeLog
	// Processes are the loadgen's process start times as scraped (its own,
	// not its workers'), in time order: where one process's samples begin.
	Processes []Sample
	Workers   map[int]ScrapeLog
	Exporter  map[string]ScrapeLog
	// Known: Prometheus holds windows of the run (discovery found some).
	Known bool
	// Baseline is the run's first counting baseline less Quiet: scrapes of
	// the loadgen from there on are the run's.
	Baseline time.Time
}

// FetchScrapes reads the raw timestamps of the loadgen's (its workers'
// apart) and the exporter's scrapes over windows (with margins), for
// services (the runs' proxies), in one query per target kind and
// scrapeChunk of span. known says whether Prometheus discovered any window
// of the run.
func FetchScrapes(ctx context.Context, c *promapi.Client, windows []Window, services []string, known bool) (*Scrapes, error) {
	s := &Scrapes{Workers: map[int]ScrapeLog{}, Exporter: map[string]ScrapeLog{}, Known: known}
	if len(windows) == 0 {
		return s, nil
	}
	from, to := windows[0].Start, windows[0].TrafficEnd()
	for _, w := range windows {
		from, to = MinTime(from, w.Start), MaxTime(to, w.TrafficEnd())
	}
	s.Baseline = from.Add(-MarginBefore - Quiet)
	// A minute on each side: the baseline scrape before the first window,
	// the interval's estimate, and the scrape after the last.
	from, to = from.Add(-time.Minute), to.Add(time.Minute)
	lg, err := rawTimes(ctx, c, loadgenScrapeSeries, metricdefs.WorkerLabel, from, to)
	if err != nil {
		return nil, fmt.Errorf("loadgen scrapes: %w", err)
	}
	for k, ts := range lg {
		if k == "" {
			s.Loadgen = newScrapeLog(ts)
		} else if i, err := strconv.Atoi(k); err == nil && i >= 0 {
			s.Workers[i] = newScrapeLog(ts)
		}
	}
	procs, err := rawSamples(ctx, c, loadgenProcess, metricdefs.WorkerLabel, from, to)
	if err != nil {
		return nil, fmt.Errorf("loadgen processes: %w", err)
	}
	s.Processes = procs[""]
	sort.Slice(s.Processes, func(i, j int) bool { return s.Processes[i].T.Before(s.Processes[j].T) })
	if len(services) > 0 {
		q := make([]string, len(services))
		for i, svc := range services {
			q[i] = regexp.QuoteMeta(svc)
		}
		ex, err := rawTimes(ctx, c, fmt.Sprintf(exporterScrapeSeries, quote(strings.Join(q, "|"))), "service", from, to)
		if err != nil {
			return nil, fmt.Errorf("exporter scrapes: %w", err)
		}
		for svc, ts := range ex {
			s.Exporter[svc] = newScrapeLog(ts)
		}
	}
	return s, nil
}

// rawTimes is every sample timestamp of sel in (from, to], grouped by the
// label by ("" = all together).
func rawTimes(ctx context.Context, c *promapi.Client, sel, by string, from, to time.Time) (map[string][]time.Time, error) {
	samples, err := rawSamples(ctx, c, sel, by, from, to)
	if err != nil {
		return nil, err
	}
	out := map[string][]time.Time{}
	for k, ss := range samples {
		for _, x := range ss {
			out[k] = append(out[k], x.T)
		}
	}
	return out, nil
}

// rawSamples is every sample of sel in (from, to], grouped by the label by
// ("" = all together).
func rawSamples(ctx context.Context, c *promapi.Client, sel, by string, from, to time.Time) (map[string][]Sample, error) {
	out := map[string][]Sample{}
	for lo := from; lo.Before(to); lo = lo.Add(scrapeChunk) {
		hi := MinTime(lo.Add(scrapeChunk), to)
		res, err := c.QueryMatrix(ctx, fmt.Sprintf("%s[%s] @ %s", sel, promapi.Duration(hi.Sub(lo)), promapi.FormatTime(hi)), hi)
		if err != nil {
			return nil, err
		}
		for _, ser := range res {
			k := ""
			if by != "" {
				k = ser.Labels[by]
			}
			for i, t := range ser.Times {
				out[k] = append(out[k], Sample{T: t, V: ser.Values[i]})
			}
		}
	}
	return out, nil
}

// Sample is one raw sample: its time and value.
type Sample struct {
	T time.Time
	V float64
}

// CountFrom is where w's counting span begins: MarginBefore before the
// window, or, when later, at the first scrape of the loadgen process that
// sent it (a process's first window may begin right after its first
// scrape). That scrape is the baseline of every series the process had
// then; a series a previous process left under the same labels is stale
// from it on, so none of its values is taken as this process's baseline.
// sameProcess is false when the process scraped at the window's end is not
// the one scraped before it began (its first scrape was not stored): no
// baseline of the process is known.
func (s *Scrapes) CountFrom(w Window) (from time.Time, sameProcess bool) {
	from = w.Start.Add(-MarginBefore)
	if s == nil {
		return from, true
	}
	at := func(t time.Time) int { // the last sample at or before t, -1 if none
		return sort.Search(len(s.Processes), func(i int) bool { return s.Processes[i].T.After(t) }) - 1
	}
	i := at(w.Start)
	if i < 0 {
		return from, true
	}
	j := i
	for j > 0 && s.Processes[j-1].V == s.Processes[i].V {
		j--
	}
	k := at(w.TrafficEnd())
	return MaxTime(from, s.Processes[j].T), s.Processes[k].V == s.Processes[i].V
}

// Coverage is how Prometheus scraped around one window. A check that
// failed leaves its target's numbers for the window unused (unknown); Gap
// says whether the shortfall is a hole in scrapes Prometheus otherwise
// made (flag prometheus_gap) rather than a target it never scraped for the
// window at all (no_server_side_series, missing_metrics).
type Coverage struct {
	Loadgen, Exporter       *report.ScrapeCoverage // nil: not checked
	LoadgenGap, ExporterGap bool
	// Workers are the loadgen workers' checks, by index, for a cell
	// several ran as one instrument (none when no worker of the run was
	// ever scraped: Prometheus does not know them).
	Workers  []WorkerCoverage
	Interval time.Duration // the coarsest of the targets' estimated intervals
	// CountFrom is where the loadgen's counting span begins (Scrapes.CountFrom);
	// zero: MarginBefore before the window.
	CountFrom time.Time
}

// countFrom is where w's counting span begins under c.
func (c Coverage) countFrom(w Window) time.Time {
	if c.CountFrom.IsZero() {
		return w.Start.Add(-MarginBefore)
	}
	return c.CountFrom
}

// WorkerCoverage is how Prometheus scraped one loadgen worker around a
// window, and whether a shortfall is a gap (as Coverage.LoadgenGap).
type WorkerCoverage struct {
	Scrapes *report.ScrapeCoverage
	Gap     bool
}

// LoadgenOK reports whether the loadgen's numbers for the window can be
// used: its scrapes and, for a cell of several loadgen workers, every
// worker's (their sum is the cell's traffic) passed.
func (c Coverage) LoadgenOK() bool {
	for _, w := range c.Workers {
		if !w.Scrapes.OK() {
			return false
		}
	}
	return c.Loadgen == nil || c.Loadgen.OK()
}

// ExporterOK reports whether the exporter's numbers for the window can be used.
func (c Coverage) ExporterOK() bool { return c.Exporter == nil || c.Exporter.OK() }

// Coverage checks the scrapes around w (a window that ended; others are
// not checked):
//   - the loadgen over the counting span (CountFrom, TrafficEnd]: a scrape in the quiet time before its baseline (within
//     Quiet - MarginBefore), one after the traffic (max(end, drain end)),
//     and no stretch without a scrape longer than
//     allowedGap(LoadgenMaxLost). A failure is a gap when Prometheus holds the run and
//     scraped the loadgen at some point from the run's baseline to the end
//     of this window's traffic.
//   - each loadgen worker of a cell several ran (Window.Workers) in the
//     same way, named by its index: a worker missing from Prometheus
//     altogether fails its check while the others are scraped (the cell's
//     sum would lack its share). A gap when Prometheus scraped the loadgen
//     or that worker from the run's baseline to the window's traffic end.
//   - the exporter (the proxy's container series) over (start, end]: a
//     scrape at most allowedGap(ExporterMaxLost) before start and no
//     stretch longer than that. A failure is a gap when some scrape fell
//     inside the window.
//
// A target without a single sample of its series over the whole run (a
// loadgen older than its capacity gauge, a proxy that is no local
// container) cannot be checked: its numbers are taken as they come (the
// queries themselves read only samples inside the window).
func (s *Scrapes) Coverage(w Window) Coverage {
	var c Coverage
	if s == nil || !w.Ended {
		return c
	}
	trafficOver := w.End
	if w.DrainEnd.After(trafficOver) {
		trafficOver = w.DrainEnd
	}
	// The loadgen's span may begin at its first scrape (CountFrom); a
	// worker, scraped 1.2 s before the first window (package fleet), is
	// checked from MarginBefore before it, where its baseline lies.
	from, same := s.CountFrom(w)
	c.CountFrom = from
	loadgenCheck := func(l ScrapeLog, job string, from time.Time) *report.ScrapeCoverage {
		return l.check(job, from, w.TrafficEnd(), Quiet-MarginBefore, trafficOver, allowedGap(LoadgenMaxLost, l.Interval))
	}
	lg := s.Loadgen
	if len(lg.Times) > 0 {
		c.Loadgen = loadgenCheck(lg, "loadgen", from)
		c.Loadgen.Baseline = c.Loadgen.Baseline && same
		c.LoadgenGap = !c.Loadgen.OK() && s.Known && lg.between(s.Baseline, w.TrafficEnd()) > 0
		c.Interval = lg.Interval
	}
	if len(s.Workers) > 0 {
		for i := range w.Workers {
			wl, ok := s.Workers[i]
			if !ok {
				wl = newScrapeLog(nil)
			}
			wc := WorkerCoverage{Scrapes: loadgenCheck(wl, stack.WorkerJob, w.Start.Add(-MarginBefore))}
			wc.Scrapes.Worker = &i
			wc.Gap = !wc.Scrapes.OK() && s.Known && (lg.between(s.Baseline, w.TrafficEnd()) > 0 || wl.between(s.Baseline, w.TrafficEnd()) > 0)
			c.Workers = append(c.Workers, wc)
			c.Interval = max(c.Interval, wl.Interval)
		}
	}
	if ex := s.Exporter[w.Svc()]; len(ex.Times) > 0 {
		allowed := allowedGap(ExporterMaxLost, ex.Interval)
		c.Exporter = ex.check("exporter", w.Start, w.End, allowed, w.End.Add(-allowed), allowed)
		c.ExporterGap = !c.Exporter.OK() && ex.between(w.Start, w.End) > 0
		c.Interval = max(c.Interval, ex.Interval)
	}
	return c
}

// allowedGap is the longest stretch without a scrape when at most lost
// scrapes in a row are missing: lost + 1 intervals, and half an interval
// of slack for timestamp jitter.
func allowedGap(lost int, interval time.Duration) time.Duration {
	return time.Duration(lost+1)*interval + interval/2
}

// MinTime is the earlier of a and b.
func MinTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// MaxTime is the later of a and b.
func MaxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
