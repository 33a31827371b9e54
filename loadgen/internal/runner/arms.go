package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"proxybench/internal/cellid"
	"proxybench/internal/dockerx"
)

// Quota is the part of the engine the duet needs: a container's CPU quota,
// read and set in place; *dockerx.Client is one.
type Quota interface {
	NanoCPUs(ctx context.Context, id string) (int64, error)
	SetNanoCPUs(ctx context.Context, id string, n int64) error
}

// arms applies a cell's arm (cellid) before it runs and takes it back
// after: the duet's candidate runs in its own container with the proxy
// paused (candidate.go) and/or with the CPU quota set to the plan's
// duet_cpus, the observer study's unobserved arm with every
// observability container of the project (role infra: Prometheus, the
// exporter, Grafana, the Docker filter) paused, so it costs no CPU at all
// and the cell's numbers come from the loadgen alone. The plan's own arm
// and the A/A control change nothing.
type arms struct {
	d       Docker
	project string
	cpus    float64 // the duet candidate's quota, cores
	log     *slog.Logger

	undos []func(context.Context) error
}

// apply makes the stack what arm measures; undo takes it back. cand is
// the proxy's candidate container, nil when the candidate is the proxy's
// own container with another quota.
func (a *arms) apply(ctx context.Context, arm string, proxy, cand *dockerx.Container) error {
	switch arm {
	case "", cellid.ArmControl:
		return nil
	case cellid.ArmCandidate:
		if cand != nil {
			if err := a.swap(ctx, proxy, cand); err != nil {
				return err
			}
			if a.cpus == 0 {
				return nil
			}
			proxy = cand
		}
		return a.quota(ctx, proxy)
	case cellid.ArmUnobserved:
		return a.unobserve(ctx)
	}
	return fmt.Errorf("unknown arm %q", arm)
}

func (a *arms) quota(ctx context.Context, proxy *dockerx.Container) error {
	q, ok := a.d.(Quota)
	if a.d == nil || proxy == nil || !ok {
		return errors.New("the duet's candidate needs the proxy's container to change its CPU quota: run with Docker")
	}
	was, err := q.NanoCPUs(ctx, proxy.ID)
	if err != nil {
		return err
	}
	if err := q.SetNanoCPUs(ctx, proxy.ID, dockerx.Cores(a.cpus)); err != nil {
		return err
	}
	a.log.Info("duet: candidate quota", "container", proxy.Name, "cpus", a.cpus, "was", float64(was)/1e9)
	a.undos = append(a.undos, func(ctx context.Context) error {
		if err := q.SetNanoCPUs(ctx, proxy.ID, was); err != nil {
			return err
		}
		a.log.Info("duet: baseline quota back", "container", proxy.Name, "cpus", float64(was)/1e9)
		return nil
	})
	return nil
}

// swap pauses the proxy and thaws its candidate container for a candidate
// cell: one runs while the other is measured.
func (a *arms) swap(ctx context.Context, proxy, cand *dockerx.Container) error {
	if a.d == nil || proxy == nil {
		return errors.New("the duet's candidate container needs Docker to pause the proxy while it runs")
	}
	if err := a.d.Unpause(ctx, cand.ID); err != nil && !dockerx.IsNotPaused(err) {
		return fmt.Errorf("thaw the candidate %s: %w", cand.Name, err)
	}
	if err := a.d.Pause(ctx, proxy.ID); err != nil {
		return errors.Join(fmt.Errorf("pause %s for its candidate: %w", proxy.Name, err), a.d.Pause(ctx, cand.ID))
	}
	a.undos = append(a.undos, func(ctx context.Context) error {
		return errors.Join(a.d.Pause(ctx, cand.ID), a.d.Unpause(ctx, proxy.ID))
	})
	return nil
}

func (a *arms) unobserve(ctx context.Context) error {
	if a.d == nil {
		return errors.New("the observer study needs Docker to pause the observability stack")
	}
	ctrs, err := a.d.Containers(ctx, a.project)
	if err != nil {
		return fmt.Errorf("list project %s: %w", a.project, err)
	}
	paused := 0
	for _, c := range ctrs {
		if c.Labels[dockerx.LabelRole] != "infra" || c.State != "running" {
			continue
		}
		if err := a.d.Pause(ctx, c.ID); err != nil {
			return fmt.Errorf("pause %s: %w", c.Name, err)
		}
		paused++
		a.undos = append(a.undos, func(ctx context.Context) error {
			if err := a.d.Unpause(ctx, c.ID); err != nil && !dockerx.IsNotFound(err) {
				return err
			}
			return nil
		})
	}
	if paused == 0 {
		return fmt.Errorf("no running observability container (role infra) in project %s to pause", a.project)
	}
	a.log.Info("observer: observability stack paused", "containers", paused)
	return nil
}

// undo takes back every treatment applied, last first; safe to call twice.
func (a *arms) undo(ctx context.Context) {
	for i := len(a.undos) - 1; i >= 0; i-- {
		if err := a.undos[i](ctx); err != nil {
			a.log.Error("arm not taken back: restore it by hand (docker update --cpus / docker unpause)", "err", err)
		}
	}
	a.undos = nil
}
