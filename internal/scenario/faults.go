package scenario

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"proxybench/internal/manifest"
	"proxybench/internal/stack"
)

// FaultsName is the faults scenario's name.
const FaultsName = "faults"

// faults sends GET / to a pool of two replicas of the fast origin behind
// the proxy's faults route, each proxy's native passive health checks and
// retries configured alike (docs/faults.md), while the runner injects the
// plan's fault schedule into the second replica: killed, paused, answering
// 503, each brought back. Failures are the measurement, not the cell's
// verdict: the cell expects 2xx and says how many it did not get.
var faults = Scenario{
	Name:  FaultsName,
	About: "two replicas of fast behind " + stack.FaultsRoute + ", one killed, paused and answering 503 in the window (-faults)",
	Rank:  90,
	NA: map[string]string{
		"custom": "the custom proxy's config has no " + stack.FaultsRoute + " pool of two replicas",
	},
	Method:  http.MethodGet,
	Path:    func(string, Settings) string { return stack.FaultsRoute },
	Origins: []string{stack.FaultsOrigin},
	Probes:  ProbeFaults,
	Account: faultsAccount,
	Report:  faultsTable,
}

func init() { register(&faults) }

// The fault kinds the lab injects into the pool's second replica.
const (
	FaultKill  = "kill"  // SIGKILL to its container, started again at the end
	FaultPause = "pause" // its container frozen (a stall), thawed at the end
	Fault503   = "503"   // it answers every request 503 (SIGUSR1), until SIGUSR2
)

// FaultKinds are the kinds, in the order the help names them.
var FaultKinds = []string{FaultKill, FaultPause, Fault503}

// DefaultFaults is the plan's default schedule: the replica killed at 20 %
// of the window and started at 40 %, paused 50-60 %, answering 503 70-80 %.
const DefaultFaults = "kill@20%-40%,pause@50%-60%,503@70%-80%"

// Fault is one fault of a schedule: Kind from From to To, fractions of
// the cell's window.
type Fault struct {
	Kind     string  `json:"kind"`
	From, To float64 `json:"-"`
}

// Schedule is a faults cell's faults in time order, none overlapping.
type Schedule []Fault

// String writes s as ParseFaults reads it.
func (s Schedule) String() string {
	parts := make([]string, len(s))
	for i, f := range s {
		parts[i] = fmt.Sprintf("%s@%s%%-%s%%", f.Kind, pct(f.From), pct(f.To))
	}
	return strings.Join(parts, ",")
}

func pct(x float64) string { return strconv.FormatFloat(math.Round(x*1e6)/1e4, 'f', -1, 64) }

// MarshalJSON writes the schedule's text, as the plan gives it.
func (s Schedule) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.String())), nil }

// ParseFaults reads a schedule: comma-separated kind@from%-to%, e.g.
// DefaultFaults, where kind is kill, pause or 503 and from, to are
// percentages of the window, 0 < from < to <= 100, each fault starting
// after the previous one ended. Something must be measured before the
// first fault (the steady p99), so from > 0. The error names the input.
func ParseFaults(text string) (Schedule, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("faults %q: %s (want kind@from%%-to%%,..., kind %s, e.g. %s)", text, fmt.Sprintf(format, a...),
			strings.Join(FaultKinds, ", "), DefaultFaults)
	}
	if strings.TrimSpace(text) == "" {
		return nil, bad("empty: give at least one fault")
	}
	var s Schedule
	for i, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		kind, span, ok := strings.Cut(part, "@")
		if !ok {
			return nil, bad("fault %d %q has no @", i+1, part)
		}
		known := false
		for _, k := range FaultKinds {
			known = known || k == kind
		}
		if !known {
			return nil, bad("fault %d %q: unknown kind %q", i+1, part, kind)
		}
		a, b, ok := strings.Cut(span, "-")
		from, errA := percent(a)
		to, errB := percent(b)
		switch {
		case !ok || errA != nil || errB != nil:
			return nil, bad("fault %d %q: want from%%-to%%, two percentages of the window", i+1, part)
		case !(from > 0 && from < to && to <= 1):
			return nil, bad("fault %d %q: want 0 < from < to <= 100 (the steady p99 is measured before the first fault)", i+1, part)
		case len(s) > 0 && from < s[len(s)-1].To:
			return nil, bad("fault %d %q starts before fault %d ends: faults go in time order, one at a time", i+1, part, i)
		}
		s = append(s, Fault{Kind: kind, From: from, To: to})
	}
	return s, nil
}

