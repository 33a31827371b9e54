package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Verdicts, from best to worst.
const (
	Valid   = "valid"
	Suspect = "suspect" // a warning: read the reason before trusting the cell
	Invalid = "invalid" // the numbers do not measure the proxy
)

// Flag codes. README.md documents each.
const (
	FlagFailed        = "failed"
	FlagNoServerSide  = "no_server_side_series"
	FlagLoadgenBound  = "loadgen_bound"
	FlagErrors        = "errors"
	FlagMisrouted     = "misrouted"
	FlagTooFewSamples = "too_few_samples"
	FlagLittle        = "littles_law"
	FlagMissing       = "missing_metrics"
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

// Thresholds tune validity; DefaultThresholds holds the defaults.
type Thresholds struct {
	LoadgenCPUFraction float64 `json:"loadgen_cpu_fraction"` // of its limit
	OpenLoopAchieved   float64 `json:"open_loop_achieved"`   // achieved / offered rate
	ErrorRatio         float64 `json:"error_ratio"`          // above: invalid
	MisroutedShare     float64 `json:"misrouted_share"`      // one non-2xx status this common: misrouted
	MinRequests        int64   `json:"min_requests"`
	MinScrapes         int     `json:"min_scrapes"`
	LittleTolerance    float64 `json:"littles_law_tolerance"` // relative
	LittleMinInFlight  float64 `json:"littles_law_min_in_flight"`
}

// DefaultThresholds are the documented defaults.
var DefaultThresholds = Thresholds{
	LoadgenCPUFraction: 0.9,
	OpenLoopAchieved:   0.95,
	ErrorRatio:         0.01,
	MisroutedShare:     0.9,
	MinRequests:        100,
	MinScrapes:         3,
	LittleTolerance:    0.10,
	LittleMinInFlight:  1,
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
	if !c.ServerSide {
		if c.Requests+c.TransportErrors > 0 {
			add(FlagNoServerSide, Suspect, "Prometheus holds no series for this window: counts and exact percentiles come from the loadgen's manifest alone, resources and GC are unknown")
		} else {
			add(FlagNoServerSide, Invalid, "Prometheus holds no series for this window and the manifest has no counts for it")
		}
	}
	lg := c.LoadgenCPU
	if lg.MeanCores.Known() && lg.LimitCores.Known() && lg.LimitCores > 0 && float64(lg.MeanCores) >= th.LoadgenCPUFraction*float64(lg.LimitCores) {
		add(FlagLoadgenBound, Invalid, "loadgen CPU %.2f of %.2f cores (>= %.0f %%): the load generator, not the proxy, may be the ceiling",
			float64(lg.MeanCores), float64(lg.LimitCores), th.LoadgenCPUFraction*100)
	}
	if c.TargetRateRPS.Known() && c.TargetRateRPS > 0 && c.RPS.Known() && float64(c.RPS) < th.OpenLoopAchieved*float64(c.TargetRateRPS) {
		add(FlagLoadgenBound, Invalid, "open loop achieved %.1f of %.1f offered req/s (< %.0f %%)",
			float64(c.RPS), float64(c.TargetRateRPS), th.OpenLoopAchieved*100)
	}
	if c.ErrorRatio.Known() && float64(c.ErrorRatio) > th.ErrorRatio {
		add(FlagErrors, Invalid, "error ratio %.2f %% > %.2f %% (%s)", 100*float64(c.ErrorRatio), 100*th.ErrorRatio, errorBreakdown(c))
	}
	if code, n := dominantNon2xx(c.Codes); n > 0 && c.Requests > 0 && float64(n) >= th.MisroutedShare*float64(c.Requests) {
		add(FlagMisrouted, Invalid, "%d of %d responses (%.0f %%) were status %s: the route does not reach the origin",
			n, c.Requests, 100*float64(n)/float64(c.Requests), code)
	}
	if c.WrongOrigin > 0 {
		add(FlagMisrouted, Invalid, "%d 2xx responses carried the wrong X-Origin", c.WrongOrigin)
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
			add(FlagLittle, Suspect, "rate x mean latency = %.2f but measured in-flight = %.2f (%.0f %% apart, > %.0f %%): the loadgen may have stalled or the window is off",
				want, float64(c.InFlightMean), dev*100, th.LittleTolerance*100)
		}
	}
	var missing []string
	if c.ServerSide && c.Latency.Source == "" {
		missing = append(missing, "proxybench_request_duration_seconds")
	}
	if !c.ProxyRes.CPUMeanCores.Known() {
		missing = append(missing, "container_cpu_usage_seconds_total")
	}
	if !c.ProxyRes.MemMeanBytes.Known() {
		missing = append(missing, "container_memory_working_set_bytes")
	}
	if !c.LoadgenCPU.MeanCores.Known() {
		missing = append(missing, "process_cpu_seconds_total{job=\"loadgen\"}")
	}
	if goProxy && (c.GC == nil || !c.GC.Cycles.Known()) {
		missing = append(missing, "proxybench_gc_cycles_total")
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

func errorBreakdown(c *Cell) string {
	return fmt.Sprintf("5xx %d, 4xx %d, transport %d", c.Classes.S5xx, c.Classes.S4xx, c.Classes.Transport)
}

// dominantNon2xx returns the most frequent status outside 2xx and 429.
func dominantNon2xx(codes map[string]int64) (string, int64) {
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var best string
	var n int64
	for _, k := range keys {
		if strings.HasPrefix(k, "2") || k == "429" {
			continue
		}
		if codes[k] > n {
			best, n = k, codes[k]
		}
	}
	return best, n
}

// Classify fills the outcome classes and the derived ratios.
func Classify(c *Cell) {
	var cl Classes
	var total int64
	for code, n := range c.Codes {
		total += n
		switch {
		case code == "429":
			cl.S429 += n
		case strings.HasPrefix(code, "2") && len(code) == 3:
			cl.S2xx += n
		case strings.HasPrefix(code, "3") && len(code) == 3:
			cl.S3xx += n
		case strings.HasPrefix(code, "4") && len(code) == 3:
			cl.S4xx += n
		case strings.HasPrefix(code, "5") && len(code) == 3:
			cl.S5xx += n
		default:
			cl.Other += n
		}
	}
	for _, n := range c.ErrorReasons {
		cl.Transport += n
	}
	c.Requests, c.TransportErrors, c.Classes = total, cl.Transport, cl
	attempts := total + cl.Transport
	c.ErrorRatio, c.RateLimitedRatio, c.RPS, c.OKRPS = NaN(), NaN(), NaN(), NaN()
	if attempts > 0 {
		// The same failures as the recording rules (prometheus/README.md): 4xx
		// are counted by class, not as failures, since scenarios ask for 401,
		// 404 and 429 on purpose; a proxy answering 4xx wrongly is flagged
		// misrouted instead.
		c.ErrorRatio = Num(float64(cl.Transport+cl.S5xx+cl.Other) / float64(attempts))
		c.RateLimitedRatio = Num(float64(cl.S429) / float64(attempts))
	}
	if c.DurationS.Known() && c.DurationS > 0 {
		c.RPS = Num(float64(total) / float64(c.DurationS))
		c.OKRPS = Num(float64(cl.S2xx) / float64(c.DurationS))
	}
}
