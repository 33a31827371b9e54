// Package report owns the report model, the report.json schema (versioned by
// SchemaVersion) and the judgements made on it: validity flags per cell, SLO
// verdicts, summaries across repeats of the same cell, the run's noise
// floor (noise.go) and the comparison of each arm with the plan's own
// cells, pair by repeat (arms.go).
package report

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/gctail"
	"proxybench/internal/manifest"
)

// SchemaVersion names the report.json schema; it changes whenever a field
// changes meaning or is removed (adding a field keeps it).
const SchemaVersion = "proxybench.report/v1"

// Num is a float that encodes NaN (unknown, not measured) as JSON null.
type Num float64

// NaN is the unknown Num.
func NaN() Num { return Num(math.NaN()) }

// Known reports whether n holds a measured value.
func (n Num) Known() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// MarshalJSON writes the shortest exact decimal, or null when unknown.
func (n Num) MarshalJSON() ([]byte, error) {
	if !n.Known() {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(n), 'g', -1, 64), nil
}

// UnmarshalJSON reads a number or null.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = NaN()
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Report is report.json.
type Report struct {
	Schema     string     `json:"schema"`
	Run        string     `json:"run"`
	Generated  time.Time  `json:"generated"`
	Sources    Sources    `json:"sources"`
	Start      time.Time  `json:"start"`
	End        time.Time  `json:"end"`
	Thresholds Thresholds `json:"thresholds"`
	SLO        SLO        `json:"slo"`
	// RequestTimeoutS is the plan's per-request timeout, seconds; 0 when
	// the plan does not say.
	RequestTimeoutS float64     `json:"request_timeout_s,omitempty"`
	Summary         Summary     `json:"summary"`
	Cells           []Cell      `json:"cells"`
	Groups          []Group     `json:"groups"`
	Environment     Environment `json:"environment"`
	NotRun          []NotRun    `json:"not_run,omitempty"`
	Notes           []string    `json:"notes,omitempty"`
	// Support is the proxy x scenario matrix of the run (scenario.go).
	Support []Support `json:"support,omitempty"`
	// NoiseFloor is what the run's own repeats and A/A control say about
	// its noise (noise.go); nil in a report built before it existed.
	NoiseFloor *NoiseFloor `json:"noise_floor,omitempty"`
	// Question is the margin and false-alarm rate the run's comparisons
	// are decided at (decision.go); nil in a report built before it.
	Question *Question `json:"question,omitempty"`
	// Arms compares every arm besides the plan's own and the A/A control
	// (the duet's candidate, the observer study's unobserved cells) with
	// the plan's own cells, pair by repeat (arms.go).
	Arms []ArmResult `json:"arms,omitempty"`
	// TLSCost is each proxy's price of TLS: CPU per request over TLS
	// against cleartext, full handshakes per core (tlscost.go).
	TLSCost []TLSCost `json:"tls_cost,omitempty"`
	// TLSHandshakes is each proxy's TLS handshake latency, full against
	// resumed (handshakes.go).
	TLSHandshakes []HandshakeSplit `json:"tls_handshakes,omitempty"`
	// ProxyTax is what each proxy adds over the direct control: latency
	// from the paired rounds, CPU per request (proxytax.go).
	ProxyTax []ProxyTax `json:"proxy_tax,omitempty"`
}

// NotRun is a planned cell that sent no traffic (unsupported scenario,
// broken route, proxy gone, run interrupted): listed with its reason, never
// silently dropped.
type NotRun struct {
	cellid.Key
	Reason string `json:"reason"`
}

// GroupKey is the not-run cell's key across repeats (cellid.Key.GroupKey);
// a report written before not-run cells carried their key has only the id,
// whose repeat suffix (".r<N>") is cut off.
func (n NotRun) GroupKey() string {
	if n.Proxy != "" {
		return n.Key.GroupKey()
	}
	if i := strings.LastIndex(n.ID, ".r"); i > 0 {
		return n.ID[:i]
	}
	return n.ID
}

// Sources says where the numbers came from.
type Sources struct {
	Prometheus        string `json:"prometheus"`
	PrometheusVersion string `json:"prometheus_version,omitempty"`
	PrometheusOK      bool   `json:"prometheus_reachable"`
	Manifest          bool   `json:"manifest"`  // exact HdrHistogram percentiles available
	Discovery         string `json:"discovery"` // "prometheus" or "manifest"
}

