package report

import (
	"time"
)

// Gap is what Prometheus missed around a cell's window. A Loadgen gap
// means none of Prometheus's traffic numbers, loadgen gauges or loadgen
// time series for the window are used (the manifest's counts stand in); an
// Exporter gap leaves the proxy's cAdvisor CPU, memory and GC unknown.
type Gap struct {
	Loadgen  *ScrapeCoverage `json:"loadgen,omitempty"`
	Exporter *ScrapeCoverage `json:"exporter,omitempty"`
	// Workers are the loadgen workers (of a cell several ran as one
	// instrument) whose scrapes fell short, by index.
	Workers []*ScrapeCoverage `json:"workers,omitempty"`
	// OutcomeUnknown: Prometheus never scraped the window's end, a later
	// cell of the run started (the loadgen lived on) and no manifest says
	// how the cell ended.
	OutcomeUnknown bool `json:"outcome_unknown,omitempty"`
}

// ScrapeCoverage is how Prometheus scraped one target (job) over a span
// around a window, read from the raw timestamps of a series that exists
// only when a scrape succeeded. The checks and their thresholds are in
// collect/coverage.go and README.md (prometheus_gap).
type ScrapeCoverage struct {
	Job string `json:"job"`
	// Worker is the loadgen worker's index (its series' worker label);
	// nil for a target that is no loadgen worker.
	Worker   *int      `json:"worker,omitempty"`
	From     time.Time `json:"from"` // the span checked: (From, To]
	To       time.Time `json:"to"`
	Scrapes  int       `json:"scrapes"`  // successful scrapes in (From, To]
	Expected int       `json:"expected"` // (To - From) / interval, rounded
	// IntervalS is the scrape interval estimated from the run's samples.
	IntervalS Num `json:"interval_seconds"`
	// Baseline: a scrape at most BaselineS before From (the counting
	// baseline: the value at From is a fresh one, not a lookback).
	Baseline  bool `json:"baseline"`
	BaselineS Num  `json:"baseline_window_seconds"`
	// After: a scrape in (AfterFrom, To], once the traffic was over.
	After     bool      `json:"after"`
	AfterFrom time.Time `json:"after_from"`
	// The longest stretch without a scrape over the span (from the last
	// scrape at or before From, or From, to To), and what is allowed.
	GapS        Num       `json:"longest_gap_seconds"`
	GapFrom     time.Time `json:"longest_gap_from"`
	GapTo       time.Time `json:"longest_gap_to"`
	AllowedGapS Num       `json:"allowed_gap_seconds"`
}

// OK reports whether every check passed.
func (s *ScrapeCoverage) OK() bool {
	return s.Baseline && s.After && float64(s.GapS) <= float64(s.AllowedGapS)
}
