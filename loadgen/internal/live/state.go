package live

import (
	"strconv"
	"time"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
)

// State is what /api/state answers: the whole page in one JSON document.
type State struct {
	Run     string    `json:"run"`
	Status  string    `json:"status"` // running, interrupting, done, interrupted, failed
	Started time.Time `json:"started"`
	Now     time.Time `json:"now"`
	// Estimate is the plan's least duration (plan.Expanded.Estimate).
	EstimateS float64    `json:"estimate_s"`
	Cells     []CellRow  `json:"cells"`   // every planned cell, in order
	Current   *Current   `json:"current"` // nil between cells
	Source    string     `json:"source"`  // where Live came from: SourceProm or SourceLoadgen
	PromURL   string     `json:"prom_url"`
	PromError string     `json:"prom_error,omitempty"` // why Prometheus was not read, when it was not
	Live      *Point     `json:"live,omitempty"`       // the latest reading of the current cell
	History   []Point    `json:"history"`              // every reading of the run, oldest first (at most maxHistory)
	Report    *ReportRef `json:"report,omitempty"`     // once the run has ended
}

// Sources of a reading.
const (
	SourceProm    = "prometheus" // the recording rules the dashboards read
	SourceLoadgen = "loadgen"    // the loadgen's own counters: Prometheus did not answer
)

// CellRow is one planned cell: its place in the plan and, once it ended,
// the runner's account of it (manifest.json's cell).
type CellRow struct {
	N        int     `json:"n"`
	ID       string  `json:"id"`
	Proxy    string  `json:"proxy"`
	Origin   string  `json:"origin"`
	Scenario string  `json:"scenario"`
	Arm      string  `json:"arm,omitempty"`
	Load     string  `json:"load"`
	WindowS  float64 `json:"window_s"`
	WarmupS  float64 `json:"warmup_s"`
	// Status is planned, running, or the manifest's: ok, failed, aborted,
	// skipped. Reason and Disturbed are the manifest's too.
	Status    string  `json:"status"`
	Reason    string  `json:"reason,omitempty"`
	Disturbed string  `json:"disturbed,omitempty"`
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	RPS       float64 `json:"rps"`   // in-window requests / the window
	P50       float64 `json:"p50_s"` // the exact HdrHistogram's
	P99       float64 `json:"p99_s"`
}

// Current is the cell being sent.
type Current struct {
	N       int       `json:"n"`
	Of      int       `json:"of"`
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
	// WarmupS counts the settle gap after the warm-up, as the terminal's
	// progress line does.
	WarmupS float64 `json:"warmup_s"`
	WindowS float64 `json:"window_s"`
}

// Point is one reading of the current cell. A nil field is unknown: not
// in Prometheus yet, or not known to the loadgen alone.
type Point struct {
	T          float64  `json:"t"` // unix seconds the values are of
	Cell       string   `json:"cell"`
	Source     string   `json:"source"`
	RPS        *float64 `json:"rps"`
	P50        *float64 `json:"p50_s"`
	P99        *float64 `json:"p99_s"`
	ErrRPS     *float64 `json:"err_rps"`     // failures (5xx + transport errors) per second
	Errors     *int64   `json:"errors"`      // the loadgen's count in the cell so far
	ProxyCPU   *float64 `json:"proxy_cpu"`   // cores
	LoadgenCPU *float64 `json:"loadgen_cpu"` // cores
}

// ReportRef says where the run's results are once it has ended.
type ReportRef struct {
	Dir      string `json:"dir"`
	Manifest string `json:"manifest"`
	HTML     string `json:"html"` // written by the reporter (make bench runs it next)
	Command  string `json:"command"`
}

// maxHistory bounds the readings kept: an hour at one a second.
const maxHistory = 3600

// rows lists the plan's cells.
func rows(x *plan.Expanded) []CellRow {
	out := make([]CellRow, len(x.Cells))
	for i, c := range x.Cells {
		out[i] = CellRow{N: i + 1, ID: c.ID, Proxy: c.Proxy, Origin: c.Origin, Scenario: c.Scenario, Arm: c.Arm,
			Load: loadText(c), WindowS: time.Duration(c.Duration).Seconds(), WarmupS: time.Duration(c.Warmup).Seconds(), Status: "planned"}
		if c.Skip != nil {
			out[i].Reason = c.Skip.Reason
		}
	}
	return out
}

func loadText(c plan.Cell) string {
	if c.Rate > 0 {
		return c.Mode + " " + strconv.FormatFloat(c.Rate, 'g', -1, 64) + " req/s"
	}
	return c.Mode + " c=" + strconv.Itoa(c.Concurrency)
}

// ended copies the manifest's account of a cell into its row.
func (r *CellRow) ended(c manifest.Cell) {
	r.Status, r.Reason, r.Disturbed = c.Status, c.Reason, c.Disturbed
	r.Requests, r.Errors = c.Requests, c.Errors
	r.RPS = progress.CellRPS(c)
	r.P50, r.P99 = c.Latency.P50, c.Latency.P99
}
