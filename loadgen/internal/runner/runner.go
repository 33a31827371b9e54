// Package runner owns `loadgen run`: it walks the expanded plan round by
// round, a proxy's cells of a round together (isolation through Docker,
// preflight, arms' treatments, warm-up, settle, cooldown),
// drives the attack engine one cell at a time, publishes the cell window
// series, and keeps results/<run>/manifest.json current after every cell so
// nothing measured is lost to a crash, a dead proxy or Ctrl-C.
package runner

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/placement"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/cellmetrics"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/selfcpu"
)

// Attacker sends one cell's load; *attack.Attacker is one. On ctx
// cancellation it returns the partial result and ctx.Err().
type Attacker interface {
	Run(ctx context.Context, s attack.Spec, progress func(attack.Progress)) (*attack.Result, error)
}

// Docker is what the runner asks of the engine; *dockerx.Client is one.
type Docker interface {
	Containers(ctx context.Context, project string) ([]dockerx.Container, error)
	Service(ctx context.Context, project, service string) (dockerx.Container, error)
	Inspect(ctx context.Context, id string) (dockerx.Container, error)
	Version(ctx context.Context, ctr dockerx.Container) (string, error)
	Pause(ctx context.Context, id string) error
	Unpause(ctx context.Context, id string) error
	Stop(ctx context.Context, id string, timeout time.Duration) error
	Start(ctx context.Context, id string) error
	Kill(ctx context.Context, id, signal string) error
}

// Clock gives the time and waits; tests replace Sleep so settles and
// cooldowns cost nothing.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the wall clock.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx ends.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Runner runs one expanded plan.
type Runner struct {
	Plan     *plan.Expanded
	Attacker Attacker
	Cells    *cellmetrics.Metrics
	Docker   Docker            // nil: no isolation, liveness checks or versions
	Target   routecheck.Target // proxy -> base URL; default the stack's ports
	// TLSTarget is proxy -> base URL of its TLS port (https://), where the
	// TLS scenarios' cells go; default the stack's TLS ports.
	TLSTarget routecheck.Target
	// DirectTarget is origin -> base URL of its own port, where the
	// direct control's cells go (direct.go); default the stack's.
	DirectTarget routecheck.Target
	// TLSDir holds the lab CA the TLS cells trust (internal/tlscert);
	// default tlscert.DefaultDir.
	TLSDir  string
	Display progress.Display
	Clock   Clock
	Log     *slog.Logger
	Host    manifest.Host
	// Self reads the loadgen's own CPU at every window edge; nil: a fresh
	// unregistered one.
	Self *selfcpu.Collector
	// Placement is the run's CPU placement, resolved for this host; Run
	// checks the stack follows it and pins the loadgen (placement.go).
	// nil: neither.
	Placement *placement.Placement
	// Ceiling measures (or recalls) the instrument's own ceiling under the
	// run's placement before the cells (ceiling.go): of the closed-loop
	// engine, or with open of the open-loop one; nil: none is recorded.
	Ceiling func(ctx context.Context, open bool) (*manifest.Ceiling, error)
	// ScrapedAfter is closed once Prometheus has scraped the loadgen's
	// /metrics in a scrape that began at or after t (the metrics server's
	// ScrapedAfter; with several loadgens, every worker's too); nil: the
	// linger is the plan's Linger in full.
	ScrapedAfter func(t time.Time) <-chan struct{}
	// Seen, when set, is closed once Prometheus has first scraped this
	// process, or it gave up waiting: the
	// first cell's traffic waits for it (quiet). Until then the run
	// prepares (placement, workers, ceiling, the first proxy's isolation
	// and preflight) in parallel with that wait.
	Seen <-chan struct{}
	// Start, when set, is called once the loadgen is pinned to its CPUs and
	// before anything is written: it starts the loadgen workers (package
	// fleet), which inherit the pinning. An error ends the run before it
	// begins.
	Start func(ctx context.Context) error

	m       *manifest.Manifest
	dir     string
	gaps    *plan.Gaps // the quiet between cells, over the run
	broken  int
	proxies map[string]*proxyState
	arms    *arms
	nodes   nodeHosts // proxies on another Swarm node: their traffic goes there
	// full is set when the results disk ran out of space: the run stops
	// after the cell that could not be saved (stop ends it).
	full error
	stop context.CancelFunc

	rootCAs  *x509.CertPool // the lab CA, read once (tls.go)
	rootsErr error
}

