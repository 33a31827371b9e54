package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/metricdefs"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
)

// Verdicts, from best to worst.
const (
	Valid   = "valid"
	Suspect = "suspect" // a warning: read the reason before trusting the cell
	Invalid = "invalid" // the numbers do not measure the proxy
)

// Flag codes. README.md documents each, with its formula and the test
// that makes it fire.
const (
	FlagFailed           = "failed"
	FlagNoServerSide     = "no_server_side_series"
	FlagPrometheusGap    = "prometheus_gap"
	FlagLoadgenBound     = "loadgen_bound"
	FlagSUTSaturated     = "sut_saturated"
	FlagErrors           = "errors"
	FlagLateErrors       = "late_errors"
	FlagUnexpectedStatus = "unexpected_status"
	FlagMisrouted        = "misrouted"
	FlagTooFewSamples    = "too_few_samples"
	FlagLittle           = "littles_law"
	FlagMissing          = "missing_metrics"
	FlagContended        = "contended"
	FlagCeiling          = "instrument_ceiling"
)

// Validity is a cell's verdict and every reason for it.
type Validity struct {
	Verdict string `json:"verdict"`
	Flags   []Flag `json:"flags,omitempty"`
}

// Flag is one finding.
type Flag struct {
	Code     string `json:"code"`
	Severity string `json:"severity"` // suspect or invalid
	Reason   string `json:"reason"`
}

// Thresholds tune validity; DefaultThresholds holds the defaults. Shares
// are fractions (0.01 = 1 %).
type Thresholds struct {
	LoadgenCPUFraction     float64 `json:"loadgen_cpu_fraction"`      // window mean CPU / capacity at or above: loadgen_bound
	LoadgenCPUPeakFraction float64 `json:"loadgen_cpu_peak_fraction"` // 1-s peak CPU / capacity at or above: loadgen_bound
	LoadgenThrottledShare  float64 `json:"loadgen_throttled_share"`   // throttled periods / periods above: loadgen_bound
	LoadgenRunDelayShare   float64 `json:"loadgen_run_delay_share"`   // run delay / (duration x capacity) above: suspect
	LoadgenPressureShare   float64 `json:"loadgen_pressure_share"`    // PSI some / duration above: suspect
	OpenLoopLagP99         float64 `json:"open_loop_lag_p99_seconds"` // lag p99 above: suspect
	OpenLoopAchieved       float64 `json:"open_loop_achieved"`        // sent / scheduled below: loadgen_bound
	OpenLoopMissed         float64 `json:"open_loop_missed_share"`    // missed / scheduled above: loadgen_bound
	CappedShare            float64 `json:"open_loop_capped_share"`    // capped / sent above: sut_saturated
	ErrorRatio             float64 `json:"error_ratio"`               // above: invalid
	LateErrorShare         float64 `json:"late_error_share"`          // late errors / (attempts + late) above: invalid (late_errors)
	UnexpectedStatus       float64 `json:"unexpected_status_share"`   // non-expected, non-5xx responses / responses above: invalid
	MisroutedShare         float64 `json:"misrouted_share"`           // one non-expected status this common: misrouted
	MinRequests            int64   `json:"min_requests"`
	MinScrapes             int     `json:"min_scrapes"`
	LittleTolerance        float64 `json:"littles_law_tolerance"` // relative
	LittleMinInFlight      float64 `json:"littles_law_min_in_flight"`
	CeilingFraction        float64 `json:"instrument_ceiling_fraction"` // closed-loop goodput or open-loop offered rate / the run's instrument ceiling at or above: instrument_ceiling
	ContentionThresholds           // contended (contention.go)
}