// Summary counts verdicts.
type Summary struct {
	Cells     int `json:"cells"`
	Valid     int `json:"valid"`
	Suspect   int `json:"suspect"`
	Invalid   int `json:"invalid"`
	SLOFailed int `json:"slo_failed"`
}

// Cell is one measured proxy x origin x scenario x tier x repeat window.
type Cell struct {
	cellid.Key
	Start         time.Time  `json:"start"`
	End           time.Time  `json:"end"`
	WarmupStart   *time.Time `json:"warmup_start,omitempty"` // first warm-up request (manifest); before Start, excluded
	DurationS     Num        `json:"duration_seconds"`
	Concurrency   int        `json:"concurrency"`
	TargetRateRPS Num        `json:"target_rate_rps"` // 0 = closed loop
	// CeilingRPS is the run's instrument ceiling (manifest.Ceiling): what
	// the loadgen reaches against a trivial server under the same
	// placement; null when the manifest has none.
	CeilingRPS Num  `json:"instrument_ceiling_rps"`
	Failed     bool `json:"failed"`      // the loadgen marked the cell failed or aborted
	ServerSide bool `json:"server_side"` // Prometheus holds traffic series for this window

	// Counts over the planned window: completions after its end are late
	// and counted apart (Late*), never here.
	Requests        int64            `json:"requests"`         // in-window responses with an HTTP status
	TransportErrors int64            `json:"transport_errors"` // in-window attempts without a status
	Codes           map[string]int64 `json:"codes"`
	ErrorReasons    map[string]int64 `json:"error_reasons"`
	Classes         Classes          `json:"classes"`
	Expected        []string         `json:"expected_statuses"`   // scenario.Expected(Scenario)
	Unexpected      int64            `json:"unexpected_statuses"` // in-window responses outside Expected, and WrongAnswers
	// WrongAnswers are in-window responses with an expected status that
	// answered the wrong request (scenario.WrongAnswers: a 401 to a valid
	// key, a 429 under the limit); no goodput.
	WrongAnswers     int64 `json:"wrong_answers,omitempty"`
	RPS              Num   `json:"rps"`                // in-window responses with a status / duration
	GoodputRPS       Num   `json:"goodput_rps"`        // in-window responses with an expected status / duration: the headline
	OKRPS            Num   `json:"ok_rps"`             // 2xx / duration
	ErrorRatio       Num   `json:"error_ratio"`        // (transport + 5xx) / attempts, as the recording rules
	RateLimitedRatio Num   `json:"rate_limited_ratio"` // 429 / attempts
	WrongOrigin      int64 `json:"wrong_origin"`
	Scheduled        int64 `json:"open_loop_scheduled"`
	Sent             int64 `json:"open_loop_sent"`
	Missed           Num   `json:"open_loop_missed"` // due inside the window, never sent; null when not published (closed loop)
	Capped           Num   `json:"open_loop_capped"` // sends that waited for a free max-in-flight slot; null when not published
	Queued           Num   `json:"open_loop_queued"` // due inside the window, still queued at its end, sent after it (latency from the due time); null when not published
	InFlightMean     Num   `json:"in_flight_mean"`
	Scrapes          int   `json:"scrapes"`

	// Late completions: after the planned end, before DrainEnd. LateSource
	// says where they were read (LateFromPrometheus, LateFromManifest; "" =
	// none seen).
	Late        int64            `json:"late"`
	LateShare   Num              `json:"late_share"` // late / (in-window attempts + late)
	LateCodes   map[string]int64 `json:"late_codes,omitempty"`
	LateReasons map[string]int64 `json:"late_reasons,omitempty"`
	LateSource  string           `json:"late_source,omitempty"`
	// LateErrors are the late completions that failed: transport errors
	// (a timeout of a request never answered in the window is one), 5xx
	// and non-HTTP statuses. LateErrorRatio is their share of every
	// attempt, in the window and late; the in-window error ratio and the
	// latency percentiles never see them.
	LateErrors     int64      `json:"late_errors"`
	LateErrorRatio Num        `json:"late_error_ratio"`
	DrainEnd       *time.Time `json:"drain_end,omitempty"`

	Latency    Latency    `json:"latency"`
	ProxyRes   Resources  `json:"proxy_resources"`
	LoadgenCPU LoadgenCPU `json:"loadgen_cpu"`
	// Contention is what the loadgen, the proxy and the origin each got of
	// their CPUs (manifest); empty without a manifest.
	Contention []RoleContention `json:"contention,omitempty"`
	// Bottleneck names who limited a closed-loop cell (bottleneck.go).
	Bottleneck Bottleneck `json:"bottleneck"`
	// StealWorstSecond is the largest share of the host's CPUs the
	// hypervisor stole over any second of the window (the manifest's);
	// Disturbed (the manifest's Cell.Disturbance) says what of the host
	// disturbed the window: a paired comparison leaves its pair out.
	StealWorstSecond Num    `json:"steal_worst_second_share"`
	Disturbed        string `json:"disturbed,omitempty"`
	// Stall is the longest the loadgen could not run inside the window
	// (the manifest's); nil when it was not watched or never stalled.
	Stall *manifest.Stall `json:"stall,omitempty"`
	// Sliced is, for an arm of a sliced duet, how it was measured: its
	// GoodputRPS and CPU per request are its typical slice's
	// (manifest.Slices.Typical); its counts the sums of its slices.
	Sliced *Sliced `json:"sliced,omitempty"`
	// Workers is each loadgen worker's part of a cell several ran as one
	// instrument (manifest); the cell's numbers are their merge.
	Workers    []manifest.Worker `json:"workers,omitempty"`
	Instrument Instrument        `json:"instrument_memory"`
	GC         *GC               `json:"gc,omitempty"` // Go proxies only

	// PrometheusGap is the evidence that Prometheus's scrapes have a hole
	// around this window (flag prometheus_gap); nil when they cover it or
	// were not asked.
	PrometheusGap *Gap `json:"prometheus_gap,omitempty"`

	Series   TimeSeries `json:"timeseries"`
	Validity Validity   `json:"validity"`
	SLO      []SLOCheck `json:"slo"`

	// ScenarioData is the loadgen's scenario account (manifest), nil for simple.
	ScenarioData *manifest.ScenarioData `json:"scenario_data,omitempty"`
	// Protocol is what the cell spoke (h1, tls, h2, h3; manifest), TLS what
	// its handshakes negotiated and counted (manifest), nil for h1.
	Protocol string        `json:"protocol,omitempty"`
	TLS      *manifest.TLS `json:"tls,omitempty"`
	// Handshake is the latency of the cell's completed TLS handshakes
	// (Prometheus's handshake histogram over the window); nil when none
	// was counted. HandshakeFull and HandshakeResumed are the same of the
	// full and of the resumed handshakes apart (the histogram's resumed
	// label); the manifest's exact ones are TLS.LatencyFull and
	// TLS.LatencyResumed.
	Handshake        *HandshakeLatency `json:"tls_handshake_latency,omitempty"`
	HandshakeFull    *HandshakeLatency `json:"tls_handshake_latency_full,omitempty"`
	HandshakeResumed *HandshakeLatency `json:"tls_handshake_latency_resumed,omitempty"`
}

