package manifest

import (
	"fmt"
	"math"
	"time"
)

// Ceiling is the instrument's own ceiling: what the loadgen reaches, closed
// loop at the run's concurrency (and under its max rate cap, if any), against
// a trivial server pinned where the system under test runs (the proxy's CPUs),
// with the loadgen pinned as in the run. A saturation claim near it is the
// instrument's limit, not the proxy's (CeilingFraction).
type Ceiling struct {
	RPS float64 `json:"rps"`
	// Model is the loop measured: CeilingClosed (the run's closed-loop
	// engine at its concurrency) or CeilingOpen (the open-loop engine
	// offered more than it can send).
	Model       string  `json:"model,omitempty"`
	Concurrency int     `json:"concurrency"`
	MaxRate     float64 `json:"max_rate,omitempty"` // the loadgen's -max-rate cap, req/s; 0 = none
	Engine      string  `json:"engine"`             // the loadgen's engine: evloop, netpoll, net-http
	WindowS     float64 `json:"window_s"`
	// WindowRPS is each of the windows measured back to back; RPS is the
	// best of them (the ceiling is the most the instrument can do, and a
	// burst of CPU steal lowers one window, not the instrument).
	WindowRPS   []float64 `json:"window_rps,omitempty"`
	MeasuredAt  time.Time `json:"measured_at"`
	Source      string    `json:"source"`       // CeilingMeasured or CeilingCached
	ServerCPUs  string    `json:"server_cpus"`  // the trivial server's CPU list ("" = every CPU)
	LoadgenCPUs string    `json:"loadgen_cpus"` // the loadgen's CPU list ("" = every CPU)
	// LoadgenQuota is the CPU quota of the loadgen's cgroup, cores (0 =
	// none): the trivial server runs in the same cgroup, under it too.
	LoadgenQuota float64 `json:"loadgen_cpu_quota,omitempty"`
	Loadgen      string  `json:"loadgen_binary"`       // the loadgen binary's SHA-256 (the cache key's)
	Errors       int64   `json:"errors,omitempty"`     // transport errors of the window
	Error        string  `json:"error,omitempty"`      // why it could not be measured; RPS is then 0
	Placement    string  `json:"placement,omitempty"`  // the placement mode: auto, none or custom
	Server       string  `json:"server,omitempty"`     // what the trivial server is
	CacheKey     string  `json:"cache_key,omitempty"`  // what the cached measurement is keyed by
	CacheFile    string  `json:"cache_file,omitempty"` // where it is cached
	CacheMaxAge  float64 `json:"cache_max_age_s,omitempty"`
}

// Ceiling models.
const (
	CeilingClosed = "closed"
	CeilingOpen   = "open"
)

// Ceiling sources.
const (
	CeilingMeasured = "measured" // measured before this run's cells
	CeilingCached   = "cached"   // a recent measurement with the same key
)

// CeilingFraction is how close to the instrument's ceiling a saturation
// claim (a closed loop's goodput, an open loop's offered rate, a knee) may
// come: at or above this share of it the instrument, not the proxy, may be
// the limit.
const CeilingFraction = 0.8

// Near reports whether rps is at or above the share frac of the ceiling
// (CeilingFraction by default), and the reason naming both numbers; false
// for a nil or unmeasured ceiling. what says what rps is, e.g. "goodput" or
// "knee".
func (c *Ceiling) Near(what string, rps, frac float64) (string, bool) {
	if c == nil || !(c.RPS > 0) || !(rps >= frac*c.RPS) {
		return "", false
	}
	if rps > c.RPS {
		return fmt.Sprintf("%s %.0f req/s is above the loadgen's own ceiling %.0f req/s against a trivial server under the same placement (%.0f %%): that measurement understated the instrument (taken while something else held its CPUs), so the instrument may be the limit here too",
			what, rps, c.RPS, math.Round(100*rps/c.RPS)), true
	}
	return fmt.Sprintf("%s %.0f req/s is %.0f %% of the loadgen's own ceiling %.0f req/s against a trivial server under the same placement: the instrument, not the proxy, may be the limit",
		what, rps, math.Round(100*rps/c.RPS), c.RPS), true
}
