package runner

import (
	"context"
	"fmt"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/routecheck"
)

// The direct control (stack.Direct, plan.Plan.Direct) runs like a proxy
// of the round, except that there is no proxy: its cells go to each
// origin's own port (DirectTarget), every proxy is paused meanwhile (the
// isolation of any cell), and there is no container to check, version,
// configuration, CPU edge, memory probe or GC trace of a proxy.

// prepareDirect isolates the direct control's cells: every proxy of the
// project paused. A non-nil skip skips them all.
func (r *Runner) prepareDirect(ctx context.Context, iso *isolation) *manifest.Skip {
	if !r.Plan.Isolate {
		return nil
	}
	if err := iso.isolate(ctx, stack.Direct); err != nil {
		return &manifest.Skip{Kind: manifest.SkipIsolation, Reason: fmt.Sprintf("not run: isolation failed: %v", err)}
	}
	return nil
}

// baseURL is the base URL of c's traffic: the origin's own port for the
// direct control, else target's for the proxy (moved to the candidate's
// ports for a candidate's cell).
func (r *Runner) baseURL(c plan.Cell, target routecheck.Target) (string, error) {
	if stack.IsDirect(c.Proxy) {
		return r.DirectTarget(c.Origin)
	}
	base, err := target(c.Proxy)
	if err == nil && r.candidateCell(c) {
		base, err = shiftURL(base)
	}
	return base, err
}

// preflightDirect checks every origin the direct control's runnable cells
// use on its own port, retrying up to wait.
func (r *Runner) preflightDirect(ctx context.Context, cells []plan.Cell, wait time.Duration) map[string]routecheck.Result {
	origins := runnableOrigins(cells)
	timeout := min(time.Duration(r.Plan.Timeout), 5*time.Second)
	client := routecheck.NewClient()
	out := map[string]routecheck.Result{}
	for _, res := range routecheck.Retry(ctx, len(origins), wait, func(i int) routecheck.Result {
		base, err := r.DirectTarget(origins[i])
		if err != nil {
			return routecheck.Result{Proxy: stack.Direct, Origin: origins[i], Reason: err.Error()}
		}
		return routecheck.CheckRoute(ctx, client, stack.Direct, base, origins[i], timeout)
	}) {
		out[res.Origin] = res
		if !res.OK {
			r.Log.Warn("preflight: an origin's own port is broken, its direct cells are skipped", "reason", res.Reason)
		}
	}
	return out
}
