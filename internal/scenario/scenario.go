// Package scenario owns the scenarios: one file per scenario, each holding
// everything the loadgen and the reporter know about it. Its support matrix
// (the proxies that cannot do it natively, and why), how it shapes requests
// (path, method, headers, body, a new connection per request, a traffic
// mix, a fixed open loop), what the runner samples beside its attack, how
// it accounts for a cell's results (its part of manifest.ScenarioData, from
// neutral counts), the statuses it expects, how the reporter judges it and
// the table it adds to the report. The registry (Lookup, All) is the only
// place the plan, the runner, the reporter and the renderer learn about
// scenarios; none of them has a per-scenario switch or table of its own.
//
// A scenario registers itself from its file's init with register; Rank
// orders the registry (the "all" group, the help text, the report's
// tables).
package scenario

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"proxybench/internal/manifest"
)

// Scenario is one kind of traffic a cell sends, with its accounting and
// judging. Func fields may be nil: the scenario has no such part.
type Scenario struct {
	Name  string
	About string
	// Rank places the scenario in the registry: lower first.
	Rank int
	// Groups are plan names that stand for several scenarios, e.g. payload;
	// "all" stands for every scenario and is never listed here.
	Groups []string

	// NotReady, when set, says why cells of this scenario are skipped.
	NotReady string
	// NA lists the proxies that cannot do this natively (no plugin their
	// official image lacks) with the reason: their cells are skipped as
	// not applicable.
	NA map[string]string
	// Origins, when set, are the only origins the scenario runs on: the
	// others' cells are skipped as not applicable (SkipOrigin).
	Origins []string

	Method            string                                   // default GET
	Path              func(origin string, set Settings) string // path on the proxy, from '/'
	Header            http.Header
	Body              []byte
	NewConnPerRequest bool // a fresh TCP connection for every request
	// Proto is the protocol the cell speaks, a name of the loadgen's
	// attack.Proto: "" (h1) over the proxy's cleartext port; tls, h2 and
	// h3 over its TLS port (internal/stack Proxy.TLSPort), each asking for
	// its own ALPN ID and failing a handshake that selects another.
	Proto string
	// Streams is, for h2 and h3, how many requests each connection
	// carries at once: the cell's concurrency (closed loop: requests in
	// flight; open loop: most in flight) is split into concurrency /
	// Streams connections (at least one) of Streams streams each.
	Streams int
	// NoResumption makes every TLS handshake full (no session cache); by
	// default the cell's connections share one, so a new connection
	// resumes its session.
	NoResumption bool
	BodyBytes    int64 // response body bytes every 2xx must carry (0: not checked)
	// Variants, when set, is the traffic mix; otherwise one variant with Header.
	Variants func(set Settings) []Variant
	// OpenRate, when set, fixes an open loop at this rate whatever the
	// plan's load model (the rate limit must be offered more than it allows).
	OpenRate func(set Settings) float64
	// Limit is the configured rate limit (requests/s) and burst the cell is judged against.
	Limit, Burst float64
	// Delay is the origin's delay per request the proxy holds a
	// connection through.
	Delay func(set Settings) time.Duration
	// Probes are what the runner samples beside the attack.
	Probes Probe

	// Expected lists the statuses the scenario's responses may carry
	// (Matches); nil expects 2xx.
	Expected []string
	// Wrong counts the responses whose status the scenario expects in
	// general but which answered a request that deserved another (a 401
	// to a valid key, a 429 under the limit), from the cell's account and
	// its window in seconds: they are no goodput and are unexpected. nil:
	// every expected status is right for every request.
	Wrong func(d *manifest.ScenarioData, windowS float64) int64
	// WrongWhat names them in a flag's reason.
	WrongWhat string
	// Account derives the scenario's part of the cell's ScenarioData from
	// the window's counts; nil (or a nil result): the cell has none.
	Account func(sh Shape, n Counts) *manifest.ScenarioData
	// LatencyFloor is latency the scenario adds by design (the origin's
	// delay), with a note: the p99 objective is judged on what the proxy
	// adds above it. 0 when d holds none.
	LatencyFloor func(d *manifest.ScenarioData) (seconds float64, note string)
	// Report is the table the scenario adds to the report's scenario
	// section; scenarios sharing one (the payload family) share the value.
	Report *Table
}

// Settings are the plan's scenario settings (docs/scenarios.md).
type Settings struct {
	AuthInvalid      float64       // auth: share of traffic with a missing or wrong key
	RateLimitOffered float64       // ratelimit: open-loop rate offered, req/s
	SlowDelay        time.Duration // slow: origin delay per request
	// TLSVersion is the one TLS version the TLS cells offer, "1.2" or
	// "1.3"; "" offers both. The proxy must accept it (preflight).
	TLSVersion string
	// Faults is the faults scenario's schedule (ParseFaults).
	Faults Schedule
}

// Variant is one part of a cell's traffic mix (the auth scenario sends valid,
// missing and wrong keys side by side). Each variant is counted apart so the
// report can check every request got the answer its key deserves.
type Variant struct {
	Name   string      `json:"name"`  // bounded: valid, missing, wrong
	Share  float64     `json:"share"` // of the cell's rate (open) or connections (closed)
	Want   int         `json:"want"`  // status class the proxy must answer: 200 (any 2xx) or 401
	Header http.Header `json:"-"`
}

// Probe is a measurement the runner takes beside a cell's attack.
type Probe uint8

