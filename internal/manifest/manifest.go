// Package manifest owns results/<run>/manifest.json: the loadgen's local,
// crash-safe record of a run (cells, windows, exact percentiles). The loadgen
// writes it after every finished cell; the reporter reads it to add exact
// HdrHistogram percentiles to what it queries from Prometheus.
package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"proxybench/internal/atomicfile"
	"proxybench/internal/cellid"
)

// SchemaVersion changes whenever a field changes meaning or is removed.
const SchemaVersion = 1

// Manifest is one run.
type Manifest struct {
	Schema  int             `json:"schema"`
	Run     string          `json:"run"`
	Status  string          `json:"status"` // running, done, interrupted, failed
	Started time.Time       `json:"started"`
	Updated time.Time       `json:"updated"`
	Plan    json.RawMessage `json:"plan,omitempty"` // the expanded plan as the loadgen ran it
	// Settings is what the reporter takes from the plan (settings.go); nil
	// in a manifest written before it had them: PlanSettings reads Plan then.
	Settings *Settings         `json:"settings,omitempty"`
	Versions map[string]string `json:"versions,omitempty"` // proxy -> version printed by its running binary
	// ProxyConfig is, by proxy (a duet's candidate by its service), the
	// parity settings its running process reported at the run's start.
	ProxyConfig map[string]ProxyConfig `json:"proxy_config,omitempty"`
	Host        Host                   `json:"host"`
	// Placement is the run's CPU placement, planned and measured
	// (placement.go); nil in a manifest written before runs had one.
	Placement *Placement `json:"placement,omitempty"`
	// Ceiling is the instrument's own ceiling under the run's placement
	// (ceiling.go); nil in a manifest written before runs had one.
	Ceiling *Ceiling `json:"ceiling,omitempty"`
	// OpenCeiling is the open-loop engine's ceiling, measured when the run
	// has open-loop cells: what their offered rates are held to.
	OpenCeiling *Ceiling `json:"open_ceiling,omitempty"`
	// Sequential is a duet's looks and why it stopped (sequential.go);
	// nil for any other run.
	Sequential *Sequential `json:"sequential,omitempty"`
	Cells      []Cell      `json:"cells"`
}

// Host describes where the run happened.
type Host struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Kernel   string `json:"kernel"`
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model,omitempty"`
	MemBytes uint64 `json:"mem_bytes,omitempty"`
	Loadgen  string `json:"loadgen_version,omitempty"`
	Docker   string `json:"docker_version,omitempty"`
}

// Cell statuses.
const (
	CellOK      = "ok"      // ran its full window
	CellFailed  = "failed"  // the proxy or origin broke; Reason says how
	CellAborted = "aborted" // stopped by the user (Ctrl-C) before its end
	CellSkipped = "skipped" // not run: Skip says why
)

// SkipKind is why a cell was not run.
type SkipKind string

// Skip kinds.
const (
	SkipNotApplicable SkipKind = "not_applicable"    // the proxy cannot do the scenario natively
	SkipNotReady      SkipKind = "not_ready"         // the scenario is planned but sends no traffic yet
	SkipProxy         SkipKind = "proxy_unavailable" // no running container for the proxy
	SkipIsolation     SkipKind = "isolation_failed"  // the other proxies could not be paused
	SkipPreflight     SkipKind = "preflight"         // the cell's route failed its preflight
	SkipProxyDied     SkipKind = "proxy_died"        // the proxy died during an earlier cell
	SkipInterrupted   SkipKind = "interrupted"       // the run was stopped before the cell
	SkipDiskFull      SkipKind = "disk_full"         // the results disk filled up before the cell
	SkipArm           SkipKind = "arm_failed"        // the cell's arm could not be applied (a duet's quota, the observer's pause)
	// SkipUnspecified is an older manifest's skip whose text names no kind
	// (see legacySkip).
	SkipUnspecified SkipKind = "unspecified"
)

// Skip is why a cell was not run: its kind, for programs, and its reason,
// for people. The cell's Reason holds Text().
type Skip struct {
	Kind   SkipKind `json:"kind"`
	Reason string   `json:"reason"`
}

// naText starts the text of a not_applicable skip: the cell's Reason reads
// "n/a: <reason>".
const naText = "n/a: "

// Text is the skip as the cell's Reason shows it: "n/a: <reason>" for a
// proxy that cannot do the scenario, the reason itself otherwise.
func (s *Skip) Text() string {
	if s == nil {
		return ""
	}
	if s.Kind == SkipNotApplicable {
		return naText + s.Reason
	}
	return s.Reason
}