// Outcome is how a run ended.
type Outcome struct {
	Manifest *manifest.Manifest
	Dir      string // results/<run>
	Broken   int    // cells failed, or skipped for a reason other than an unready scenario
}

// Run executes every cell, writes the manifest after each and lingers at
// the end. It returns an error only when results cannot be written; an
// interrupted run is Outcome.Manifest.Status == "interrupted".
func (r *Runner) Run(ctx context.Context) (*Outcome, error) {
	if r.Target == nil {
		r.Target = routecheck.StackTarget
	}
	if r.TLSTarget == nil {
		r.TLSTarget = routecheck.StackTLSTarget
	}
	if r.DirectTarget == nil {
		r.DirectTarget = routecheck.StackDirectTarget
	}
	r.Target, r.TLSTarget = r.nodes.wrap(r.Target), r.nodes.wrap(r.TLSTarget)
	if r.Clock == nil {
		r.Clock = RealClock{}
	}
	if r.Self == nil {
		r.Self = selfcpu.New(r.Log)
	}
	p := r.Plan
	placed, err := r.place(ctx)
	if err != nil {
		return nil, err
	}
	if r.Start != nil {
		if err := r.Start(ctx); err != nil {
			return nil, err
		}
	}
	r.dir = filepath.Join(p.Results, p.Run)
	planJSON, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if err := writeAtomic(filepath.Join(r.dir, "plan.json"), append(planJSON, '\n')); err != nil {
		return nil, err
	}
	var ceil, openCeil *manifest.Ceiling
	if r.Ceiling != nil {
		ceil = r.ceiling(ctx, false)
		if hasOpenLoop(r.Plan) {
			openCeil = r.ceiling(ctx, true)
		}
	}
	now := r.Clock.Now()
	r.m = &manifest.Manifest{
		Schema: manifest.SchemaVersion, Run: p.Run, Status: "running", Started: now, Updated: now,
		Plan: planJSON, Settings: p.Settings(), Versions: map[string]string{}, ProxyConfig: map[string]manifest.ProxyConfig{}, Host: r.Host, Placement: placed, Ceiling: ceil, OpenCeiling: openCeil, Cells: []manifest.Cell{},
	}
	if err := r.save(); err != nil {
		return nil, err
	}

	iso := &isolation{d: r.Docker, project: p.Project, log: r.Log}
	defer func() {
		// The stack must come back even after Ctrl-C: a fresh context.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := iso.restore(rctx); err != nil {
			r.Log.Error("restore the stack: unpause by hand with docker unpause", "err", err)
		}
	}()
	if r.Docker != nil && p.Isolate {
		iso.unpauseLeftovers(ctx)
	}

	r.proxies = map[string]*proxyState{}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		r.removeCandidates(rctx)
	}()
	r.arms = &arms{d: r.Docker, project: p.Project, cpus: p.DuetCPUs, log: r.Log}
	defer func() {
		// A treatment (a cut quota, a paused Prometheus) never outlives the
		// run, Ctrl-C included.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		r.arms.undo(rctx)
	}()

	outer := ctx
	ctx, r.stop = context.WithCancel(ctx)
	defer r.stop()
	seq := newSequential(p, r.Clock.Now(), r.Log)
	if seq != nil {
		r.m.Sequential = seq.rec
	}
	i := 0
	for i < len(p.Cells) && ctx.Err() == nil {
		if seq.due(p.Cells, i) && seq.look(r.m.Cells, p.Cells[i-1].Repeat, r.Clock.Now()) != "" {
			if err := r.trim(i); err != nil {
				r.Log.Error("plan not trimmed to the pairs measured", "err", err)
			}
			break
		}
		j := i
		for j < len(p.Cells) && p.Cells[j].Proxy == p.Cells[i].Proxy && (j == i || !seq.due(p.Cells, j)) { // a sequential duet looks between blocks
			j++
		}
		r.runProxy(ctx, iso, i, p.Cells[i:j])
		i = j
	}
	r.display().Close()
	if seq != nil && ctx.Err() == nil && seq.rec.Stopped == "" {
		seq.look(r.m.Cells, p.Repeats, r.Clock.Now()) // the plan's most pairs: it stops whatever it finds
	}

	r.m.Status = "done"
	if ctx.Err() != nil {
		r.m.Status = "interrupted"
		why := &manifest.Skip{Kind: manifest.SkipInterrupted, Reason: "not run: the run was interrupted"}
		if r.full != nil && outer.Err() == nil {
			why = &manifest.Skip{Kind: manifest.SkipDiskFull, Reason: "not run: the results disk is full"}
		}
		for _, c := range p.Cells[len(r.m.Cells):] {
			r.m.Cells = append(r.m.Cells, r.skipped(c, why))
		}
	}
	if err := r.save(); err != nil {
		return nil, r.unsaved(err)
	}
	if r.full != nil {
		return nil, fmt.Errorf("%w (freed before the run ended: %s now holds every measured cell; the skipped ones were not run)", r.full, filepath.Join(r.dir, "manifest.json"))
	}
	if p.Linger > 0 {
		// Ctrl-C already came or may come: linger anyway so the aborted
		// cell's end is scraped; a second Ctrl-C kills the process.
		r.linger(context.WithoutCancel(ctx), time.Duration(p.Linger))
	}
	return &Outcome{Manifest: r.m, Dir: r.dir, Broken: r.broken}, nil
}