// DefaultThresholds are the documented defaults.
var DefaultThresholds = Thresholds{
	LoadgenCPUFraction:     0.9,
	LoadgenCPUPeakFraction: 0.98,
	LoadgenThrottledShare:  0.10,
	LoadgenRunDelayShare:   0.10,
	LoadgenPressureShare:   0.25,  // PSI is the whole host's (or the loadgen's cgroup's): at 10 % an idle 2-core host with Prometheus and the exporter already reaches it
	OpenLoopLagP99:         0.010, // an idle loadgen on a 2-core VM measured 1.5-7.8 ms p99 at 200-300 req/s (timer wake-ups, not CPU)
	OpenLoopAchieved:       0.95,
	OpenLoopMissed:         0.01,
	CappedShare:            0.01,
	ErrorRatio:             0.01,
	LateErrorShare:         0.001,
	UnexpectedStatus:       0.001,
	MisroutedShare:         0.9,
	MinRequests:            100,
	MinScrapes:             3,
	LittleTolerance:        0.10,
	LittleMinInFlight:      1,
	CeilingFraction:        manifest.CeilingFraction,
	ContentionThresholds:   DefaultContention,
}

// Judge sets c.Validity from the cell's numbers.
func Judge(c *Cell, th Thresholds, goProxy bool) {
	var fl []Flag
	add := func(code, sev, format string, a ...any) {
		fl = append(fl, Flag{Code: code, Severity: sev, Reason: fmt.Sprintf(format, a...)})
	}
	if c.Failed {
		add(FlagFailed, Invalid, "the loadgen marked this cell failed or aborted, or never published its end")
	}
	gap := c.PrometheusGap
	switch {
	case gap == nil:
	case gap.OutcomeUnknown:
		add(FlagPrometheusGap, Invalid, "outcome unknown: Prometheus missed the end of this window and there is no manifest")
	case gap.Loadgen != nil || gap.Exporter != nil || len(gap.Workers) > 0:
		sev, why := gapReason(c, gap, goProxy)
		add(FlagPrometheusGap, sev, "%s", why)
	}
	// A gap in the loadgen's scrapes (or a worker's) says why the traffic
	// series are not used; no second flag for it.
	lgGap := gap != nil && (gap.loadgen() || gap.OutcomeUnknown)
	exGap := gap != nil && gap.Exporter != nil
	if !c.ServerSide && !lgGap {
		if c.Requests+c.TransportErrors > 0 {
			add(FlagNoServerSide, Suspect, "Prometheus holds no series for this window: counts and exact percentiles come from the loadgen's manifest alone, resources and GC are unknown")
		} else {
			add(FlagNoServerSide, Invalid, "Prometheus holds no series for this window and the manifest has no counts for it")
		}
	}
	judgeBottleneck(c)
	judgeLoadgen(c, th, add)
	judgeWorkers(c, th, add)
	judgeCeiling(c, th, add)
	judgeContention(c, th.ContentionThresholds, add)
	if c.ErrorRatio.Known() && float64(c.ErrorRatio) > th.ErrorRatio {
		add(FlagErrors, Invalid, "error ratio %.2f %% > %.2f %% (%s)", 100*float64(c.ErrorRatio), 100*th.ErrorRatio, errorBreakdown(c))
	}
	// Requests that failed after the window (a timeout of one never
	// answered) are in no window count and no latency percentile: the
	// cell's numbers leave them out.
	if c.LateErrorRatio.Known() && float64(c.LateErrorRatio) > th.LateErrorShare {
		add(FlagLateErrors, Invalid, "%d requests failed after the window (%.2f %% of attempts > %s: %s); the window's error ratio and latency percentiles leave them out",
			c.LateErrors, 100*float64(c.LateErrorRatio), Pct(th.LateErrorShare), lateBreakdown(c))
	}
	routeBroken := false
	if code, n := dominantUnexpected(c.Codes, c.Expected); n > 0 && c.Requests > 0 && float64(n) >= th.MisroutedShare*float64(c.Requests) {
		routeBroken = true
		add(FlagMisrouted, Invalid, "%d of %d responses (%.0f %%) were status %s, outside the expected %s: the route does not reach the origin",
			n, c.Requests, 100*float64(n)/float64(c.Requests), code, strings.Join(c.Expected, ", "))
	}
	if c.WrongOrigin > 0 {
		add(FlagMisrouted, Invalid, "%d 2xx responses carried the wrong X-Origin", c.WrongOrigin)
	}
	// A broken route already says it all; 5xx are failures, judged by errors.
	if un := unexpectedNon5xx(c); !routeBroken && un.n > 0 && c.Requests > 0 && float64(un.n) > th.UnexpectedStatus*float64(c.Requests) {
		add(FlagUnexpectedStatus, Invalid, "%s of %d (%.1f %%) responses are outside the expected %s (> %s): they are not the scenario's answers, so the cell does not measure it",
			un.list, c.Requests, 100*float64(un.n)/float64(c.Requests), strings.Join(c.Expected, ", "), Pct(th.UnexpectedStatus))
	}
	// An expected status given to the wrong request (a 401 to a valid
	// key, a 429 under the limit) is no answer of the scenario either.
	if w := c.WrongAnswers; w > 0 && c.Requests > 0 && float64(w) > th.UnexpectedStatus*float64(c.Requests) {
		add(FlagUnexpectedStatus, Invalid, "%d of %d (%.1f %%) responses were %s (> %s): wrong answers, not counted as goodput",
			w, c.Requests, 100*float64(w)/float64(c.Requests), scenario.WrongWhat(c.Scenario), Pct(th.UnexpectedStatus))
	}
	if c.ServerSide && c.Requests+c.TransportErrors < th.MinRequests {
		add(FlagTooFewSamples, Invalid, "%d attempts (< %d)", c.Requests+c.TransportErrors, th.MinRequests)
	}
	if c.ServerSide && c.Scrapes < th.MinScrapes {
		add(FlagTooFewSamples, Invalid, "%d scrapes inside the window (< %d): percentiles and means rest on too few points", c.Scrapes, th.MinScrapes)
	}
	if c.RPS.Known() && c.Latency.Mean.Known() && c.InFlightMean.Known() && float64(c.InFlightMean) >= th.LittleMinInFlight {
		want := float64(c.RPS) * float64(c.Latency.Mean)
		dev := math.Abs(want-float64(c.InFlightMean)) / float64(c.InFlightMean)
		if dev > th.LittleTolerance {
			add(FlagLittle, Suspect, "in-window rate x mean latency = %.2f but measured in-flight = %.2f (%.0f %% apart, > %.0f %%): the loadgen may have stalled or the window is off",
				want, float64(c.InFlightMean), dev*100, th.LittleTolerance*100)
		}
	}
	var missing []string
	if c.ServerSide && c.Latency.Source == "" {
		missing = append(missing, metricdefs.RequestDuration.Name)
	}
	// The exporter's series a gap in its scrapes left unknown are named by
	// prometheus_gap.
	// The direct control has no proxy container: no proxy CPU or memory.
	noProxy := stack.IsDirect(c.Proxy)
	if !c.ProxyRes.CPUMeanCores.Known() && !exGap && !noProxy {
		missing = append(missing, metricdefs.ContainerCPUUsage.Name)
	}
	if !c.ProxyRes.MemMeanBytes.Known() && !exGap && !noProxy {
		missing = append(missing, metricdefs.ContainerMemoryWorkingSet.Name)
	}
	if !c.LoadgenCPU.MeanCores.Known() {
		missing = append(missing, metricdefs.ProcessCPU.Name+`{job="loadgen"}`)
	}
	if goProxy && (c.GC == nil || !c.GC.Cycles.Known()) && !exGap {
		missing = append(missing, metricdefs.GCCycles.Name)
	}
	if len(missing) > 0 && c.ServerSide {
		add(FlagMissing, Suspect, "no series for %s in this window", strings.Join(missing, ", "))
	}
	c.Validity = Validity{Verdict: Valid, Flags: fl}
	for _, f := range fl {
		if f.Severity == Invalid {
			c.Validity.Verdict = Invalid
			break
		}
		c.Validity.Verdict = Suspect
	}
}

