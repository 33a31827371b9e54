// Package attack owns sending load and measuring it exactly: the load models
// (closed loop, open loop with coordinated-omission correction, ramping
// stages, breaking-point search), the HTTP client on the hot path, the exact
// per-run HdrHistogram and the loadgen traffic metrics of
// docs/design-notes.md. It knows nothing about plans, cells or manifests: the
// runner drives it one Spec at a time.
package attack

import (
	"net/http"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Labels are the bounded traffic labels every loadgen series carries.
type Labels struct{ Proxy, Origin, Scenario string }

// Mode is the load model.
type Mode string

// Load models.
const (
	Closed Mode = "closed" // N workers, each sends its next request when the previous one completes
	Open   Mode = "open"   // requests are scheduled at a fixed rate whatever the latency
	Stages Mode = "stages" // ramping rate (open) or concurrency (closed), k6 style
)

// Stage kinds (Spec.StageKind).
const (
	StageRate        = "rate"
	StageConcurrency = "concurrency"
)

// Stage ramps linearly from the previous target (0 before the first stage)
// to Target over Duration, k6 style.
type Stage struct {
	Duration time.Duration
	Target   float64
}

// Spec is one attack: what to send, how, and for how long.
type Spec struct {
	URL    string
	Method string // default GET
	Body   []byte
	Header http.Header

	Mode        Mode
	Concurrency int     // closed: workers = connections; open: max in flight (0 = 10000)
	Rate        float64 // open: requests/s

	Stages    []Stage
	StageKind string // "rate" (open loop stages) or "concurrency" (closed loop stages)

	Duration time.Duration // measured part (ignored for Stages: sum of stage durations)
	Warmup   time.Duration // traffic before the window, excluded from Result (but visible in Prometheus counters)
	Timeout  time.Duration // per request, default 10 s

	NewConnPerRequest bool   // default keep-alive pool
	ExpectOrigin      string // responses whose X-Origin differs are counted as WrongOrigin

	Labels Labels
}

// Result is the exact account of the measured window of one attack.
type Result struct {
	WarmupStart, Start, End time.Time // window = [Start, End]: End is when the last measured request completed

	Requests    int64 // completed with an HTTP status
	Errors      int64 // no HTTP status: transport errors
	Bytes       int64 // response body bytes read
	Scheduled   int64 // open loop: intended sends in the window
	Sent        int64 // open loop: actual sends in the window
	WrongOrigin int64

	Codes        map[int]int64
	ErrorReasons map[string]int64

	Hist *hdrhistogram.Histogram // microseconds, 1 µs .. 60 s, 3 significant figures, merged across workers
}

// Progress is a snapshot sent about once a second while an attack runs.
type Progress struct {
	Elapsed          time.Duration
	Requests, Errors int64
	RPS              float64 // over the last interval
	P99              time.Duration
	InFlight         int64
}

// KneeOptions drive the breaking-point search.
type KneeOptions struct {
	StartRate, Step, MaxRate float64
	StepDuration             time.Duration
	P99                      time.Duration // a step breaks when its p99 exceeds this
	MaxErrorRatio            float64       // ... or when errors/(requests+errors) exceeds this
}

// KneeStep is one rate tried by Knee.
type KneeStep struct {
	Rate   float64
	Result *Result
	Held   bool
	Why    string // why it broke, empty when it held
}
