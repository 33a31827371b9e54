package manifest

import "time"

// Faults is a faults cell's account (docs/faults.md): what the lab did to
// one replica of the pool during the window, on its own clock, the
// window's completions in bins as the loadgen saw them, and what each
// fault cost.
type Faults struct {
	// Replica is the container faulted (the pool's second replica); Pool
	// the services behind the proxy's faults route.
	Replica string   `json:"replica"`
	Pool    []string `json:"pool"`
	// Unavailable says why no fault was injected (no Docker, no replica).
	Unavailable string `json:"unavailable,omitempty"`
	// Log is every fault injected, in order: what the lab did and when.
	Log []FaultEvent `json:"log"`
	// Timeline is the window in bins of BinS seconds from the cell's
	// start, by completion time.
	BinS     float64       `json:"bin_seconds"`
	Timeline FaultTimeline `json:"timeline"`
	// SteadyP99S is the p99 of the answers completed before the first
	// fault; RecoveryThresholdS the bin p99 a recovered bin stays at or
	// under (the larger of RecoveryFactor × SteadyP99S and SteadyP99S + RecoveryFloor); 0 when nothing completed.
	SteadyP99S         float64 `json:"steady_p99_seconds"`
	RecoveryThresholdS float64 `json:"recovery_threshold_seconds"`
	// Results is what each fault of Log cost, in the same order.
	Results []FaultResult `json:"results"`
	// Retries is the proxy's own count of retried requests over the cell
	// (its RetriesSeries, read before and after the window); nil with
	// RetriesNA saying why when the proxy counts none or it could not be read.
	Retries       *int64 `json:"retries,omitempty"`
	RetriesSeries string `json:"retries_series,omitempty"`
	RetriesNA     string `json:"retries_na,omitempty"`
}

// FaultEvent is one fault the lab injected: Kind into Replica, asked at
// Start (the fault may act from then) and confirmed by the engine at
// Applied; ended by asking at End, confirmed at Restored (the replica back
// for sure). Planned* are the schedule's fractions of the window. Error
// says what failed when the engine refused a step.
type FaultEvent struct {
	Kind        string    `json:"kind"` // kill, pause, 503
	Replica     string    `json:"replica"`
	PlannedFrom float64   `json:"planned_from"` // fraction of the window
	PlannedTo   float64   `json:"planned_to"`
	Start       time.Time `json:"start"`
	Applied     time.Time `json:"applied"`
	End         time.Time `json:"end"`
	Restored    time.Time `json:"restored"`
	Error       string    `json:"error,omitempty"`
}

// FaultTimeline is the window's completions in bins: per bin the answers
// with a status, the failures among all completions (transport errors
// and statuses outside 2xx) and the answers' p99 (0 in a bin without
// answers). The slices have one entry per bin.
type FaultTimeline struct {
	Requests []int64   `json:"requests"`
	Failed   []int64   `json:"failed"`
	P99S     []float64 `json:"p99_seconds"`
}

// FaultResult is what one fault cost, measured from the loadgen's own
// completions (docs/faults.md has each definition).
type FaultResult struct {
	Kind string `json:"kind"`
	// SpanS is how long the fault's span is: from its Start to the next
	// fault's Start or the window's end, seconds.
	SpanS float64 `json:"span_seconds"`
	// Failed counts the failures completed in the span (transport errors
	// and statuses outside 2xx); TimedOut the timeouts among them and
	// Status5xx the 5xx answers.
	Failed    int64 `json:"failed"`
	TimedOut  int64 `json:"timed_out"`
	Status5xx int64 `json:"status_5xx"`
	// FirstFailureS and LastFailureS are the span's first and last failure
	// after Start, seconds; nil without failures.
	FirstFailureS *float64 `json:"first_failure_seconds,omitempty"`
	LastFailureS  *float64 `json:"last_failure_seconds,omitempty"`
	// DetectionS is the time from Start until failures stopped (the last
	// failure before the replica came back); nil with Detection saying why
	// (no failure at all, or failures until the replica came back).
	DetectionS *float64 `json:"detection_seconds,omitempty"`
	Detection  string   `json:"detection,omitempty"`
	// RecoveryS is the time from Restored until the bins' p99 is back at or
	// under the threshold and stays so; nil with Recovery saying why.
	RecoveryS *float64 `json:"recovery_seconds,omitempty"`
	Recovery  string   `json:"recovery,omitempty"`
}