// percent reads "20%" (or "20") as 0.2.
func percent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a percentage: %q", s)
	}
	return v / 100, nil
}

// RetryCounter is where a proxy counts the faults route's retries: the
// series of its own metrics endpoint (stack.Proxy.Metrics) and the label
// naming the route's pool; NA says why a proxy has none.
type RetryCounter struct {
	Series, Label, Value string
	NA                   string
}

// FaultRetries are the proxies' retry counters (compose/<proxy>/'s faults
// pool).
var FaultRetries = map[string]RetryCounter{
	"nginx":   {NA: "nginx counts no retries: stub_status has connections and requests only (retries per upstream are nginx Plus's API)"},
	"haproxy": {Series: "haproxy_backend_retry_warnings_total", Label: "proxy", Value: "faults"},
	"traefik": {Series: "traefik_service_retries_total", Label: "service", Value: "faults@file"},
	"caddy":   {NA: "Caddy counts no retries: its metrics have the upstreams' health, not the attempts"},
}

// faultsAccount is what the runner recorded (Counts.Faults) analysed:
// each fault's failures, detection and recovery (AnalyzeFaults).
func faultsAccount(_ Shape, n Counts) *manifest.ScenarioData {
	if n.Faults == nil {
		return nil
	}
	return &manifest.ScenarioData{Faults: n.Faults}
}

var faultsTable = &Table{
	Caption: "faults: a replica of the pool killed, paused and answering 503 (docs/faults.md)",
	Header:  []string{"cell", "fault", "at (lab clock)", "failed", "timed out", "5xx", "detection", "recovery", "retries (cell)"},
	Right:   []bool{false, false, true, true, true, true, true, true, true},
	Notes: []string{
		"at = seconds from the window's start when the lab asked for the fault and when it asked to end it (the replica's container: SIGKILL then start, pause then unpause, SIGUSR1 then SIGUSR2).",
		"failed = transport errors and statuses outside 2xx completed from the fault's start to the next fault's (or the window's end), as the loadgen saw them.",
		"detection = the fault's start to its last failure before the replica came back: how long until errors stopped; \"none failed\" when the proxy hid every one.",
		"recovery = the replica back (the engine's confirmation) to the first 100 ms bin from which every bin has no failure and a p99 at most twice the steady p99 (before the first fault) for 0.5 s or to the span's end.",
		"retries = the proxy's own retry counter over the cell (HAProxy, Traefik); n/a where the proxy exposes none.",
	},
	Rows: faultRows,
}

func faultRows(c ReportCell, f Format) [][]Field {
	d := c.Data
	if d == nil || d.Faults == nil {
		return nil
	}
	fs := d.Faults
	retries := "n/a: " + fs.RetriesNA
	if fs.Retries != nil {
		retries = f.Int(*fs.Retries)
	}
	var rows [][]Field
	for i, r := range fs.Results {
		at := "–"
		if i < len(fs.Log) {
			ev := fs.Log[i]
			at = fmt.Sprintf("%.2f–%.2f s", ev.PlannedFrom*c.DurationS, ev.PlannedTo*c.DurationS)
			if !ev.Start.IsZero() && !c.Start.IsZero() {
				at = fmt.Sprintf("%.2f–%.2f s", ev.Start.Sub(c.Start).Seconds(), ev.End.Sub(c.Start).Seconds())
			}
			if ev.Error != "" {
				at += " (" + ev.Error + ")"
			}
		}
		rows = append(rows, []Field{text(c.Name), text(r.Kind), text(at), text(f.Int(r.Failed)), text(f.Int(r.TimedOut)),
			text(f.Int(r.Status5xx)), text(orWhy(f, r.DetectionS, r.Detection)), text(orWhy(f, r.RecoveryS, r.Recovery)), text(retries)})
		retries = "″" // the cell's, given on its first row
	}
	return rows
}

// orWhy is v as a duration, or why there is none.
func orWhy(f Format, v *float64, why string) string {
	if v != nil {
		return f.Dur(*v)
	}
	return why
}
