package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/term"

	"proxybench/internal/dockerx"
	"proxybench/internal/hostinfo"
	"proxybench/internal/manifest"
	"proxybench/internal/metricsserver"
	"proxybench/internal/stack"
	"proxybench/internal/tlscert"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/ceiling"
	"proxybench/loadgen/internal/cellmetrics"
	"proxybench/loadgen/internal/fleet"
	"proxybench/loadgen/internal/live"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
	"proxybench/loadgen/internal/routecheck"
	"proxybench/loadgen/internal/selfcpu"
	"proxybench/loadgen/internal/swarmstack"
)

// Exit codes of `loadgen run`.
const (
	ExitOK          = 0   // every cell ran its window
	ExitError       = 1   // the run could not start or results could not be written
	ExitUsage       = 2   // bad flags or plan
	ExitCellsBroken = 3   // the run finished but some cells failed or were skipped for a broken proxy/route
	ExitInterrupted = 130 // Ctrl-C: finished cells kept, current one aborted
)

// Main is `loadgen run`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	return run(ctx, args, stdout, stderr, log, env{ceiling: ceiling.Resolve})
}

// env is what tests replace: where the proxies are, how Docker is reached,
// the clock, and a wrapper around the display to observe a run mid-flight.
type env struct {
	target routecheck.Target
	// tlsTarget and tlsDir are the proxies' TLS ports and the lab CA's
	// folder (Runner.TLSTarget, Runner.TLSDir); unset: the stack's.
	tlsTarget routecheck.Target
	tlsDir    string
	// directTarget is the origins' own ports (Runner.DirectTarget).
	directTarget routecheck.Target
	docker       func(context.Context) (Docker, error)
	clock        Clock
	display      func(progress.Display) progress.Display
	metrics      net.Listener // when set, /metrics is served on it instead of -metrics-addr
	// ceiling measures the instrument's ceiling (ceiling.Resolve); nil:
	// the run has none (the tests' fake stacks).
	ceiling func(context.Context, ceiling.Options) (*manifest.Ceiling, error)
	// workers starts the loadgen workers of -loadgens N (fleet.Local, this
	// executable, when nil).
	workers fleet.Launcher
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger, e env) int {
	if e.docker == nil {
		e.docker = func(ctx context.Context) (Docker, error) { return dockerx.NewCluster(ctx) }
	}
	if e.clock == nil {
		e.clock = RealClock{}
	}
	if e.display == nil {
		e.display = func(d progress.Display) progress.Display { return d }
	}
	p, err := plan.Load(args, time.Now(), stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if v, ok := errors.AsType[plan.Shown](err); ok {
		fmt.Fprintln(stdout, string(v))
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen run: %v\n", err)
		return ExitUsage
	}
	x, err := p.Expand()
	if err != nil {
		fmt.Fprintf(stderr, "loadgen run: %v\n", err)
		return ExitUsage
	}
	pl, err := resolvePlacement(p.Placement)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen run: %v\n", err)
		return ExitUsage
	}
	if _, err := os.Stat(filepath.Join(p.Results, p.Run, "manifest.json")); err == nil {
		fmt.Fprintf(stderr, "loadgen run: run %q already exists in %s: pick another -run or remove that directory\n", p.Run, p.Results)
		return ExitUsage
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	am := attack.NewMetrics(reg)
	self := selfcpu.New(log)
	reg.MustRegister(self)
	cm := cellmetrics.New(reg)
	ln := e.metrics
	if ln == nil {
		if ln, err = listenMetrics(p.MetricsAddr); err != nil {
			fmt.Fprintf(stderr, "loadgen run: %v\n", err)
			return ExitError
		}
	}
	srv := metricsserver.New(reg, log)
	srv.Serve(ln)
	defer srv.Stop()
	metricsAddr := srv.Addr()
	// The mirror of linger: a first cell that starts before Prometheus has
	// scraped this new process has its first second unseen server-side
	// (seen: a 3 s cell right after make up judged too_few_samples). The
	// runner prepares meanwhile and its first traffic waits for seen. That
	// first scrape is the counting baseline of the process's first window
	// (the reporter's collect.Scrapes.CountFrom): the window may begin as
	// soon as it was served.
	var seen chan struct{}
	if wait := time.Duration(p.Linger); wait > 0 {
		seen = make(chan struct{})
		go func() {
			defer close(seen)
			select {
			case <-srv.Scraped():
			case <-ctx.Done():
			case <-time.After(wait):
				log.Warn("Prometheus has not scraped /metrics yet; the first cell's server-side series may start late", "waited", wait.String(), "metrics", metricsAddr)
			}
		}()
	}

	var dc Docker
	if c, err := e.docker(ctx); err != nil {
		if p.Isolate {
			fmt.Fprintf(stderr, "loadgen run: %v\n  isolation needs Docker; to measure without it pass -isolate=false\n", err)
			return ExitError
		}
		log.Warn("no Docker: no isolation, liveness checks or versions", "err", err)
	} else {
		if cl, ok := c.(io.Closer); ok {
			defer cl.Close()
		}
		dc = c
	}

	display := progress.New(stderr, log, isTerminal(stderr), e.clock.Now)
	var view *live.View
	if p.Dashboard != plan.DashboardOff {
		if view, err = live.Listen(ctx, p.Dashboard, p.Prometheus, x, log); err != nil {
			fmt.Fprintf(stderr, "loadgen run: %v\n", err)
			return ExitError
		}
		defer view.Close()
		display = view.Wrap(display)
		log.Info("live view", "url", view.URL(), "prometheus", p.Prometheus)
	}
	r := &Runner{
		Plan: x, Attacker: attack.New(am, attack.WithLogger(log)), Cells: cm, Docker: dc,
		Target: e.target, TLSTarget: e.tlsTarget, DirectTarget: e.directTarget, TLSDir: e.tlsDir, Display: e.display(display), Clock: e.clock, Log: log,
		Host: hostinfo.Describe(ctx), Self: self, Placement: pl, ScrapedAfter: srv.ScrapedAfter, Seen: seen,
	}
	if x.Loadgens > 1 {
		// Several loadgens as one instrument: every cell goes to the
		// workers, each its segment of the load, merged exactly.
		dir := e.tlsDir
		if dir == "" {
			dir = tlscert.DefaultDir
		}
		co := &fleet.Coordinator{Workers: x.Loadgens, Launcher: e.workers, CAFile: filepath.Join(dir, tlscert.CAFile), Log: log}
		if co.Launcher == nil {
			co.Launcher = fleet.Local{Listen: workerListen(metricsAddr), Log: log}
			if x.Launch == plan.LaunchSwarm {
				sw, err := swarmWorkers(ctx, dc, p.Project, log)
				if err != nil {
					fmt.Fprintf(stderr, "loadgen run: -launch swarm: %v\n", err)
					return ExitError
				}
				co.Launcher = sw
			}
		}
		if p.PrometheusTargets != "" {
			// Prometheus scrapes the workers where it finds them
			// (file_sd): it is waited for as for this process, before
			// their first window and after their last.
			co.Targets = filepath.Join(p.PrometheusTargets, stack.WorkerTargetsFile)
			if p.Linger > 0 {
				co.ScrapeWait = max(time.Duration(p.Linger), fleet.DiscoveryWait)
				r.ScrapedAfter = func(t time.Time) <-chan struct{} { return both(srv.ScrapedAfter(t), co.ScrapedAfter(t)) }
			}
		}
		defer co.Close()
		r.Attacker, r.Start = co, co.Start
	}
	if e.ceiling != nil {
		r.Ceiling = func(ctx context.Context, open bool) (*manifest.Ceiling, error) {
			o := ceilingOptions(x, pl, log)
			o.Open = open
			return e.ceiling(ctx, o)
		}
	}
	log.Info("run", "id", p.Run, "cells", len(x.Cells), "takes_at_least", x.Estimate().Round(time.Second).String(),
		"results", filepath.Join(p.Results, p.Run), "metrics", metricsAddr)
	out, err := r.Run(ctx)
	if view != nil {
		if err != nil {
			view.Finish(nil, filepath.Join(p.Results, p.Run))
		} else {
			view.Finish(out.Manifest, out.Dir)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen run: %v\n", err)
		return ExitError
	}
	return report(out, stdout, log)
}

func report(out *Outcome, stdout io.Writer, log *slog.Logger) int {
	counts := map[string]int{}
	for _, c := range out.Manifest.Cells {
		counts[c.Status]++
	}
	fmt.Fprintf(stdout, "run %s %s: %d ok, %d failed, %d aborted, %d skipped; manifest %s\n", out.Manifest.Run, out.Manifest.Status,
		counts[manifest.CellOK], counts[manifest.CellFailed], counts[manifest.CellAborted], counts[manifest.CellSkipped],
		filepath.Join(out.Dir, "manifest.json"))
	switch {
	case out.Manifest.Status == "interrupted":
		log.Warn("interrupted: finished cells are kept, the current one is marked aborted")
		return ExitInterrupted
	case out.Broken > 0:
		return ExitCellsBroken
	}
	return ExitOK
}

// workerListen is where the loadgen workers listen: the host of the
// loadgen's own /metrics (where Prometheus reaches it), any port.
func workerListen(metricsAddr string) string {
	host, _, err := net.SplitHostPort(metricsAddr)
	if err != nil {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, "0")
}

// both is closed once a and b are.
func both(a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() { <-a; <-b; close(out) }()
	return out
}

// listenMetrics takes the address /metrics is served on for the whole run.
func listenMetrics(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w (another loadgen running? pick one with -metrics-addr)", addr, err)
	}
	return ln, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// swarmWorkers is the launcher of -launch swarm: each worker a Swarm
// service on a node with the load role, in the image of the stack's
// exporter (a global service, so on every node; the worker needs nothing
// of it but a kernel).
func swarmWorkers(ctx context.Context, dc Docker, project string, log *slog.Logger) (fleet.Launcher, error) {
	api, ok := dc.(fleet.SwarmAPI) // false for no Docker at all
	if !ok {
		return nil, errors.New("needs the Docker engine of a Swarm manager (DOCKER_HOST; scripts/swarm.sh exec sets it)")
	}
	ctrs, err := dc.Containers(ctx, project)
	if err != nil {
		return nil, fmt.Errorf("the image to run workers in, the exporter's: %w", err)
	}
	for _, c := range ctrs { // one a node: the same image on each
		if c.Service == stack.ExporterService && c.Image != "" {
			return fleet.Swarm{API: api, Image: c.Image, Constraints: []string{"node.labels." + swarmstack.NodeLabel("load") + "==true"}, Log: log}, nil
		}
	}
	return nil, fmt.Errorf("no %s container in the stack %q to take the workers' image from: is the Swarm stack up (scripts/swarm.sh up)?", stack.ExporterService, project)
}
