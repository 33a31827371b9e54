// Package attack owns sending load and measuring it exactly: it runs the
// load models of package load (closed loop, open loop with coordinated-
// omission correction, ramping stages), the one warm-up before a window,
// the breaking-point search, when each request is sent and which window it
// counts in, the exact per-run HdrHistogram and the loadgen traffic metrics
// of docs/design-notes.md. Package wire sends each request. It knows nothing
// about plans or cells: the runner drives it one Spec at a time. Its Result
// carries three of the manifest's record types (manifest.TLS,
// manifest.LoadgenCPU, manifest.RoleContention), filled here so that the
// runner writes them as they are.
package attack

import (
	"crypto/x509"
	"net/http"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/internal/reqsample"
	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/wire"
)

// Proto is the protocol an attack speaks (package wire's).
type Proto = wire.Proto

// The protocols of Spec.Proto.
const (
	ProtoH1  = wire.ProtoH1  // HTTP/1.1 over TCP, http:// URLs
	ProtoTLS = wire.ProtoTLS // HTTP/1.1 over TLS (ALPN http/1.1), https:// URLs
	ProtoH2  = wire.ProtoH2  // HTTP/2 over TLS (ALPN h2), https:// URLs
	ProtoH3  = wire.ProtoH3  // HTTP/3 over QUIC (ALPN h3), https:// URLs
)

// TLSSettings are the client side of an attack's TLS (Proto tls, h2, h3).
type TLSSettings struct {
	// CAFile is a PEM file of the CAs to trust; "" = DefaultCAFile (the
	// lab CA of internal/tlscert) when it exists, else the system roots.
	CAFile string
	// RootCAs, when set, is trusted instead of CAFile.
	RootCAs *x509.CertPool
	// MinVersion and MaxVersion bound the versions offered
	// (tls.VersionTLS12, tls.VersionTLS13); 0 = 1.2 and 1.3. A server
	// that refuses them fails the handshake (HandshakeVersion).
	MinVersion, MaxVersion uint16
	// ServerName is the SNI and the name the certificate must carry; ""
	// = the URL's host.
	ServerName string
	// DisableResumption makes every handshake full: no session cache.
	// By default the attack's connections share one session cache, so
	// every connection after the first resumes its session (TLS 1.3
	// tickets, 1.2 tickets or IDs): with NewConnPerRequest the two
	// settings measure the full and the resumed handshake.
	DisableResumption bool
}

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

	NewConnPerRequest bool // default keep-alive pool

	// Proto is the protocol spoken: "" = h1 for http:// URLs, tls for
	// https:// ones; h2 and h3 need https://. The client offers only the
	// protocol's ALPN ID and fails a handshake that selects another
	// (reason tls, handshake result alpn_mismatch).
	Proto Proto
	// Streams is, for h2 and h3, how many requests each connection
	// carries at once (0 = 1): the load model's connections (closed
	// loop) or max in flight (open loop) count connections, and the
	// attack runs Streams workers on each, so a closed loop of C
	// connections keeps C x Streams requests in flight. h1 and tls take
	// none (a connection carries one request at a time).
	Streams      int
	TLS          TLSSettings
	ExpectOrigin string // responses whose X-Origin differs are counted as WrongOrigin

	// MaxRate caps the rate at which sends start, in requests/s (0 = no
	// cap), like JMeter's throughput timer: a send is held until the cap
	// allows it (load.Limiter). In closed loop a held send's latency
	// starts when it is sent; in open loop it starts at the intended send
	// time, so the hold shows as latency (coordinated omission corrected).
	// A capped closed loop runs a goroutine per connection, not the event
	// loop.
	MaxRate float64

	// NoDrain stops an open loop's sends at the window's end: what is still
	// queued then is missed, not sent after it. For probes of capacity
	// (the instrument ceiling, the knee), whose answer is what the window
	// took and whose offered rate may far exceed it; a measured cell
	// drains, so that its latency includes the queue.
	NoDrain bool

	Labels Labels

	// SampleRequests keeps a bounded sample of the window's requests with
	// their send and completion times on the host's wall clock
	// (Result.Samples, package reqsample), to join them with events of
	// other clocks, such as a Go proxy's GC cycles.
	SampleRequests bool

	// StartAt, when set, is when the window begins: the attack sets up
	// (its connections, for the loops that own theirs) and then waits for
	// it before the first send. Several loadgen workers given one barrier
	// start together so (package fleet). Zero, or a moment passed: at once.
	StartAt time.Time

	// OnEdge, when set, is called synchronously from the engine at the two
	// edges of the measured window: end=false at the start, immediately
	// before the first request can be sent, end=true at the planned end,
	// from a timer, before the requests still in flight are drained. at is
	// the edge's time: Result.Start and Result.End. Each edge is called
	// exactly once per Run that starts sending; when ctx ends early, the end
	// edge is called at the cancellation. It must return quickly: the start
	// edge holds up the first requests.
	OnEdge func(end bool, at time.Time)

	// Split, when set, also sorts the window's completions into parts
	// (Result.Parts): a sliced duet's arms, measured in one window, or a
	// faults cell's bins (a PartObserver too: it sees every completion).
	Split Splitter
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

	// Protocol is what was spoken (Spec.Proto resolved); TLS is what the
	// attack's handshakes negotiated and how they went, nil for h1.
	Protocol Proto
	TLS      *manifest.TLS

	Requests    int64 // completed with an HTTP status inside the window
	Errors      int64 // no HTTP status (transport errors) inside the window
	Bytes       int64 // response body bytes read inside the window
	Scheduled   int64 // open loop: requests due in the window
	Sent        int64 // open loop: requests due in the window and sent in it
	Missed      int64 // open loop: due in the window, never sent (Scheduled - Sent)
	Queued      int64 // open loop: due in the window, still queued at its end (max in flight reached), sent after it
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

	// Samples is the window's requests sampled by their times
	// (Spec.SampleRequests), late ones included; nil when not asked.
	Samples *reqsample.Set

	// Workers is, for an attack several loadgen workers ran as one
	// (package fleet), each worker's part, by index; nil for an attack of
	// this process alone. The fields above are their exact merge (Merge).
	Workers []WorkerResult

	// Parts is, for a split window (Spec.Split), each part's own account
	// of the window's completions, and GroupHists each group's latencies
	// (as Hist, that group's parts only); nil otherwise.
	Parts      []Part
	GroupHists []*hdrhistogram.Histogram
}