// legacySkip reads the skip of a cell from a manifest written before cells
// carried Skip: such a manifest says n/a only by the "n/a: " start of the
// cell's Reason, and nothing else about the cause. This is the one place
// that reads that form.
func legacySkip(reason string) *Skip {
	if r, ok := strings.CutPrefix(reason, naText); ok {
		return &Skip{Kind: SkipNotApplicable, Reason: r}
	}
	return &Skip{Kind: SkipUnspecified, Reason: reason}
}

// Cell is one proxy x origin x scenario x tier x repeat.
type Cell struct {
	cellid.Key

	Mode        string  `json:"mode"` // closed, open, stages
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate_rps,omitempty"` // offered rate in open loop
	Path        string  `json:"path"`               // request path through the proxy
	DurationS   float64 `json:"duration_seconds"`   // planned measured duration
	WarmupS     float64 `json:"warmup_seconds"`

	// Window is the measured interval: warm-up is before Start and excluded.
	WarmupStart *time.Time `json:"warmup_start,omitempty"`
	Start       time.Time  `json:"start"`
	End         time.Time  `json:"end"`

	Status string `json:"status"`
	Reason string `json:"reason,omitempty"` // why it failed, aborted or was skipped (Skip.Text())
	Skip   *Skip  `json:"skip,omitempty"`   // why it was skipped (status skipped)

	Requests     int64            `json:"requests"`                // completed with an HTTP status
	Errors       int64            `json:"errors"`                  // no HTTP status: transport errors
	Codes        map[string]int64 `json:"codes"`                   // status code -> count
	ErrorReasons map[string]int64 `json:"error_reasons,omitempty"` // reason -> count
	Bytes        int64            `json:"bytes"`                   // response body bytes read
	Scheduled    int64            `json:"scheduled,omitempty"`     // open loop: intended sends
	Sent         int64            `json:"sent,omitempty"`          // open loop: actual sends
	Latency      Latency          `json:"latency"`                 // every measured request, late ones included
	WrongOrigin  int64            `json:"wrong_origin,omitempty"`  // 2xx without the expected X-Origin

	// Protocol is what the cell spoke: h1, tls, h2 or h3 (attack.Spec.Proto);
	// TLS what its handshakes negotiated and counted, nil for h1.
	Protocol string `json:"protocol,omitempty"`
	TLS      *TLS   `json:"tls,omitempty"`

	// The window is planned: [Start, Start + DurationS] with End = the
	// planned end. Requests, Errors, Codes and ErrorReasons count what
	// completed inside it. Requests still in flight at the end are drained
	// (bounded by the timeout): their latencies are in Latency, and they are
	// counted here as late, never in the counts above.
	Late        int64            `json:"late,omitempty"`              // completions after the planned end (with a status or an error)
	LateCodes   map[string]int64 `json:"late_codes,omitempty"`        // status code -> late completions
	LateReasons map[string]int64 `json:"late_reasons,omitempty"`      // error reason -> late errors
	DrainEnd    *time.Time       `json:"drain_end,omitempty"`         // when the last late request completed
	Missed      int64            `json:"missed,omitempty"`            // open loop: due inside the window, never sent
	Queued      int64            `json:"queued,omitempty"`            // open loop: due inside the window, still queued at its end, sent after it
	Capped      int64            `json:"capped,omitempty"`            // open loop: sends that waited because max in flight was reached
	LagP99S     float64          `json:"lag_p99_seconds,omitempty"`   // open loop: p99 of (actual - intended) send time over sends that did not wait for the cap
	Expected    []string         `json:"expected_statuses,omitempty"` // status classes the scenario expects, e.g. ["2xx", "401"]

	// ProxyCPUSeconds is the proxy container's cgroup CPU usage counter read
	// at the window's two edges, end minus start; nil when the cgroup could
	// not be read (not a local container).
	ProxyCPUSeconds *float64 `json:"proxy_cpu_seconds,omitempty"`
	// Loadgen is what the loadgen could get and what it used over the window.
	Loadgen *LoadgenCPU `json:"loadgen,omitempty"`
	// Contention is what the loadgen, the proxy and the origin each got of
	// their CPUs over the window; nil when the edges were not both read.
	Contention *Contention `json:"contention,omitempty"`
	// StealWorstSecond is the largest share of the host's CPUs the
	// hypervisor stole over any second of the window (cputime.StealWatch);
	// nil when /proc/stat could not be read.
	StealWorstSecond *float64 `json:"steal_worst_second_share,omitempty"`
	// Stall is the longest the loadgen could not run during the window
	// (its watch's wake-up came that late, cputime.StealWatch.Stall); nil
	// when it was not watched.
	Stall *Stall `json:"stall,omitempty"`
	// Disturbed says what of the host disturbed the window (Disturbance);
	// a paired comparison leaves out a pair with a disturbed cell.
	Disturbed string `json:"disturbed,omitempty"`

	// ScenarioData is what the cell's scenario is judged on
	// (docs/scenarios.md); nil for simple.
	ScenarioData *ScenarioData `json:"scenario_data,omitempty"`

	// Workers is, for a cell several loadgen workers ran as one
	// instrument, each one's part (worker.go); nil for a cell of one
	// loadgen.
	Workers []Worker `json:"workers,omitempty"`

	// Slices is, for an arm of a sliced duet, how its pair's window was
	// shared: the counts, latency and ProxyCPUSeconds above are this arm's
	// slices only, and Start, End and the CPU records the pair's window.
	Slices *Slices `json:"slices,omitempty"`
	// GCTail is, for a Go proxy's cell, its file of sampled requests and
	// GC cycles on the host's clock (package gctail), relative to the run's
	// folder; GCTailError why there is none when one was wanted.
	GCTail      string `json:"gc_tail,omitempty"`
	GCTailError string `json:"gc_tail_error,omitempty"`
}

