package runner

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"proxybench/internal/cputime"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/cellmetrics"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/routecheck"
)

// runCell sends one cell and judges it. died is non-empty when the proxy
// is gone, so its remaining cells are skipped. With sl, the cell is the
// first of a sliced duet's pair: the window is both cells' length, sl
// switches the arms in it and keeps the attack's result (runPair).
func (r *Runner) runCell(ctx context.Context, n int, c plan.Cell, ctr *dockerx.Container, sl *slicer) (mc manifest.Cell, died string) {
	mc = base(c)
	lb := r.labels(c)
	spec, err := r.spec(c)
	if err != nil {
		mc.Status, mc.Reason = manifest.CellFailed, err.Error()
		mc.Start, mc.End = r.Clock.Now(), r.Clock.Now()
		r.Cells.End(lb, mc.Start, mc.End, true)
		r.Cells.Used(lb, mc.End, cellmetrics.Usage{})
		return mc, ""
	}
	if sl != nil {
		spec.Load = c.Load.Warmup(2 * time.Duration(c.Duration)) // the pair's window: the same load for both cells' length
		spec.Split = sl
	}
	origin := r.originContainer(ctx, c.Origin) // before the warm-up: an engine round trip
	faults := r.startFaults(ctx, c)            // nil unless the scenario injects faults
	began := r.Clock.Now()
	warm, gap := time.Duration(c.Warmup), time.Duration(0)
	if warm > 0 {
		gap = time.Duration(r.Plan.Settle)
	}
	r.Cells.Begin(lb, began.Add(warm+gap), c.Concurrency, c.Rate)
	shown := c
	shown.Warmup += plan.Duration(gap) // the display counts the quiet gap as warm-up
	r.display().CellStart(n, len(r.Plan.Cells), shown)

	// The warm-up is an attack of its own, then a quiet gap (attack.WarmUp);
	// it has no edges, and the proxy's upstream pools stay warm across the
	// gap (idle timeouts are far longer than the settle).
	warmStart, err := attack.WarmUp(ctx, spec, warm, gap, func(ctx context.Context, s attack.Spec) (*attack.Result, error) {
		res, _, err := r.attackMix(ctx, c, s, r.display().Progress)
		return res, err
	}, r.Clock.Sleep)
	var res *attack.Result
	var per map[string]*attack.Result
	var pr probes
	ed := newEdges(r.Self, ctr, origin, r.Log)
	if err == nil {
		// Set after the warm-up: its attack has no edges of its own.
		spec.OnEdge = ed.on
		spec.SampleRequests = r.gcLogs(ctr) != nil
		// What else starts at the window's start edge: a sliced pair's
		// slicer, or a faults cell's schedule (which also bins the window).
		var begin func(context.Context, time.Time)
		switch {
		case faults != nil:
			spec.Split, begin = faults, faults.begin
		case sl != nil:
			begin = sl.begin
		}
		if begin != nil {
			spec.OnEdge = func(end bool, at time.Time) {
				ed.on(end, at)
				if !end {
					begin(ctx, at)
				}
			}
		}
		mem := startMemory(c, ctr)
		steal := cputime.WatchSteal(nil)
		res, per, err = r.attackMix(ctx, c, spec, r.display().Progress)
		if worst, serr := steal.Stop(); serr == nil {
			mc.StealWorstSecond = &worst
			mc.Stall = windowStall(steal, res)
		}
		if res == nil && err == nil {
			err = errNoResult
		}
		pr.memory = mem.finish()
		if wants(c, scenario.ProbeTimeWait) {
			pr.churn = churnProbe(ctx, spec.URL)
		}
		if faults != nil { // waits for the schedule and heals the replica whatever happened
			end := r.Clock.Now()
			if res != nil {
				end = res.End
			}
			pr.faults = faults.finish(ctx, end)
		}
	}
	fill(&mc, res, r.Clock.Now())
	if sl != nil {
		sl.res = res
	}
	if !warmStart.IsZero() {
		mc.WarmupStart = &warmStart
	}
	ed.record(&mc)
	r.gcTail(ctx, c, ctr, res, &mc)
	if res != nil {
		workerRoles(mc.Contention, res.Workers)
		mc.ScenarioData = scenarioData(c, &mc, per, pr)
	}
	mc.Disturbed = mc.Disturbance()

	switch {
	case ctx.Err() != nil:
		mc.Status = manifest.CellAborted
		mc.Reason = fmt.Sprintf("interrupted after %s of %s: partial data", r.Clock.Now().Sub(began).Round(100*time.Millisecond),
			time.Duration(c.Warmup+c.Duration))
	case err != nil:
		mc.Status, mc.Reason = manifest.CellFailed, "attack: "+err.Error()
	default:
		mc.Status = manifest.CellOK
		died = r.proxyGone(ctx, ctr)
		if died == "" && mc.Errors > 0 {
			died = r.probeAfter(ctx, c)
		}
		if died != "" {
			mc.Status, mc.Reason = manifest.CellFailed, died+" during the cell"
		} else if mc.Requests == 0 && mc.Errors > 0 && mc.ErrorReasons["refused"] == mc.Errors {
			mc.Status = manifest.CellFailed
			mc.Reason = fmt.Sprintf("all %d requests were refused: nothing listens at %s", mc.Errors, spec.URL)
		}
	}
	r.Cells.End(lb, mc.Start, mc.End, mc.Status != manifest.CellOK)
	r.Cells.Used(lb, mc.End, cellUsage(&mc))
	return mc, died
}

// cellUsage is what an ended cell's window cost, for its series.
func cellUsage(mc *manifest.Cell) cellmetrics.Usage {
	u := cellmetrics.Usage{ProxyCPUSeconds: mc.ProxyCPUSeconds, Workers: len(mc.Workers)}
	if mc.DrainEnd != nil {
		u.DrainEnd = *mc.DrainEnd
	}
	if mc.Loadgen != nil {
		u.LoadgenCPUSeconds = &mc.Loadgen.CPUSeconds
	}
	return u
}