// WorkerResult is one loadgen worker's part of an attack that several ran
// as one instrument: its own exact account and where it stood in time. The
// times are the coordinator's clock.
type WorkerResult struct {
	Index int    // its segment's index (load.Segment), the worker label's value
	Host  string // where it ran
	Pid   int    // its process
	// Concurrency and Rate are its segment's share of the load
	// (load.Model.Summary).
	Concurrency int
	Rate        float64
	// Result is its account, nil when it returned none (it died).
	Result *Result
	// Err is why it failed; "" when it ran its window.
	Err string
	// Offset is its clock minus the coordinator's, measured NTP-style
	// over the round trip of least delay; OffsetBound is half that
	// round trip, the most the estimate can be off.
	Offset, OffsetBound time.Duration
	// Skew is when its window began minus the barrier it was given.
	Skew time.Duration
	// Loadgen is the worker process's own CPU over its window; CPU what
	// its CPUs' time went to (role loadgen); nil when not read.
	Loadgen *manifest.LoadgenCPU
	CPU     *manifest.RoleContention
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
	// Retried: the loadgen alone broke this run (missed sends below the
	// cap), so the next step is another run at the same rate.
	Retried bool
	// Stall is the longest time the loadgen's process could not run
	// during the step (cputime.StealWatch).
	Stall time.Duration
	// Instrument: it broke for the loadgen (missed sends, or the MaxRate
	// cap), not for the target.
	Instrument bool

	WarmupStart time.Time // the first step: when its warm-up began; zero without one
}
