// Package attack owns sending load and measuring it exactly: it runs the
// load models of package load (closed loop, open loop with coordinated-
// omission correction, ramping stages), the one warm-up before a window,
// the breaking-point search, when each request is sent and which window it
// counts in, the exact per-run HdrHistogram and the loadgen traffic metrics
// of docs/design-notes.md. Package wire sends each request. It knows nothing
// about plans, cells or manifests: the runner drives it one Spec at a time.
package attack

import (
	"net/http"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/loadgen/internal/load"
)

// Labels are the bounded traffic labels every loadgen series carries.
type Labels struct{ Proxy, Origin, Scenario string }

// Spec is one attack: what to send, how, and for how long.
type Spec struct {
	URL    string
	Method string // default GET
	Body   []byte
	Header http.Header

	// Load is what is sent over time, and for how long (Load.Window). A
	// warm-up is an attack of its own before this one: see WarmUp.
	Load    load.Model
	Timeout time.Duration // per request, default 10 s: dial, write and the whole response

	// Bounds on one response, 0 = the default. A response whose head
	// (status line and header lines, 1xx interim responses included) or
	// chunked trailers go beyond MaxHeaderBytes, or any line of them beyond
	// 16 KiB, is an error with reason header_too_large; one whose body goes
	// beyond MaxBodyBytes (a larger Content-Length fails at once) is an
	// error with reason body_too_large. Either way its connection is closed.
	MaxHeaderBytes int   // default 64 KiB
	MaxBodyBytes   int64 // default 64 MiB

	NewConnPerRequest bool   // default keep-alive pool
	ExpectOrigin      string // responses whose X-Origin differs are counted as WrongOrigin

	// MaxRate caps the rate at which sends start, in requests/s (0 = no
	// cap), like JMeter's throughput timer: a send is held until the cap
	// allows it (load.Limiter). In closed loop a held send's latency
	// starts when it is sent; in open loop it starts at the intended send
	// time, so the hold shows as latency (coordinated omission corrected).
	// A capped closed loop runs a goroutine per connection, not the event
	// loop.
	MaxRate float64

	Labels Labels

	// OnEdge, when set, is called synchronously from the engine at the two
	// edges of the measured window: end=false at the start, immediately
	// before the first request can be sent, end=true at the planned end,
	// from a timer, before the requests still in flight are drained. at is
	// the edge's time: Result.Start and Result.End. Each edge is called
	// exactly once per Run that starts sending; when ctx ends early, the end
	// edge is called at the cancellation. It must return quickly: the start
	// edge holds up the first requests.
	OnEdge func(end bool, at time.Time)
}

// Result is the exact account of the measured window of one attack. The
// window is planned: [Start, End] with End = Start + the planned duration (or
// the moment ctx ended, if earlier). Requests, Errors, Bytes, WrongOrigin,
// Codes and ErrorReasons count the completions inside it of requests sent
// (closed loop) or due (open loop) at or after Start. Requests still in
// flight at End are drained, bounded by the request timeout: they are
// counted as Late, never in the window's counts, and their latencies are in
// Hist, so a stall at the end shows in latency and rate, never as a longer
// window.
type Result struct {
	Start, End time.Time

	Requests    int64 // completed with an HTTP status inside the window
	Errors      int64 // no HTTP status (transport errors) inside the window
	Bytes       int64 // response body bytes read inside the window
	Scheduled   int64 // open loop: requests due in the window
	Sent        int64 // open loop: requests due in the window and sent in it
	Missed      int64 // open loop: due in the window, never sent (Scheduled - Sent)
	Capped      int64 // open loop: sends of the window that waited because max in flight was reached
	Held        int64 // sends of the window that Spec.MaxRate held (open loop: past their due time)
	WrongOrigin int64

	Codes        map[int]int64
	ErrorReasons map[string]int64

	Late        int64            // completions after End (with a status or an error)
	LateCodes   map[int]int64    // status code -> late completions
	LateReasons map[string]int64 // error reason -> late errors
	DrainEnd    time.Time        // the last late completion; zero when none

	// LagP99 is the open loop's p99 of actual minus intended send time over
	// the window's sends that did not wait for max in flight: the loadgen's
	// own timer and CPU delay (1 µs resolution); sends the MaxRate cap held
	// are left out like capped ones.
	LagP99 time.Duration

	// Hist holds the latencies of the window's responses with a status,
	// late ones included: microseconds, 1 µs .. 60 s, 3 significant
	// figures, merged across workers.
	Hist *hdrhistogram.Histogram
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
	MaxInFlight              int           // every step's open loop: at most this many in flight (0 = load.DefaultMaxInFlight)
	Warmup                   time.Duration // before the first step, at StartRate (WarmUp)
	P99                      time.Duration // a step breaks when its p99 exceeds this
	MaxErrorRatio            float64       // ... or when errors/(requests+errors) exceeds this
}

// KneeStep is one rate tried by Knee.
type KneeStep struct {
	Rate   float64
	Result *Result
	Held   bool
	Why    string // why it broke, empty when it held

	WarmupStart time.Time // the first step: when its warm-up began; zero without one
}
