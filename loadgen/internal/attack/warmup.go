package attack

import (
	"context"
	"fmt"
	"time"
)

// WarmUp is the one warm-up before a measured attack: s's load model's
// warm-up of d (Model.Warmup: the same load held, for stages a ramp from 0
// to the first stage's target) sent through run as an attack of its own,
// then gap of quiet. Prometheus counters count the warm-up too, so a count
// over a window that warm-up ran straight into would take in up to a scrape
// interval of it: the gap keeps such counts exact, and the target's upstream
// pools stay warm across it. The warm-up has no edges (s.OnEdge is not
// called). run is Attacker.Run, or the runner's mix of variants; sleep
// waits for gap unless ctx ends (nil: no gap). WarmUp returns when the
// warm-up's window began, zero when d is 0 or nothing was sent.
func WarmUp(ctx context.Context, s Spec, d, gap time.Duration,
	run func(context.Context, Spec) (*Result, error), sleep func(context.Context, time.Duration) error) (time.Time, error) {
	if d <= 0 {
		return time.Time{}, nil
	}
	if s.Load == nil {
		return time.Time{}, fmt.Errorf("warm-up: spec Load is empty")
	}
	warm := s
	warm.Load, warm.OnEdge = s.Load.Warmup(d), nil
	res, err := run(ctx, warm)
	var start time.Time
	if res != nil {
		start = res.Start
	}
	if err != nil {
		return start, fmt.Errorf("warm-up: %w", err)
	}
	if sleep != nil {
		if err := sleep(ctx, gap); err != nil {
			return start, err
		}
	}
	return start, nil
}
