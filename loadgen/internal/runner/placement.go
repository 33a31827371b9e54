package runner

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/placement"
)

// place applies the run's CPU placement before any traffic: it checks that
// the stack's containers run with the plan's cpusets and the proxies with
// its quota (compose gave them at creation: make up PLACEMENT=...), refusing
// the run when they do not, then pins the loadgen's own threads to its
// CPUs and reads them back. It returns the manifest's record of both; nil
// when the runner has no placement (a Runner built by hand).
func (r *Runner) place(ctx context.Context) (*manifest.Placement, error) {
	pl := r.Placement
	if pl == nil {
		return nil, nil
	}
	rec := &manifest.Placement{
		Mode: pl.Mode, Reason: pl.Reason, CPUs: len(pl.Online), Online: pl.Online.String(),
		Planned: manifest.RoleCPUs{Loadgen: pl.Loadgen.String(), Proxy: pl.Proxy.String(),
			Origins: pl.Origins.String(), Observability: pl.Observability.String()},
		ProxyCPUs: pl.ProxyCPUs, Workers: pl.Workers, OriginWorkers: pl.OriginWorkers,
	}
	if r.Docker != nil {
		ctrs, err := r.Docker.Containers(ctx, r.Plan.Project)
		if err != nil {
			r.Log.Warn("placement: cannot list the stack's containers: their cpusets are not checked", "project", r.Plan.Project, "err", err)
		}
		var seen []placement.Observed
		for _, c := range ctrs {
			role := placement.RoleOfLabel(c.Labels[dockerx.LabelRole])
			if role == "" {
				continue
			}
			rec.Containers = append(rec.Containers, manifest.ContainerCPUs{Name: c.Name, Service: c.Service, Role: role,
				State: c.State, Cpuset: c.Cpuset, CPUs: c.CPUs, Node: c.Node})
		}
		// In role order, then by name: the manifest and the error read alike every time.
		slices.SortFunc(rec.Containers, func(a, b manifest.ContainerCPUs) int {
			return cmp.Or(cmp.Compare(slices.Index(placement.Roles, a.Role), slices.Index(placement.Roles, b.Role)), cmp.Compare(a.Name, b.Name))
		})
		for _, c := range rec.Containers {
			if c.State == "running" || c.State == "paused" {
				seen = append(seen, placement.Observed{Name: c.Name, Role: c.Role, Cpuset: c.Cpuset, CPUs: c.CPUs})
			}
		}
		if err := pl.MismatchError(seen, pl.Online, upFlags(pl.Mode)); err != nil {
			return nil, err
		}
	}
	if len(pl.Loadgen) > 0 {
		if err := placement.Pin(pl.Loadgen); err != nil {
			return nil, fmt.Errorf("placement %s: %w (or run with -placement none)", pl.Mode, err)
		}
	}
	a, err := placement.SelfAffinity()
	rec.Loadgen = manifest.LoadgenAffinity{CPUs: a.CPUs.String(), Threads: a.Threads, GOMAXPROCS: a.GOMAXPROCS}
	if err != nil {
		rec.Loadgen.Error = err.Error()
		r.Log.Warn("placement: cannot read the loadgen's affinity back", "err", err)
	}
	r.Log.Info("placement", "plan", pl.Summary(), "loadgen_affinity", rec.Loadgen.CPUs, "gomaxprocs", rec.Loadgen.GOMAXPROCS)
	return rec, nil
}

// resolvePlacement is the run's placement for this host's online CPUs.
func resolvePlacement(s placement.Spec) (*placement.Placement, error) {
	pl, err := placement.ForHost(s)
	if err != nil {
		return nil, err
	}
	return &pl, nil
}

// upFlags are the make variables that bring the stack up with a run's
// placement.
func upFlags(mode string) string {
	if mode == placement.Custom {
		return "PLAN=<the plan file>"
	}
	return "PLACEMENT=" + mode
}
