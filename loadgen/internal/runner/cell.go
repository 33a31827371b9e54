package runner

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/cellmetrics"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/routecheck"
)

// runCell sends one cell and judges it. died is non-empty when the proxy
// is gone, so its remaining cells are skipped.
func (r *Runner) runCell(ctx context.Context, n int, c plan.Cell, ctr *dockerx.Container) (mc manifest.Cell, died string) {
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
	began := r.Clock.Now()
	gap := time.Duration(0)
	if spec.Warmup > 0 {
		gap = time.Duration(r.Plan.Settle)
	}
	r.Cells.Begin(lb, began.Add(spec.Warmup+gap), c.Concurrency, c.Rate)
	shown := c
	shown.Warmup += plan.Duration(gap) // the display counts the quiet gap as warm-up
	r.display().CellStart(n, len(r.Plan.Cells), shown)

	warmStart, err := r.warmup(ctx, c, &spec, gap)
	var res *attack.Result
	var per map[string]*attack.Result
	var pr probes
	ed := newEdges(r.Self, ctr, r.Log)
	if err == nil {
		// Set after the warm-up: its attack has no edges of its own.
		spec.OnEdge = ed.on
		mem := startMemory(c, ctr)
		res, per, err = r.attackMix(ctx, c, spec, r.display().Progress)
		if res == nil && err == nil {
			err = errNoResult
		}
		pr.memory = mem.finish()
		if c.NewConn {
			pr.churn = churnProbe(ctx, spec.URL)
		}
	}
	fill(&mc, res, r.Clock.Now())
	if !warmStart.IsZero() {
		mc.WarmupStart = &warmStart
	}
	ed.record(&mc)
	if res != nil {
		mc.ScenarioData = scenarioData(c, &mc, per, pr)
	}

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
	u := cellmetrics.Usage{ProxyCPUSeconds: mc.ProxyCPUSeconds}
	if mc.DrainEnd != nil {
		u.DrainEnd = *mc.DrainEnd
	}
	if mc.Loadgen != nil {
		u.LoadgenCPUSeconds = &mc.Loadgen.CPUSeconds
	}
	r.Cells.Used(lb, mc.End, u)
	return mc, died
}

// warmup sends the cell's warm-up as an attack of its own and then keeps
// quiet for gap before the measured attack. The engine's built-in warm-up
// would run straight into the window, and since Prometheus counters count
// warm-up too, a reporter counting over (start - 1 s, end + 1.5 s] would
// pick up to a second of it: the quiet gap keeps the counts exact. The
// proxy's upstream pools stay warm across the gap (idle timeouts are far
// longer than the settle).
func (r *Runner) warmup(ctx context.Context, c plan.Cell, spec *attack.Spec, gap time.Duration) (time.Time, error) {
	if spec.Warmup <= 0 {
		return time.Time{}, nil
	}
	warm := *spec
	warm.Duration, warm.Warmup = spec.Warmup, 0
	if warm.Mode == attack.Stages && len(spec.Stages) > 0 { // ramp up to the first stage's target
		warm.Stages = []attack.Stage{{Duration: spec.Warmup, Target: spec.Stages[0].Target}}
	}
	spec.Warmup = 0
	res, _, err := r.attackMix(ctx, c, warm, r.display().Progress)
	var start time.Time
	if res != nil {
		start = res.Start
	}
	if err != nil {
		return start, fmt.Errorf("warm-up: %w", err)
	}
	if err := r.Clock.Sleep(ctx, gap); err != nil {
		return start, err
	}
	return start, nil
}

// spec turns a planned cell into the engine's Spec.
func (r *Runner) spec(c plan.Cell) (attack.Spec, error) {
	sc, err := plan.LookupScenario(c.Scenario)
	if err != nil {
		return attack.Spec{}, err
	}
	base, err := r.Target(c.Proxy)
	if err != nil {
		return attack.Spec{}, err
	}
	p := r.Plan
	s := attack.Spec{
		URL: base + c.Path, Method: sc.Method, Body: sc.Body, Header: sc.Header.Clone(),
		Mode: attack.Mode(c.Mode), Concurrency: p.Concurrency, Rate: p.Rate,
		Duration: time.Duration(c.Duration), Warmup: time.Duration(c.Warmup), Timeout: time.Duration(p.Timeout),
		NewConnPerRequest: sc.NewConnPerRequest, ExpectOrigin: c.Origin,
		Labels: attack.Labels{Proxy: c.Proxy, Origin: c.Origin, Scenario: c.Scenario},
	}
	if sc.OpenRate != nil { // the scenario fixes its own open loop (ratelimit)
		s.Mode, s.Rate = attack.Open, c.Rate
	}
	if s.Mode == attack.Stages {
		s.StageKind = p.StageKind
		for _, st := range p.Stages {
			s.Stages = append(s.Stages, attack.Stage{Duration: time.Duration(st.Duration), Target: st.Target})
		}
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
	if mc.Start.IsZero() { // stopped during warm-up: an empty window
		mc.Start = mc.End
	}
	if !res.WarmupStart.IsZero() && mc.WarmupS > 0 {
		ws := res.WarmupStart
		mc.WarmupStart = &ws
	}
	mc.Requests, mc.Errors, mc.Bytes = res.Requests, res.Errors, res.Bytes
	mc.Scheduled, mc.Sent, mc.WrongOrigin = res.Scheduled, res.Sent, res.WrongOrigin
	for code, k := range res.Codes {
		mc.Codes[strconv.Itoa(code)] = k
	}
	mc.ErrorReasons = maps.Clone(res.ErrorReasons)
	mc.Late, mc.Missed, mc.Capped, mc.LagP99S = res.Late, res.Missed, res.Capped, res.LagP99.Seconds()
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
			if how := exitInfo(ctx, ctr.ID); how != "" {
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
	base, err := r.Target(c.Proxy)
	if err != nil {
		return ""
	}
	res := routecheck.CheckRoute(ctx, routecheck.NewClient(), c.Proxy, base, c.Origin, 2*time.Second)
	if res.OK {
		return ""
	}
	return fmt.Sprintf("proxy %s stopped answering (%s)", c.Proxy, res.Short)
}