// HandshakeLatency is the latency of a cell's completed TLS handshakes,
// from the ClientHello to the handshake's end, in seconds: histogram
// estimates (native or classic buckets, as the request latency's).
type HandshakeLatency struct {
	Count int64 `json:"count"`
	Mean  Num   `json:"mean"`
	P50   Num   `json:"p50"`
	P99   Num   `json:"p99"`
}

// Where a cell's late completions were read (Cell.LateSource).
const (
	LateFromPrometheus = "prometheus"
	LateFromManifest   = "manifest"
)

// Classes counts attempts by outcome class.
type Classes struct {
	S2xx      int64 `json:"2xx"`
	S3xx      int64 `json:"3xx"`
	S4xx      int64 `json:"4xx"` // without 429
	S429      int64 `json:"429"`
	S5xx      int64 `json:"5xx"`
	Other     int64 `json:"other"`
	Transport int64 `json:"transport"`
}

// Latency is in seconds. Prometheus values are histogram estimates (Source
// says native or classic buckets); Exact holds the loadgen's HdrHistogram.
type Latency struct {
	Source string `json:"source"` // native, classic, or "" when absent
	Count  int64  `json:"count"`
	Mean   Num    `json:"mean"` // exact: histogram sum / count
	P50    Num    `json:"p50"`
	P90    Num    `json:"p90"`
	P95    Num    `json:"p95"`
	P99    Num    `json:"p99"`
	P999   Num    `json:"p99_9"`
	Max    Num    `json:"max"` // upper bound of the highest populated bucket
	Exact  *Exact `json:"exact,omitempty"`
}

