// Package gccycles owns a Go program's GC cycles as intervals of the
// host's wall clock: its gctrace lines read from its container's log
// (package logsource), parsed (package gctrace), and each cycle's start,
// which gctrace prints as time since the process started, anchored to the
// wall clock by the log's own timestamps.
//
// The anchor: the runtime prints a cycle's line when the cycle ends, and
// the engine stamps the line when it reads it, so for every cycle
// stamp >= process start + @start + its phases. The process start is
// taken as the least of stamp - (@start + phases) over the cycles read:
// too late by that cycle's log delay plus the part of a millisecond the
// runtime truncated from its @start (gctrace prints milliseconds), never
// too early. Anchor records the spread of that difference over the cycles
// and the engine's own start time of the container, which must come
// before it.
package gccycles

import (
	"context"
	"fmt"
	"slices"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/gctrace"
	"proxybench/internal/logsource"
)

// Cycle is one GC cycle on the wall clock: it began at Start with the
// stop-the-world sweep termination, then the concurrent mark, then the
// stop-the-world mark termination. Start is exact to the anchor's error
// and the runtime's millisecond; the phases to its two printed digits.
type Cycle struct {
	N         uint64        `json:"n"`
	Start     time.Time     `json:"start"`
	SweepTerm time.Duration `json:"sweep_term_ns"`
	Mark      time.Duration `json:"mark_ns"`
	MarkTerm  time.Duration `json:"mark_term_ns"`
}

// End is when the cycle's mark termination ended.
func (c Cycle) End() time.Time { return c.Start.Add(c.SweepTerm + c.Mark + c.MarkTerm) }

// Anchor is how the cycles were placed on the wall clock.
type Anchor struct {
	// ProcessStart is the process's start as the anchor puts it.
	ProcessStart time.Time `json:"process_start"`
	// Cycles is how many cycles' lines it was taken from.
	Cycles int `json:"cycles"`
	// DelayMedian is the median over those cycles of stamp - (process
	// start + @start + phases): the log's typical delay plus the
	// truncated part of @start. The anchor's own error is the least of
	// these differences, at most DelayMedian unless the log was slow on
	// every line.
	DelayMedian time.Duration `json:"delay_median_ns"`
	// EngineStart is the container's start as the engine recorded it;
	// AfterEngineStart = ProcessStart - EngineStart, which a correct
	// anchor keeps at or above zero (the runtime starts after the engine
	// started the container's process).
	EngineStart      time.Time     `json:"engine_start"`
	AfterEngineStart time.Duration `json:"after_engine_start_ns"`
}

// Truncation is how much of a cycle's start the runtime's gctrace drops:
// it prints @start in whole milliseconds, rounded down.
const Truncation = time.Millisecond

// sink keeps the fully parsed gc lines.
type sink struct{ lines []Stamped }

func (s *sink) Line(ts time.Time, line []byte) {
	var c gctrace.Cycle
	if k, err := gctrace.Parse(line, &c); k == gctrace.GC && err == nil {
		s.lines = append(s.lines, Stamped{ts, c})
	}
}

func (s *sink) Reset() {}

// Read reads the GC cycles of ctr's current process from its log, the
// lines stamped from since to now, and returns those that overlap
// [from, to] with the anchor they were placed by. A process with no cycle
// in its log since since is an error naming the container.
func Read(ctx context.Context, e logsource.Engine, ctr dockerx.Container, since, from, to time.Time) ([]Cycle, Anchor, error) {
	var s sink
	if err := logsource.Read(ctx, e, ctr, since, &s); err != nil {
		return nil, Anchor{}, fmt.Errorf("gc cycles of %s: %w", ctr.Name, err)
	}
	if len(s.lines) == 0 {
		return nil, Anchor{}, fmt.Errorf("gc cycles of %s: no gctrace line in its log since %s (is GODEBUG=gctrace=1 set?)", ctr.Name, since.UTC().Format(time.RFC3339))
	}
	cycles, a := Place(s.lines)
	a.EngineStart = ctr.StartedAt
	if !ctr.StartedAt.IsZero() {
		a.AfterEngineStart = a.ProcessStart.Sub(ctr.StartedAt)
	}
	return Within(cycles, from, to), a, nil
}

// Stamped is a parsed gc line and when the log stamped it.
type Stamped struct {
	At    time.Time
	Cycle gctrace.Cycle
}

// Place anchors the lines of one process (see the package comment) and
// returns their cycles on the wall clock in cycle order, each once.
func Place(lines []Stamped) ([]Cycle, Anchor) {
	if len(lines) == 0 {
		return nil, Anchor{}
	}
	diffs := make([]time.Time, len(lines))
	start := time.Time{}
	for i, l := range lines {
		c := &l.Cycle
		diffs[i] = l.At.Add(-(c.At + c.SweepTerm + c.Mark + c.MarkTerm))
		if start.IsZero() || diffs[i].Before(start) {
			start = diffs[i]
		}
	}
	delays := make([]time.Duration, len(diffs))
	for i, d := range diffs {
		delays[i] = d.Sub(start)
	}
	slices.Sort(delays)
	a := Anchor{ProcessStart: start, Cycles: len(lines), DelayMedian: delays[len(delays)/2]}
	seen := map[uint64]bool{}
	var out []Cycle
	for _, l := range lines {
		c := &l.Cycle
		if seen[c.N] {
			continue
		}
		seen[c.N] = true
		out = append(out, Cycle{N: c.N, Start: start.Add(c.At), SweepTerm: c.SweepTerm, Mark: c.Mark, MarkTerm: c.MarkTerm})
	}
	slices.SortFunc(out, func(a, b Cycle) int { return a.Start.Compare(b.Start) })
	return out, a
}

// Within is the cycles that overlap [from, to].
func Within(cycles []Cycle, from, to time.Time) []Cycle {
	var out []Cycle
	for _, c := range cycles {
		if c.End().After(from) && c.Start.Before(to) {
			out = append(out, c)
		}
	}
	return out
}