// spec turns a planned cell into the engine's Spec: the load is the cell's
// own model.
func (r *Runner) spec(c plan.Cell) (attack.Spec, error) {
	sc := c.Def // resolved at expansion
	if sc == nil {
		return attack.Spec{}, fmt.Errorf("cell %s: scenario %s not resolved (a cell comes from plan.Expand)", c.ID, c.Scenario)
	}
	target := r.Target
	if sc.Secure() {
		target = r.TLSTarget
	}
	base, err := r.baseURL(c, target)
	if err != nil {
		return attack.Spec{}, err
	}
	s := attack.Spec{
		URL: base + c.Path, Method: sc.Method, Body: sc.Body, Header: sc.Header.Clone(),
		Load: c.Load, Timeout: time.Duration(r.Plan.Timeout), MaxRate: r.Plan.MaxRate,
		NewConnPerRequest: sc.NewConnPerRequest, ExpectOrigin: c.Origin,
		Labels: attack.Labels{Proxy: c.Proxy, Origin: c.Origin, Scenario: c.Scenario},
	}
	if err := r.tlsSpec(&s, c.Shape); err != nil {
		return attack.Spec{}, err
	}
	return s, nil
}

// fill copies the engine's exact account into the manifest cell: the
// planned window's counts, what completed late, and the open loop's misses,
// capped sends and lag.
func fill(mc *manifest.Cell, res *attack.Result, now time.Time) {
	if res == nil {
		mc.Start, mc.End = now, now
		return
	}
	mc.Start, mc.End = res.Start, res.End
	if mc.Start.IsZero() { // no window began: an empty one
		mc.Start = mc.End
	}
	mc.Requests, mc.Errors, mc.Bytes = res.Requests, res.Errors, res.Bytes
	mc.Scheduled, mc.Sent, mc.WrongOrigin = res.Scheduled, res.Sent, res.WrongOrigin
	for code, k := range res.Codes {
		mc.Codes[strconv.Itoa(code)] = k
	}
	mc.ErrorReasons = maps.Clone(res.ErrorReasons)
	mc.Late, mc.Missed, mc.Queued, mc.Capped, mc.LagP99S = res.Late, res.Missed, res.Queued, res.Capped, res.LagP99.Seconds()
	mc.Protocol, mc.TLS = string(res.Protocol), res.TLS
	if len(res.LateCodes) > 0 {
		mc.LateCodes = map[string]int64{}
		for code, k := range res.LateCodes {
			mc.LateCodes[strconv.Itoa(code)] = k
		}
	}
	mc.LateReasons = maps.Clone(res.LateReasons)
	if !res.DrainEnd.IsZero() {
		de := res.DrainEnd
		mc.DrainEnd = &de
	}
	if res.Hist != nil {
		mc.Latency = manifest.LatencyOf(res.Hist)
	}
	mc.Workers = workers(res.Workers)
}

// proxyGone says whether the proxy died during the cell: its container
// stopped, restarted or froze (Docker), or it stopped answering (a probe
// of the route after a cell with transport errors, which also covers a
// proxy that is not a container).
func (r *Runner) proxyGone(ctx context.Context, ctr *dockerx.Container) string {
	if ctr != nil && r.Docker != nil {
		now, err := r.Docker.Inspect(ctx, ctr.ID)
		switch {
		case dockerx.IsNotFound(err):
			return fmt.Sprintf("proxy container %s was removed", ctr.Name)
		case err != nil:
			r.Log.Warn("cannot inspect the proxy after the cell", "container", ctr.Name, "err", err)
		case !now.Running:
			if how := now.ExitInfo(); how != "" {
				return fmt.Sprintf("proxy container %s %s (%s)", ctr.Name, now.State, how)
			}
			return fmt.Sprintf("proxy container %s is %s", ctr.Name, now.State)
		case now.State == "paused":
			return fmt.Sprintf("proxy container %s was paused", ctr.Name)
		case !now.StartedAt.Equal(ctr.StartedAt):
			return fmt.Sprintf("proxy container %s restarted (again at %s)", ctr.Name, now.StartedAt.UTC().Format(time.RFC3339))
		}
	}
	return ""
}

// probeAfter re-checks the route after a cell that saw transport errors: a
// proxy that stopped answering fails the cell even without Docker.
func (r *Runner) probeAfter(ctx context.Context, c plan.Cell) string {
	base, err := r.baseURL(c, r.Target)
	if err != nil {
		return ""
	}
	res := routecheck.CheckRoute(ctx, routecheck.NewClient(), c.Proxy, base, c.Origin, 2*time.Second)
	if res.OK {
		return ""
	}
	if stack.IsDirect(c.Proxy) {
		return fmt.Sprintf("origin %s stopped answering on its own port (%s)", c.Origin, res.Short)
	}
	return fmt.Sprintf("proxy %s stopped answering (%s)", c.Proxy, res.Short)
}

// windowStall is the part of the watch's longest stall inside res's
// window (a stall in the warm-up or the drain does not touch the window's
// counts), nil when none of it was or without a result.
func windowStall(w *cputime.StealWatch, res *attack.Result) *manifest.Stall {
	d, at := w.Stall()
	if res == nil || d <= 0 {
		return nil
	}
	from, to := at, at.Add(d)
	if from.Before(res.Start) {
		from = res.Start
	}
	if to.After(res.End) {
		to = res.End
	}
	if !to.After(from) {
		return nil
	}
	return &manifest.Stall{Seconds: to.Sub(from).Seconds(), At: from}
}