// gapReason words prometheus_gap for a cell whose loadgen or exporter
// scrapes fell short: the evidence, where the numbers come from instead,
// and what is unknown. Suspect while the manifest supplies the counts of a
// loadgen gap; invalid when nothing does.
func gapReason(c *Cell, g *Gap, goProxy bool) (string, string) {
	var ev []string
	for _, s := range append(append([]*ScrapeCoverage{g.Loadgen}, g.Workers...), g.Exporter) {
		if s != nil {
			ev = append(ev, scrapeEvidence(s))
		}
	}
	sev := Suspect
	var then []string
	if g.loadgen() {
		if c.Requests+c.TransportErrors > 0 {
			from := []string{"counts"}
			if c.Latency.Exact != nil {
				from = append(from, "exact latency")
			}
			if c.ProxyRes.CPUSource == ProxyCPUEdges || c.LoadgenCPU.Source == LoadgenCPUEdges {
				from = append(from, "edge CPU")
			}
			then = append(then, AndList(from)+" come from the manifest")
		} else {
			sev = Invalid
			then = append(then, "no manifest holds its counts, so the cell has none")
		}
	}
	var unknown []string
	if !c.ProxyRes.CPUMeanCores.Known() && !stack.IsDirect(c.Proxy) {
		unknown = append(unknown, "proxy CPU")
	}
	if !c.ProxyRes.MemMeanBytes.Known() && !stack.IsDirect(c.Proxy) {
		unknown = append(unknown, "memory")
	}
	if goProxy && (c.GC == nil || !c.GC.Cycles.Known()) {
		unknown = append(unknown, "GC")
	}
	if g.loadgen() {
		unknown = append(unknown, "in-flight")
	}
	switch len(unknown) {
	case 0:
	case 1:
		then = append(then, unknown[0]+" is unknown")
	default:
		then = append(then, AndList(unknown)+" are unknown")
	}
	return sev, "Prometheus scraped " + strings.Join(ev, " and ") + ": " + strings.Join(then, "; ")
}