// Exact latency from the manifest (HdrHistogram, 3 significant figures).
type Exact struct {
	Mean Num `json:"mean"`
	P50  Num `json:"p50"`
	P90  Num `json:"p90"`
	P95  Num `json:"p95"`
	P99  Num `json:"p99"`
	P999 Num `json:"p99_9"`
	Max  Num `json:"max"`
}

// Where CPU means were read (Resources.CPUSource, LoadgenCPU.Source).
const (
	ProxyCPUEdges      = "cgroup_edges"              // the proxy cgroup's usage counter read at the window's two edges, exact
	ProxyCPUCAdvisor   = "cadvisor"                  // anchored increase of container_cpu_usage_seconds_total
	LoadgenCPUEdges    = "process_edges"             // the loadgen process's CPU read at the window's edges
	LoadgenCPUIncrease = "process_cpu_seconds_total" // anchored increase of process_cpu_seconds_total
)

// Resources of the proxy container.
type Resources struct {
	// CPUSource: ProxyCPUEdges or ProxyCPUCAdvisor; "" when unknown.
	CPUSource        string `json:"cpu_source"`
	CPUMeanCores     Num    `json:"cpu_mean_cores"`
	CPUPeakCores     Num    `json:"cpu_peak_cores"` // highest per-scrape rate
	MemMeanBytes     Num    `json:"mem_working_set_mean_bytes"`
	MemPeakBytes     Num    `json:"mem_working_set_peak_bytes"`
	MemSlopeMBPerMin Num    `json:"mem_slope_mb_per_min"` // OLS over the window
}

// LoadgenCPU is the load generator's own CPU over the window and every
// signal loadgen_bound reads (validity.go).
type LoadgenCPU struct {
	// Source of MeanCores: LoadgenCPUEdges or LoadgenCPUIncrease.
	Source         string `json:"source,omitempty"`
	MeanCores      Num    `json:"mean_cores"`
	PeakCores      Num    `json:"peak_cores"`      // highest 1-s rate
	LimitCores     Num    `json:"limit_cores"`     // capacity: min(cgroup quota, affinity, GOMAXPROCS)
	ThrottledShare Num    `json:"throttled_share"` // throttled periods / periods of its cgroup
	RunDelayShare  Num    `json:"run_delay_share"` // runnable-but-waiting time / (duration x capacity)
	PressureShare  Num    `json:"pressure_share"`  // PSI "some" stall time / duration
	LagP99Seconds  Num    `json:"lag_p99_seconds"` // open loop: p99 of actual minus intended send time
}

// Instrument is the resident memory of proxybench's own processes over the
// window: a soak run must show them flat, or they, not the proxy, leak.
type Instrument struct {
	LoadgenRSSMeanBytes      Num `json:"loadgen_rss_mean_bytes"`
	LoadgenRSSSlopeMBPerMin  Num `json:"loadgen_rss_slope_mb_per_min"`
	ExporterRSSMeanBytes     Num `json:"exporter_rss_mean_bytes"`
	ExporterRSSSlopeMBPerMin Num `json:"exporter_rss_slope_mb_per_min"`
}

// GC is a Go proxy's garbage collector over the window (gctrace).
type GC struct {
	Cycles             Num `json:"cycles"`
	ForcedCycles       Num `json:"forced_cycles"`
	CyclesPerS         Num `json:"cycles_per_second"`
	CPUSeconds         Num `json:"cpu_seconds"`           // what GC cost the program (no idle mark workers)
	IdleMarkCPUSeconds Num `json:"idle_mark_cpu_seconds"` // idle mark workers: CPU no goroutine wanted
	CPUPercent         Num `json:"cpu_percent"`           // GC CPU / (duration x GOMAXPROCS)
	ShareOfProxyCPU    Num `json:"share_of_proxy_cpu_percent"`
	PauseP50           Num `json:"stw_pause_p50_seconds"`
	PauseP99           Num `json:"stw_pause_p99_seconds"`
	PauseMax           Num `json:"stw_pause_max_seconds"` // bucket upper bound
	LiveHeapMeanBytes  Num `json:"live_heap_mean_bytes"`
	LiveHeapSlope      Num `json:"live_heap_slope_mb_per_min"`
	// Tail is the join of the cell's sampled requests with its GC cycles
	// (package gctail); nil when the run kept none, TailError why.
	Tail      *gctail.Result `json:"tail,omitempty"`
	TailError string         `json:"tail_error,omitempty"`
}

