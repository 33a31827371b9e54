// Package progress owns what a person watching `loadgen run` sees: on a
// terminal one line redrawn about once a second (cell n of N, id,
// elapsed/remaining, live RPS, p99, errors) and a summary line per finished
// cell; elsewhere (CI, pipes) plain log lines at each cell's start and end.
// It never blocks the load loop for more than one short write.
package progress

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
)

// Display is told about cells as they run.
type Display interface {
	CellStart(n, total int, c plan.Cell)
	Progress(p attack.Progress) // from the attack's goroutine, about once a second
	CellEnd(n, total int, c manifest.Cell)
	// Close ends the live line, so later log lines start clean.
	Close()
}

// New picks the terminal display when terminal is true, the log lines
// otherwise. now is the clock for elapsed time.
func New(w io.Writer, log *slog.Logger, terminal bool, now func() time.Time) Display {
	if terminal {
		return &live{w: w, now: now}
	}
	return &plain{log: log}
}

type live struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	n, of   int
	cell    plan.Cell
	started time.Time
	drawn   bool
}

func (l *live) CellStart(n, total int, c plan.Cell) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n, l.of, l.cell, l.started = n, total, c, l.now()
	l.draw(attack.Progress{})
}

func (l *live) Progress(p attack.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.draw(p)
}

func (l *live) draw(p attack.Progress) {
	el := l.now().Sub(l.started)
	total := time.Duration(l.cell.Warmup + l.cell.Duration)
	phase := ""
	if el < time.Duration(l.cell.Warmup) {
		phase = " warm-up"
	}
	fmt.Fprintf(l.w, "\r\033[K[%d/%d] %s%s %s/%s left %s  %s rps  p99 %s  err %d  in-flight %d",
		l.n, l.of, l.cell.ID, phase, round(el), round(total), round(max(0, total-el)),
		si(p.RPS), dur(p.P99), p.Errors, p.InFlight)
	l.drawn = true
}

func (l *live) CellEnd(n, total int, c manifest.Cell) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "\r\033[K[%d/%d] %s\n", n, total, Summary(c))
	l.drawn = false
}

func (l *live) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\n")
		l.drawn = false
	}
}

type plain struct{ log *slog.Logger }

func (p *plain) CellStart(n, total int, c plan.Cell) {
	p.log.Info("cell start", "n", fmt.Sprintf("%d/%d", n, total), "cell", c.ID,
		"duration", c.Duration.String(), "warmup", c.Warmup.String(), "mode", c.Mode, "concurrency", c.Concurrency, "rate", c.Rate)
}

func (p *plain) Progress(attack.Progress) {}

func (p *plain) CellEnd(n, total int, c manifest.Cell) {
	args := []any{"n", fmt.Sprintf("%d/%d", n, total), "cell", c.ID, "status", c.Status}
	if c.Status != manifest.CellSkipped {
		args = append(args, "requests", c.Requests, "rps", int64(CellRPS(c)+0.5), "p50", dur(secs(c.Latency.P50)),
			"p99", dur(secs(c.Latency.P99)), "max", dur(secs(c.Latency.Max)), "errors", c.Errors)
		if c.Late > 0 {
			args = append(args, "late", c.Late)
		}
		if c.Missed > 0 {
			args = append(args, "missed", c.Missed)
		}
	}
	if c.Reason != "" {
		args = append(args, "reason", c.Reason)
	}
	p.log.Info("cell end", args...)
}

func (p *plain) Close() {}

// Summary is one line about a finished cell.
func Summary(c manifest.Cell) string {
	if c.Status == manifest.CellSkipped {
		return fmt.Sprintf("%s skipped: %s", c.ID, c.Reason)
	}
	s := fmt.Sprintf("%s %s: %d req, %s rps, p50 %s, p99 %s, max %s, errors %d",
		c.ID, c.Status, c.Requests, si(CellRPS(c)), dur(secs(c.Latency.P50)), dur(secs(c.Latency.P99)), dur(secs(c.Latency.Max)), c.Errors)
	if c.Late > 0 {
		s += fmt.Sprintf(", late %d", c.Late)
	}
	if c.Missed > 0 {
		s += fmt.Sprintf(", missed %d", c.Missed)
	}
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	return s
}

// CellRPS is the cell's in-window requests over its planned window (late
// completions are not in it).
func CellRPS(c manifest.Cell) float64 {
	w := c.End.Sub(c.Start).Seconds()
	if w <= 0 {
		return 0
	}
	return float64(c.Requests) / w
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

// dur prints a latency with 3 significant figures in a fitting unit.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3gs", d.Seconds())
}

func si(v float64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.1fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}
