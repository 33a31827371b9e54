package runner

import (
	"context"
	"sync"
	"time"

	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
)

// attackMix sends a cell's traffic. A cell with one variant is one attack;
// a mix (the auth scenario's valid, missing and wrong keys) is one attack
// per variant, all at once, each with its share of the rate (open loop) or
// of the connections (closed loop), so every variant is counted apart and
// the report can check each got the answer its key deserves. Only the
// largest variant reports progress (the display shows one attack). The
// engine's per-labels gauges (in-flight, target rate) hold the sum over the
// variants, and counters and histograms add up. Spec.OnEdge is called once
// per edge for the whole mix: at the first variant's start and at the last
// variant's end.
func (r *Runner) attackMix(ctx context.Context, c plan.Cell, spec attack.Spec, progress func(attack.Progress)) (*attack.Result, map[string]*attack.Result, error) {
	if len(c.Variants) < 2 {
		res, err := r.Attacker.Run(ctx, spec, progress)
		return res, nil, err
	}
	specs := splitSpec(spec, c.Variants)
	finish := joinEdges(specs, spec.OnEdge)
	results := make([]*attack.Result, len(specs))
	errs := make([]error, len(specs))
	lead := 0
	for i, v := range c.Variants {
		if v.Share > c.Variants[lead].Share {
			lead = i
		}
	}
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pr func(attack.Progress)
			if i == lead {
				pr = progress
			}
			results[i], errs[i] = r.Attacker.Run(ctx, specs[i], pr)
		}()
	}
	wg.Wait()
	finish()
	per := map[string]*attack.Result{}
	var firstErr error
	for i, v := range c.Variants {
		if results[i] != nil {
			per[v.Name] = results[i]
		}
		if errs[i] != nil && firstErr == nil {
			firstErr = errs[i]
		}
	}
	return attack.Merge(results...), per, firstErr
}

// joinEdges makes the variants' edges one pair: the start edge is passed on
// at the first variant's start, the end edge at the last variant's end.
// finish, called once every variant has returned, passes on an end edge
// that a variant which never started sending would otherwise hold back.
func joinEdges(specs []attack.Spec, on func(end bool, at time.Time)) (finish func()) {
	if on == nil {
		return func() {}
	}
	var (
		mu             sync.Mutex
		started, ended int
		last           time.Time
	)
	for i := range specs {
		specs[i].OnEdge = func(end bool, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if !end {
				started++
				if started == 1 {
					on(false, at)
				}
				return
			}
			ended++
			if at.After(last) {
				last = at
			}
			if ended == len(specs) { // the merged window ends at the latest variant's end
				on(true, last)
			}
		}
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if started > 0 && ended < len(specs) {
			ended = len(specs)
			on(true, last)
		}
	}
}

// splitSpec gives each variant its header and its share of the load
// (load.Model.Share: at least one connection each, so a small share is
// still sent) and of the max rate cap.
func splitSpec(s attack.Spec, vs []scenario.Variant) []attack.Spec {
	out := make([]attack.Spec, len(vs))
	for i, v := range vs {
		x := s
		x.Header = v.Header.Clone()
		x.Load = s.Load.Share(v.Share)
		x.MaxRate = s.MaxRate * v.Share // the variants share the cap as they share the load
		out[i] = x
	}
	return out
}