// loadgen says whether the gap is in the scrapes of the traffic's
// senders: the loadgen or one of its workers.
func (g *Gap) loadgen() bool { return g.Loadgen != nil || len(g.Workers) > 0 }

// scrapeEvidence is "the loadgen 0 times between 10:01:02 and 10:01:09
// (expected about 7; ...)" ("the loadgen worker 1 ..."), naming every
// check that failed.
func scrapeEvidence(s *ScrapeCoverage) string {
	clock := func(t time.Time) string { return t.UTC().Format("15:04:05") }
	secs := func(n Num) string { return strconv.FormatFloat(math.Round(float64(n)*10)/10, 'f', -1, 64) }
	why := []string{fmt.Sprintf("expected about %d", s.Expected)}
	// A stretch without scrapes too long to allow also says there was none
	// before the baseline or after the traffic, when it covers those.
	long := float64(s.GapS) > float64(s.AllowedGapS)
	covers := func(from, to time.Time) bool { return long && !s.GapFrom.After(from) && !s.GapTo.Before(to) }
	baseFrom := s.From.Add(-time.Duration(float64(s.BaselineS) * float64(time.Second)))
	if !s.Baseline && !covers(baseFrom, s.From) {
		why = append(why, fmt.Sprintf("none in the %s s before %s", secs(s.BaselineS), clock(s.From)))
	}
	if !s.After && !covers(s.AfterFrom, s.To) {
		why = append(why, fmt.Sprintf("none between %s and %s", clock(s.AfterFrom), clock(s.To)))
	}
	if long {
		why = append(why, fmt.Sprintf("%s s without one from %s to %s, > %s s", secs(s.GapS), clock(s.GapFrom), clock(s.GapTo), secs(s.AllowedGapS)))
	}
	name := s.Job
	if s.Worker != nil {
		name = fmt.Sprintf("loadgen worker %d", *s.Worker)
	}
	return fmt.Sprintf("the %s %d times between %s and %s (%s)", name, s.Scrapes, clock(s.From), clock(s.To), strings.Join(why, "; "))
}