// TimeSeries are per-second samples over the window, T in seconds from start.
type TimeSeries struct {
	T      []float64 `json:"t,omitempty"`
	CPU    []float64 `json:"cpu_cores,omitempty"`
	MemMB  []float64 `json:"mem_mb,omitempty"`
	HeapMB []float64 `json:"live_heap_mb,omitempty"`
}

// Group summarises the repeats of one cell key.
type Group struct {
	Key string `json:"key"` // cellid.Group.Key
	cellid.Group
	Repeats int             `json:"repeats"`
	Valid   int             `json:"valid"`   // repeats not invalid; statistics use these only, all when none is
	Invalid int             `json:"invalid"` // repeats left out of the statistics
	Metrics map[string]Stat `json:"metrics"`
}

// Stat is a stats.Summary in JSON-safe numbers. The spread (stddev, cv,
// ci95_*) is null with fewer than 2 values: one value shows no noise.
type Stat struct {
	N      int   `json:"n"`
	Mean   Num   `json:"mean"`
	Median Num   `json:"median"`
	Stddev Num   `json:"stddev"`
	CV     Num   `json:"cv"`
	CILow  Num   `json:"ci95_low"`
	CIHigh Num   `json:"ci95_high"`
	Values []Num `json:"values"`
}

// SetProxyCPU sets the proxy's mean CPU from the CPU seconds it used over
// the window (source names where they were read), and the GC's share of it.
func (c *Cell) SetProxyCPU(seconds Num, source string) {
	c.ProxyRes.CPUMeanCores, c.ProxyRes.CPUSource = NaN(), ""
	if seconds.Known() && c.DurationS.Known() && c.DurationS > 0 {
		c.ProxyRes.CPUMeanCores, c.ProxyRes.CPUSource = seconds/c.DurationS, source
	}
	if c.GC != nil {
		c.GC.ShareOfProxyCPU = NaN()
		if c.GC.CPUSeconds.Known() && seconds.Known() && seconds > 0 {
			c.GC.ShareOfProxyCPU = 100 * c.GC.CPUSeconds / seconds
		}
	}
}

// SetShares derives the scheduling shares over a window of d seconds from
// the increases of the loadgen's cgroup periods and throttled periods, its
// run delay and its CPU pressure (seconds); LimitCores must be set. An
// unknown input leaves its share unknown.
func (l *LoadgenCPU) SetShares(periods, throttled, runDelay, pressure, d Num) {
	l.ThrottledShare, l.RunDelayShare, l.PressureShare = NaN(), NaN(), NaN()
	if periods.Known() && throttled.Known() {
		l.ThrottledShare = 0 // no CFS period ran: no quota, nothing throttled
		if periods > 0 {
			l.ThrottledShare = throttled / periods
		}
	}
	if !d.Known() || d <= 0 {
		return
	}
	if runDelay.Known() && l.LimitCores.Known() && l.LimitCores > 0 {
		l.RunDelayShare = runDelay / (d * l.LimitCores)
	}
	if pressure.Known() {
		l.PressureShare = pressure / d
	}
}

// MergeEdges fills from the manifest's edge readings m, over a window of d
// seconds, what Prometheus left unknown; the process CPU read at the edges
// wins over the anchored increase.
func (l *LoadgenCPU) MergeEdges(m *manifest.LoadgenCPU, d Num) {
	if !l.LimitCores.Known() && m.CapacityCores > 0 {
		l.LimitCores = Num(m.CapacityCores)
	}
	if l.Source != LoadgenCPUEdges && d.Known() && d > 0 && m.CPUSeconds > 0 {
		l.MeanCores, l.Source = Num(m.CPUSeconds)/d, LoadgenCPUEdges
	}
	have := *l
	periods, throttled := Num(m.Periods), Num(m.ThrottledPeriods)
	pressure := NaN()
	if m.PressureSeconds != nil && m.PressureScope == manifest.PressureCgroup { // the host's pressure is not the loadgen's
		pressure = Num(*m.PressureSeconds)
	}
	l.SetShares(periods, throttled, Num(m.RunDelaySeconds), pressure, d)
	// Prometheus's readings stay where it had them.
	for _, f := range []struct{ dst, was *Num }{{&l.ThrottledShare, &have.ThrottledShare},
		{&l.RunDelayShare, &have.RunDelayShare}, {&l.PressureShare, &have.PressureShare}} {
		if f.was.Known() {
			*f.dst = *f.was
		}
	}
}
