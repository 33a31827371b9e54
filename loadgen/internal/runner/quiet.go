package runner

import (
	"context"
	"time"

	"proxybench/loadgen/internal/plan"
)

// quiet waits before the run's first traffic for Prometheus's first scrape
// of this process (Seen), and before c's traffic what plan.Gaps says
// (asked right after the previous cell ended) and, where Prometheus scrapes
// the loadgen, on until it has scraped it past the previous cell's end,
// within the settle:
// the scrape that closes that cell's counting span is then served before
// c's load can delay it (a closed loop fills the CPU Prometheus shares with
// the loadgen on a small host).
func (r *Runner) quiet(ctx context.Context, c plan.Cell) error {
	if r.Seen != nil { // the run's first traffic
		select {
		case <-r.Seen:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.Seen = nil
	}
	if r.gaps == nil {
		r.gaps = r.Plan.Gaps()
	}
	ended := r.Clock.Now()
	d := r.gaps.Before(c, ended)
	if d <= 0 {
		return nil
	}
	var scraped <-chan struct{}
	rest := time.Duration(r.Plan.Settle) - d
	if r.ScrapedAfter != nil && rest > 0 {
		scraped = r.ScrapedAfter(ended) // a scrape during the quiet counts
	}
	if err := r.Clock.Sleep(ctx, d); err != nil {
		return err
	}
	if scraped == nil {
		return nil
	}
	r.sleepUntil(ctx, scraped, rest)
	return ctx.Err()
}

// sleepUntil sleeps d on the runner's clock, or less if done is closed
// first; it says whether d ran out (false: done, or ctx ended).
func (r *Runner) sleepUntil(ctx context.Context, done <-chan struct{}, d time.Duration) (timedOut bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return r.Clock.Sleep(ctx, d) == nil
}