// AndList joins "a", "a and b", "a, b and c".
func AndList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// judgeLoadgen tells a loadgen that could not keep up (loadgen_bound:
// invalid on CPU or open-loop evidence, suspect on scheduling delay) from
// a proxy that could not take the offered rate (sut_saturated).
func judgeLoadgen(c *Cell, th Thresholds, add func(code, sev, format string, a ...any)) {
	lg := c.LoadgenCPU
	// A share of the loadgen's above its threshold: the format takes the
	// share and the threshold in percent.
	share := func(v Num, limit float64, sev, format string) {
		if v.Known() && float64(v) > limit {
			add(FlagLoadgenBound, sev, format, 100*float64(v), Pct(limit))
		}
	}
	if lg.LimitCores.Known() && lg.LimitCores > 0 {
		for _, u := range []struct {
			what  string
			cores Num
			frac  float64
			why   string
		}{{"mean", lg.MeanCores, th.LoadgenCPUFraction, "the load generator, not the proxy, may be the ceiling"},
			{"1-s peak", lg.PeakCores, th.LoadgenCPUPeakFraction, "the load generator ran out of CPU for at least a second"}} {
			if u.cores.Known() && float64(u.cores) >= u.frac*float64(lg.LimitCores) {
				add(FlagLoadgenBound, Invalid, "loadgen CPU %s %.3g of %.3g cores of capacity (%.0f %%, >= %s): %s",
					u.what, float64(u.cores), float64(lg.LimitCores), 100*float64(u.cores/lg.LimitCores), Pct(u.frac), u.why)
			}
		}
	}
	share(lg.ThrottledShare, th.LoadgenThrottledShare, Invalid, "loadgen cgroup throttled in %.1f %% of its CPU periods (> %s): its CPU quota stalled it")
	capped := c.Capped.Known() && c.Sent > 0 && float64(c.Capped) > th.CappedShare*float64(c.Sent)
	// Achieved is what the loadgen sent of what it scheduled: the
	// instrument's own rate, whatever the answers' latency (a request
	// sent on time and answered after the window is not the loadgen's
	// shortfall). Completions per second only when the counts are not
	// recorded.
	switch {
	case c.Scheduled > 0:
		if float64(c.Sent) < th.OpenLoopAchieved*float64(c.Scheduled) && !capped {
			add(FlagLoadgenBound, Invalid, "open loop sent %d of %d scheduled requests (%.1f %%, < %s)",
				c.Sent, c.Scheduled, 100*float64(c.Sent)/float64(c.Scheduled), Pct(th.OpenLoopAchieved))
		}
	case c.TargetRateRPS.Known() && c.TargetRateRPS > 0 && c.DurationS.Known() && c.DurationS > 0:
		achieved := float64(c.Requests+c.TransportErrors) / float64(c.DurationS)
		if achieved < th.OpenLoopAchieved*float64(c.TargetRateRPS) && !capped {
			add(FlagLoadgenBound, Invalid, "open loop achieved %.1f of %.1f offered req/s (%.1f %%, < %s; the loadgen recorded no scheduled count)",
				achieved, float64(c.TargetRateRPS), 100*achieved/float64(c.TargetRateRPS), Pct(th.OpenLoopAchieved))
		}
	}
	// Sends due inside the window and not sent in it: missed (never sent)
	// or queued past its end (sent after it, their latency from the due
	// time). Beyond OpenLoopMissed of the schedule the cell did not offer
	// its rate: the loadgen's failing, or the proxy's when it held every
	// worker (capped).
	missed, queued := int64(0), int64(0)
	if c.Missed.Known() {
		missed = int64(c.Missed)
	}
	if c.Queued.Known() {
		queued = int64(c.Queued)
	}
	saturated := false
	if late := missed + queued; c.Scheduled > 0 && float64(late) > th.OpenLoopMissed*float64(c.Scheduled) {
		switch {
		case capped:
			saturated = true
			add(FlagSUTSaturated, Invalid, "%d of %d scheduled sends (%.1f %%, > %s) were still queued at the window's end, max in flight (%d) reached: %d sent after it (in the latency, from their intended time), %d never sent; the proxy could not take the offered rate",
				late, c.Scheduled, 100*float64(late)/float64(c.Scheduled), Pct(th.OpenLoopMissed), c.Concurrency, queued, missed)
		case queued == 0:
			add(FlagLoadgenBound, Invalid, "open loop missed %d of %d scheduled sends (%.1f %%, > %s): they were due inside the window and never sent",
				late, c.Scheduled, 100*float64(late)/float64(c.Scheduled), Pct(th.OpenLoopMissed))
		default:
			add(FlagLoadgenBound, Invalid, "open loop did not send %d of %d scheduled sends inside the window (%.1f %%, > %s): %d sent after its end, %d never sent",
				late, c.Scheduled, 100*float64(late)/float64(c.Scheduled), Pct(th.OpenLoopMissed), queued, missed)
		}
	}
	// Run delay says sends may be late; an open loop measures how late
	// they were (the lag), the direct reading, which wins. On a small
	// host a timer-driven loadgen at 1000 req/s waits about 10 % of its
	// capacity in run queues with its lag p99 at 2-7 ms.
	// A proxy-bound closed loop measured the proxy's capacity: the
	// loadgen's waits did not limit it.
	if !lg.LagP99Seconds.Known() && c.Bottleneck.Who != BottleneckProxy {
		share(lg.RunDelayShare, th.LoadgenRunDelayShare, Suspect,
			"loadgen threads waited for a CPU %.1f %% of the window's capacity (run delay, > %s): its sends may be late")
	}
	if c.Bottleneck.Who != BottleneckProxy {
		share(lg.PressureShare, th.LoadgenPressureShare, Suspect,
			"CPU pressure (PSI some, of the loadgen's cgroup or the whole host) %.1f %% of the window (> %s): tasks waited for a CPU")
	}
	if lg.LagP99Seconds.Known() && float64(lg.LagP99Seconds) > th.OpenLoopLagP99 {
		add(FlagLoadgenBound, Suspect, "open-loop send lag p99 %.3g ms (> %.3g ms): the loadgen's own timers or CPU delayed its sends",
			1e3*float64(lg.LagP99Seconds), 1e3*th.OpenLoopLagP99)
	}
	if capped && !saturated {
		add(FlagSUTSaturated, Suspect, "max in flight (%d) was reached for %.1f %% of sends (%d of %d, > %s): the proxy could not take the offered rate; latency includes the wait (coordinated omission corrected)",
			c.Concurrency, 100*float64(c.Capped)/float64(c.Sent), int64(c.Capped), c.Sent, Pct(th.CappedShare))
	}
}

