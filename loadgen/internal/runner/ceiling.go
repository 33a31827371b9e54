package runner

import (
	"context"
	"log/slog"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/placement"
	"proxybench/loadgen/internal/ceiling"
	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/plan"
)

// ceiling is the run's instrument ceiling (Runner.Ceiling), measured after
// the loadgen is pinned and before the first cell. A measurement that fails
// is recorded with its error and the run goes on: its cells are then not
// judged against a ceiling.
func (r *Runner) ceiling(ctx context.Context, open bool) *manifest.Ceiling {
	model := manifest.CeilingClosed
	if open {
		model = manifest.CeilingOpen
	}
	c, err := r.Ceiling(ctx, open)
	if err != nil {
		r.Log.Warn("instrument ceiling not measured: the cells are not judged against it", "model", model, "err", err)
		return &manifest.Ceiling{Model: model, Error: err.Error(), MeasuredAt: r.Clock.Now().UTC()}
	}
	r.Log.Info("instrument ceiling", "model", model, "rps", int64(c.RPS), "source", c.Source, "concurrency", c.Concurrency,
		"max_rate", c.MaxRate, "server_cpus", c.ServerCPUs, "loadgen_cpus", c.LoadgenCPUs)
	return c
}

// hasOpenLoop reports whether any cell of x sends an open loop (a paced
// model: open, rate stages).
func hasOpenLoop(x *plan.Expanded) bool {
	for _, c := range x.Cells {
		if c.Load != nil && c.Load.Pacer() != nil {
			return true
		}
	}
	return false
}

// ceilingOptions measures the ceiling as the run sends: its concurrency (an
// open loop's max in flight; the peak of concurrency stages), its max rate
// cap, the trivial server on the placement's proxy CPUs with the proxies'
// workers, the loadgen on its own.
func ceilingOptions(x *plan.Expanded, pl *placement.Placement, log *slog.Logger) ceiling.Options {
	p := x.Plan
	conc := p.Concurrency
	for _, c := range x.Cells {
		if c.Load != nil && c.Load.Active() != nil {
			conc = max(conc, c.Load.MaxWorkers())
		}
	}
	if conc <= 0 {
		conc = load.DefaultMaxInFlight
	}
	o := ceiling.Options{Concurrency: conc, MaxRate: p.MaxRate, Cache: ceiling.DefaultCache(),
		MaxAge: time.Duration(p.CeilingMaxAge), Log: log}
	if pl != nil {
		o.Placement, o.ServerCPUs, o.Workers, o.LoadgenCPUs = pl.Mode, pl.Proxy, pl.Workers, pl.Loadgen
	}
	return o
}
