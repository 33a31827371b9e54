package runner

import (
	"context"
	"time"

	"proxybench/internal/stack"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/routecheck"
)

// preflight checks the routes the proxy's runnable cells use at target,
// retrying them up to wait.
func (r *Runner) preflight(ctx context.Context, proxy string, cells []plan.Cell, target routecheck.Target, wait time.Duration) map[string]routecheck.Result {
	if stack.IsDirect(proxy) {
		return r.preflightDirect(ctx, cells, wait)
	}
	out := map[string]routecheck.Result{}
	base, err := target(proxy)
	origins := runnableOrigins(cells)
	if err != nil {
		for _, o := range origins {
			out[o] = routecheck.Result{Reason: err.Error()}
		}
		return out
	}
	timeout := min(time.Duration(r.Plan.Timeout), 5*time.Second)
	for _, res := range routecheck.CheckProxy(ctx, routecheck.NewClient(), proxy, base, origins, timeout, wait) {
		out[res.Origin] = res
		if !res.OK {
			r.Log.Warn("preflight: route broken, its cells are skipped", "reason", res.Reason)
		}
	}
	return out
}

// runnableOrigins are the origins of the cells that run, in their order.
func runnableOrigins(cells []plan.Cell) []string {
	var origins []string
	seen := map[string]bool{}
	for _, c := range cells {
		if c.Skip == nil && !seen[c.Origin] {
			seen[c.Origin] = true
			origins = append(origins, c.Origin)
		}
	}
	return origins
}
