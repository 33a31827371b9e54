package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/stack"
)

// isolation pauses the project's other proxies while one is measured and
// thaws them afterwards.
//
// Pause, not stop: the cgroup freezer takes a proxy's processes off the CPU
// at once and gives them back as they were, so a Go proxy keeps its process
// (its gctrace cycle numbers stay sequential for the exporter), its log
// stream stays open, and nothing pays a cold start or a restart policy
// between proxies. A paused proxy holds its memory; it uses no CPU, which
// is what a 2-core machine needs. Afterwards only the containers this run
// paused are unpaused; proxies found paused before the run are thawed first
// (unpauseLeftovers).
//
// Where the freezer is refused (some engines in restricted hosts answer "unable
// to freeze"), the proxy is stopped instead and started again afterwards: a
// cold start for it, but the measured proxy still runs alone.
type isolation struct {
	d       Docker
	project string
	log     *slog.Logger
	paused  []dockerx.Container
	stopped []dockerx.Container
}

// isProxy tells the project's proxies from origins and infrastructure.
func isProxy(c dockerx.Container) bool {
	if role := c.Labels[dockerx.LabelRole]; role != "" {
		return role == "proxy"
	}
	_, err := stack.LookupProxy(c.Service)
	return err == nil
}

// isolate pauses every running proxy of the project except proxy.
func (i *isolation) isolate(ctx context.Context, proxy string) error {
	ctrs, err := i.d.Containers(ctx, i.project)
	if err != nil {
		return fmt.Errorf("list project %s: %w", i.project, err)
	}
	for _, c := range ctrs {
		if !isProxy(c) || c.Service == proxy || c.State != "running" {
			continue
		}
		if err := i.d.Pause(ctx, c.ID); err != nil {
			i.log.Warn("isolation: pause refused, stopping instead", "container", c.Name, "err", err)
			if err := i.d.Stop(ctx, c.ID, 5*time.Second); err != nil {
				return fmt.Errorf("stop %s after its pause was refused: %w", c.Name, err)
			}
			i.stopped = append(i.stopped, c)
			i.log.Info("isolation: stopped", "container", c.Name, "while", proxy)
			continue
		}
		i.paused = append(i.paused, c)
		i.log.Info("isolation: paused", "container", c.Name, "while", proxy)
	}
	return nil
}

// restore unpauses what isolate paused and starts what it stopped; safe to
// call twice.
func (i *isolation) restore(ctx context.Context) error {
	var errs []error
	for _, c := range i.paused {
		if err := i.d.Unpause(ctx, c.ID); err != nil && !dockerx.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("unpause %s: %w", c.Name, err))
			continue
		}
		i.log.Info("isolation: unpaused", "container", c.Name)
	}
	i.paused = nil
	for _, c := range i.stopped {
		if err := i.d.Start(ctx, c.ID); err != nil && !dockerx.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("start %s: %w", c.Name, err))
			continue
		}
		i.log.Info("isolation: started again", "container", c.Name)
	}
	i.stopped = nil
	return errors.Join(errs...)
}

// unpauseLeftovers thaws proxies of the project found paused before the
// run starts: a loadgen killed with SIGKILL cannot restore what it paused,
// and a paused proxy would fail its preflight with a timeout.
func (i *isolation) unpauseLeftovers(ctx context.Context) {
	ctrs, err := i.d.Containers(ctx, i.project)
	if err != nil {
		i.log.Warn("cannot list the project's containers", "project", i.project, "err", err)
		return
	}
	for _, c := range ctrs {
		if isProxy(c) && c.State == "paused" {
			i.log.Warn("unpausing a proxy left paused, probably by a killed run", "container", c.Name)
			if err := i.d.Unpause(ctx, c.ID); err != nil {
				i.log.Warn("unpause failed", "container", c.Name, "err", err)
			}
		}
	}
}