// proxyState is what the run knows of one proxy across its rounds: it is
// prepared (container, version, routes) once, and a proxy found dead stays
// dead for the rest of the run.
type proxyState struct {
	skipAll *manifest.Skip
	ctr     *dockerx.Container
	cand    *dockerx.Container // a duet's candidate container (candidate.go), nil when none
	candErr *manifest.Skip     // why the candidate's cells cannot run
	routes  map[string]routecheck.Result
	tls     map[string]routecheck.Result // TLS preflight by protocol and version (tls.go)
	dead    *manifest.Skip
}

// runProxy runs one round's consecutive cells of one proxy, starting at
// index base: the proxy is isolated for them and thawed after.
func (r *Runner) runProxy(ctx context.Context, iso *isolation, base int, cells []plan.Cell) {
	proxy := cells[0].Proxy
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := iso.restore(rctx); err != nil {
			r.Log.Error("restore after proxy", "proxy", proxy, "err", err)
		}
	}()
	st := r.proxies[proxy]
	if st == nil {
		st = &proxyState{routes: map[string]routecheck.Result{}, tls: map[string]routecheck.Result{}}
		r.proxies[proxy] = st
		st.skipAll, st.ctr = r.prepareProxy(ctx, iso, proxy)
		if st.skipAll == nil {
			st.routes = r.preflight(ctx, proxy, r.cellsOf(proxy), r.Target, time.Duration(r.Plan.Preflight))
			r.prepareCandidate(ctx, iso, proxy, st)
		}
	} else if st.skipAll == nil && st.dead == nil && r.Docker != nil && r.Plan.Isolate {
		if err := iso.isolate(ctx, proxy); err != nil {
			st.skipAll = &manifest.Skip{Kind: manifest.SkipIsolation, Reason: fmt.Sprintf("not run: isolation failed: %v", err)}
		}
	}
	for k := 0; k < len(cells); k++ {
		c := cells[k]
		n := base + k + 1
		skip := c.Skip.Manifest()
		switch {
		case skip != nil:
		case st.skipAll != nil:
			skip = st.skipAll
		case st.dead != nil:
			skip = st.dead
		case !st.routes[c.Origin].OK:
			skip = &manifest.Skip{Kind: manifest.SkipPreflight, Reason: "preflight: " + st.routes[c.Origin].Reason}
		case c.Arm == cellid.ArmCandidate && st.candErr != nil:
			skip = st.candErr
		default:
			skip = r.tlsSkip(ctx, st, c)
		}
		if ctx.Err() != nil {
			return
		}
		if skip != nil {
			mc := r.skipped(c, skip)
			if c.Skip == nil && skip.Kind != manifest.SkipNotApplicable {
				r.broken++
			}
			r.finish(n, mc)
			continue
		}
		if k+1 < len(cells) && r.Plan.SharesWindow(n) { // n is the next cell's index in the plan
			if err := r.quiet(ctx, c); err != nil {
				return
			}
			ma, mb, died := r.runPair(ctx, n, c, cells[k+1], st.ctr)
			for i, mc := range []manifest.Cell{ma, mb} {
				if mc.Status == manifest.CellFailed {
					r.broken++
				}
				r.finish(n+i, mc)
			}
			k++
			if died != "" {
				st.dead = &manifest.Skip{Kind: manifest.SkipProxyDied, Reason: fmt.Sprintf("not run: %s during cell %s", died, c.ID)}
			}
			if ctx.Err() != nil {
				return
			}
			continue
		}
		ctr := st.ctr
		if c.Arm == cellid.ArmCandidate && st.cand != nil {
			ctr = st.cand
		}
		if err := r.arms.apply(ctx, c.Arm, st.ctr, st.cand); err != nil {
			r.broken++
			r.finish(n, r.skipped(c, &manifest.Skip{Kind: manifest.SkipArm, Reason: "not run: " + err.Error()}))
			continue
		}
		if err := r.quiet(ctx, c); err != nil {
			r.arms.undo(ctx)
			return
		}
		mc, died := r.runCell(ctx, n, c, ctr, nil)
		r.arms.undo(ctx)
		if mc.Status == manifest.CellFailed {
			r.broken++
		}
		r.finish(n, mc)
		if died != "" {
			st.dead = &manifest.Skip{Kind: manifest.SkipProxyDied, Reason: fmt.Sprintf("not run: %s during cell %s", died, c.ID)}
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// cellsOf is every cell of the plan for proxy, in every round.
func (r *Runner) cellsOf(proxy string) []plan.Cell {
	var out []plan.Cell
	for _, c := range r.Plan.Cells {
		if c.Proxy == proxy {
			out = append(out, c)
		}
	}
	return out
}

// prepareProxy isolates the proxy, checks its container and records its
// version. A non-nil skip skips all its cells.
func (r *Runner) prepareProxy(ctx context.Context, iso *isolation, proxy string) (*manifest.Skip, *dockerx.Container) {
	if r.Docker == nil {
		return nil, nil
	}
	if stack.IsDirect(proxy) {
		return r.prepareDirect(ctx, iso), nil
	}
	down := func(format string, a ...any) *manifest.Skip {
		return &manifest.Skip{Kind: manifest.SkipProxy, Reason: fmt.Sprintf(format, a...)}
	}
	p := r.Plan
	ctr, err := r.Docker.Service(ctx, p.Project, proxy)
	if err != nil {
		if p.Isolate {
			return down("not run: %v", err), nil
		}
		r.Log.Warn("no container for proxy: no liveness check or version", "proxy", proxy, "err", err)
		return nil, nil
	}
	if ctr.State == "paused" {
		r.Log.Warn("unpausing proxy left paused", "container", ctr.Name)
		if err := r.Docker.Unpause(ctx, ctr.ID); err != nil {
			return down("not run: proxy container %s is paused and cannot be unpaused: %v", ctr.Name, err), nil
		}
		ctr.State = "running"
	}
	if !ctr.Running {
		return down("not run: proxy container %s is %s: start the stack (make up)", ctr.Name, ctr.State), nil
	}
	r.nodes.note(proxy, &ctr)
	if p.Isolate {
		if err := iso.isolate(ctx, proxy); err != nil {
			return &manifest.Skip{Kind: manifest.SkipIsolation, Reason: fmt.Sprintf("not run: isolation failed: %v", err)}, nil
		}
	}
	v, err := r.Docker.Version(ctx, ctr)
	if err != nil {
		r.Log.Warn("proxy version unknown", "proxy", proxy, "err", err)
		v = "unknown"
	}
	r.m.Versions[proxy] = v
	r.readConfig(ctx, proxy, ctr)
	return nil, &ctr
}

func (r *Runner) display() progress.Display {
	if r.Display == nil {
		r.Display = progress.New(nil, r.Log, false, r.Clock.Now)
	}
	return r.Display
}

func (r *Runner) labels(c plan.Cell) cellmetrics.Cell {
	return cellmetrics.Cell{Run: r.Plan.Run, Key: c.Key}
}

var errNoResult = errors.New("the attack returned no result")