// Probes a scenario may ask for.
const (
	// ProbeMemory samples the proxy container's working set before and
	// during the attack (Counts.Memory).
	ProbeMemory Probe = 1 << iota
	// ProbeTimeWait reads the TIME_WAIT sockets and the ephemeral port
	// range right after the attack (Counts.Churn).
	ProbeTimeWait
	// ProbeFaults injects the cell's fault schedule (Shape.Faults) into
	// the fault pool's second replica during the window, bins the window's
	// completions and reads the proxy's retry counter (Counts.Faults).
	ProbeFaults
)

// Shape is a scenario resolved for one cell under the plan's settings: the
// numbers the cell carries in plan.json (its JSON fields are the cell's)
// and the registry entry it came from, so nothing looks it up again.
type Shape struct {
	Method     string    `json:"method,omitempty"`           // when not GET
	Variants   []Variant `json:"variants,omitempty"`         // traffic mix, when more than one
	BodyBytes  int64     `json:"body_bytes,omitempty"`       // response body bytes every 2xx carries
	LimitRPS   float64   `json:"limit_rps,omitempty"`        // configured rate limit
	LimitBurst float64   `json:"limit_burst,omitempty"`      // its burst
	DelayS     float64   `json:"delay_seconds,omitempty"`    // slow: origin delay
	NewConn    bool      `json:"new_conn_per_req,omitempty"` // churn
	Proto      string    `json:"protocol,omitempty"`         // tls, h2, h3 (TLS port); "" = h1
	Streams    int       `json:"streams,omitempty"`          // h2, h3: streams per connection
	TLSVersion string    `json:"tls_version,omitempty"`      // TLS cells: the one version offered, "1.2" or "1.3"; "" = both
	NoResume   bool      `json:"no_resumption,omitempty"`    // TLS cells: every handshake full
	Faults     Schedule  `json:"faults,omitempty"`           // faults: the schedule injected in the window

	// Def is the scenario the cell was resolved from.
	Def *Scenario `json:"-"`
}

// Resolve is the scenario's shape under set.
func (s *Scenario) Resolve(set Settings) Shape {
	sh := Shape{Def: s, BodyBytes: s.BodyBytes, LimitRPS: s.Limit, LimitBurst: s.Burst, NewConn: s.NewConnPerRequest,
		Proto: s.Proto, Streams: s.Streams}
	if s.Secure() {
		sh.TLSVersion, sh.NoResume = set.TLSVersion, s.NoResumption
	}
	if s.Method != "" && s.Method != http.MethodGet {
		sh.Method = s.Method
	}
	if v := s.VariantsFor(set); len(v) > 1 {
		sh.Variants = v
	}
	if s.Delay != nil {
		sh.DelayS = s.Delay(set).Seconds()
	}
	if s.Probes&ProbeFaults != 0 {
		sh.Faults = set.Faults
	}
	return sh
}

// VariantsFor is the traffic mix under set: the scenario's Variants, or one
// "all" variant carrying its Header.
func (s *Scenario) VariantsFor(set Settings) []Variant {
	if s.Variants != nil {
		return s.Variants(set)
	}
	return []Variant{{Name: "all", Share: 1, Header: s.Header}}
}

// Secure says whether the scenario's cells go to the proxy's TLS port.
func (s *Scenario) Secure() bool { return s.Proto != "" && s.Proto != "h1" }

// Skip says why proxy's cells of the scenario are not run: not ready, or
// not applicable to the proxy; nil when they run.
func (s *Scenario) Skip(proxy string) *manifest.Skip {
	if s.NotReady != "" {
		return &manifest.Skip{Kind: manifest.SkipNotReady, Reason: s.NotReady}
	}
	if why := s.NA[proxy]; why != "" {
		return &manifest.Skip{Kind: manifest.SkipNotApplicable, Reason: why}
	}
	return nil
}

// SkipOrigin says why the scenario's cells on origin are not run: it runs
// on Origins alone; nil when it runs there.
func (s *Scenario) SkipOrigin(origin string) *manifest.Skip {
	if len(s.Origins) == 0 || slices.Contains(s.Origins, origin) {
		return nil
	}
	return &manifest.Skip{Kind: manifest.SkipNotApplicable,
		Reason: fmt.Sprintf("%s runs on origin %s alone", s.Name, strings.Join(s.Origins, ", "))}
}

// Counts are a cell's exact counts over its measured window, the neutral
// input of Account.
type Counts struct {
	WindowS  float64          // the window's length (End - Start), seconds
	Requests int64            // completed with a status
	Errors   int64            // transport errors
	Bytes    int64            // response body bytes
	Codes    map[string]int64 // status code -> count
	// Variants are the mix's counts by variant name; a variant that sent
	// nothing is absent.
	Variants map[string]VariantCounts
	Memory   *manifest.ProxyMemory // ProbeMemory's result, if asked for
	Churn    *manifest.Churn       // ProbeTimeWait's result, if asked for
	Faults   *manifest.Faults      // ProbeFaults's result (AnalyzeFaults), if asked for
}

// VariantCounts are one variant's counts over the window.
type VariantCounts struct {
	Requests, Errors int64
	Codes            map[int]int64
}

// Rate is k per second of the window; 0 for an empty window.
func (n Counts) Rate(k int64) float64 {
	if n.WindowS <= 0 {
		return 0
	}
	return float64(k) / n.WindowS
}