// CeilingClaim is what a cell claims against the instrument's ceiling: a
// closed loop's goodput (the most it got), an open loop's offered rate
// (what it says the proxy took).
func (c *Cell) CeilingClaim() (what string, rps Num) {
	if c.TargetRateRPS.Known() && c.TargetRateRPS > 0 {
		return "open-loop offered rate", c.TargetRateRPS
	}
	return "closed-loop goodput", c.GoodputRPS
}

// judgeCeiling holds a cell's saturation claim against the instrument's own
// ceiling (the loadgen against a trivial server under the same placement,
// manifest.Ceiling): a closed loop's goodput is the most it got, an open
// loop's offered rate what it claims the proxy took; at or above
// CeilingFraction of the ceiling the instrument may be the limit.
func judgeCeiling(c *Cell, th Thresholds, add func(code, sev, format string, a ...any)) {
	// The ceiling is measured against a trivial server without the
	// origin; where the origin shares the loadgen's CPUs, their
	// saturation is the lab's limit whatever that measurement said.
	if c.LabBound() {
		add(FlagCeiling, Suspect, "the lab limited the cell, not the proxy: %s", c.Bottleneck.Reason)
	}
	if !c.CeilingRPS.Known() || c.CeilingRPS <= 0 {
		return
	}
	ceil := &manifest.Ceiling{RPS: float64(c.CeilingRPS)}
	what, rps := c.CeilingClaim()
	if !rps.Known() {
		return
	}
	if why, near := ceil.Near(what, float64(rps), th.CeilingFraction); near {
		add(FlagCeiling, Invalid, "%s", why)
	}
}

// Pct renders a share as a percentage without trailing zeros, as the flag
// reasons and the report's list of checks state thresholds.
func Pct(x float64) string { return fmt.Sprintf("%.4g %%", 100*x) }

// FormatP renders a p-value to 3 decimals, "< 0.001" below, "n/a" when
// unknown (untested).
func FormatP(p float64) string {
	switch {
	case math.IsNaN(p):
		return "n/a"
	case p < 0.001:
		return "< 0.001"
	}
	return fmt.Sprintf("%.3f", p)
}

// SignedPct renders a relative change with its sign and one decimal,
// "+2.6 %" or "-31.1 %"; "–" when unknown.
func SignedPct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf("%+.1f %%", 100*x)
}