// LoadgenCPU is the loadgen's CPU capacity and its use over one window,
// every counter read at the window's edges (end minus start).
type LoadgenCPU struct {
	CapacityCores  float64 `json:"capacity_cores"`  // min(cgroup quota, cpuset/affinity, GOMAXPROCS)
	CapacitySource string  `json:"capacity_source"` // which of them: "cgroup quota", "affinity", "gomaxprocs"
	CPUSeconds     float64 `json:"cpu_seconds"`     // the process's user+system CPU
	// From the loadgen's own cgroup (cpu.stat); zero when it has no quota.
	Periods          int64   `json:"periods,omitempty"`
	ThrottledPeriods int64   `json:"throttled_periods,omitempty"`
	ThrottledSeconds float64 `json:"throttled_seconds,omitempty"`
	// RunDelaySeconds: time the loadgen's threads were runnable but waiting
	// for a CPU (/proc/self/task/*/schedstat), summed over threads.
	RunDelaySeconds float64 `json:"run_delay_seconds"`
	// PressureSeconds: CPU pressure "some" stall time (cgroup v2 cpu.pressure,
	// else /proc/pressure/cpu); nil where the kernel has no PSI.
	PressureSeconds *float64 `json:"pressure_seconds,omitempty"`
	// PressureScope is "cgroup" (the loadgen's own group) or "host" (the
	// whole host's pressure, which only says the host was busy).
	PressureScope string `json:"pressure_scope,omitempty"`
}

// Latency holds exact HdrHistogram values in seconds (1 µs .. 60 s, 3 s.f.).
type Latency struct {
	Count  int64   `json:"count"`
	Min    float64 `json:"min"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
	P9999  float64 `json:"p99_99"`
	Max    float64 `json:"max"`
}

// Write stores m at path atomically (internal/atomicfile: a unique temp
// file, fsync, rename, directory fsync), so a crash mid-write leaves the
// previous version intact.
func Write(path string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// notOurs says what to do with a manifest.json that does not decode: the
// loadgen replaces it atomically, so it was damaged or written by something
// else, and the reporter builds without it from Prometheus alone.
const notOurs = "restore it from a copy, or move it aside to build the report from Prometheus alone"

// Read loads a manifest and checks its schema version. Every error names
// the file. A skipped cell of an older manifest, which has no Skip, gets
// the one its Reason implies (legacySkip).
func Read(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode manifest %s: %w (%s)", path, err, notOurs)
	}
	if m.Schema == 0 {
		return nil, fmt.Errorf("manifest %s has no schema: it is not a loadgen manifest (%s)", path, notOurs)
	}
	if m.Schema != SchemaVersion {
		return nil, fmt.Errorf("manifest %s has schema %d, this build reads %d: rebuild the report with the matching proxybench version", path, m.Schema, SchemaVersion)
	}
	for i := range m.Cells {
		if c := &m.Cells[i]; c.Status == CellSkipped && c.Skip == nil {
			c.Skip = legacySkip(c.Reason)
		}
	}
	return &m, nil
}
