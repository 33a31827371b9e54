package manifest

import "time"

// Worker statuses (Worker.Status).
const (
	WorkerOK     = "ok"     // ran its window and sent its result
	WorkerFailed = "failed" // died or failed: Reason says how, its data are lost or partial
)

// Worker is one loadgen worker's part of a cell that several ran as one
// instrument (loadgen run -loadgens N): the cell's counts and latency are
// the exact merge of theirs, and its validity is judged once on the merge;
// this is each one's own account. Times are on the clock of the loadgen
// that wrote the manifest (the coordinator).
type Worker struct {
	Index int    `json:"index"` // its segment of the load, the value of its series' worker label
	Host  string `json:"host,omitempty"`
	Pid   int    `json:"pid,omitempty"`

	Status string `json:"status"`           // WorkerOK or WorkerFailed
	Reason string `json:"reason,omitempty"` // why it failed, naming it

	// Concurrency and Rate are its segment: its connections (closed loop)
	// or most in flight (open loop), and its share of the offered rate.
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate_rps,omitempty"`

	// ClockOffsetS is its clock minus the coordinator's (NTP-style, over
	// the round trip of least delay), within ± ClockOffsetBoundS (half
	// that round trip); BarrierSkewS is when its window began minus the
	// start barrier, on the coordinator's clock.
	ClockOffsetS      float64 `json:"clock_offset_seconds"`
	ClockOffsetBoundS float64 `json:"clock_offset_bound_seconds"`
	BarrierSkewS      float64 `json:"barrier_skew_seconds"`

	// Its window and counts, as the cell's (nothing when it sent no result).
	Start     *time.Time `json:"start,omitempty"`
	End       *time.Time `json:"end,omitempty"`
	Requests  int64      `json:"requests"`
	Errors    int64      `json:"errors"`
	Late      int64      `json:"late,omitempty"`
	Scheduled int64      `json:"scheduled,omitempty"`
	Sent      int64      `json:"sent,omitempty"`
	Missed    int64      `json:"missed,omitempty"`
	Queued    int64      `json:"queued,omitempty"`
	Capped    int64      `json:"capped,omitempty"`
	LagP99S   float64    `json:"lag_p99_seconds,omitempty"`
	Latency   Latency    `json:"latency"` // its exact HdrHistogram's percentiles (the cell's is the merge)
	// Histogram is that HdrHistogram itself (latency in µs), in
	// HdrHistogram's V2 compressed encoding, base64 ("HISTF..."), which
	// HdrHistogram's libraries decode: the cell's latency is the merge of
	// its workers' histograms, and anyone can merge them again.
	Histogram string `json:"histogram,omitempty"`

	// Loadgen is the worker process's CPU capacity and use over its window;
	// its role in the cell's contention is the Contention role with its
	// index (RoleContention.Worker).
	Loadgen *LoadgenCPU `json:"loadgen,omitempty"`
}
