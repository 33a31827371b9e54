package build

import (
	"proxybench/internal/manifest"
	"proxybench/internal/placement"
	"proxybench/reporter/internal/report"
)

// placementEnv is the run's placement from its manifest, each measured
// container compared with the plan (internal/placement's own check), and
// the isolation statement for it; nil placement when the manifest has
// none.
func placementEnv(man *manifest.Manifest) (*report.Placement, report.Isolation) {
	if man == nil {
		return nil, report.IsolationStatement(nil, nil)
	}
	var on *bool // nil when the plan does not say
	if set, err := man.PlanSettings(); err == nil {
		on = set.Isolate
	}
	mp := man.Placement
	if mp == nil {
		return nil, report.IsolationStatement(on, nil)
	}
	p := &report.Placement{Mode: mp.Mode, Reason: mp.Reason, CPUs: mp.CPUs, Online: mp.Online, ProxyCPUs: mp.ProxyCPUs,
		Workers: mp.Workers, Loadgen: mp.Loadgen, Containers: []report.PlacedContainer{}}
	plan := placement.Placement{Mode: mp.Mode, ProxyCPUs: mp.ProxyCPUs, Workers: mp.Workers}
	for _, r := range []struct {
		role, cpus string
		dst        *placement.CPUSet
	}{{placement.RoleLoadgen, mp.Planned.Loadgen, &plan.Loadgen}, {placement.RoleProxy, mp.Planned.Proxy, &plan.Proxy},
		{placement.RoleOrigins, mp.Planned.Origins, &plan.Origins}, {placement.RoleObservability, mp.Planned.Observability, &plan.Observability}} {
		p.Roles = append(p.Roles, report.PlacedRole{Role: r.role, CPUs: r.cpus})
		*r.dst, _ = placement.ParseCPUSet(r.cpus)
	}
	for _, c := range mp.Containers {
		diffs := plan.Mismatches([]placement.Observed{{Name: c.Name, Role: c.Role, Cpuset: c.Cpuset, CPUs: c.CPUs}})
		p.Containers = append(p.Containers, report.PlacedContainer{ContainerCPUs: c, AsPlanned: len(diffs) == 0})
		p.Mismatches = append(p.Mismatches, diffs...)
	}
	if len(plan.Loadgen) > 0 {
		if got, err := placement.ParseCPUSet(mp.Loadgen.CPUs); err != nil || !got.Equal(plan.Loadgen) {
			p.Mismatches = append(p.Mismatches, "the loadgen ran on CPUs "+placement.ListOrAll(got)+", the plan gives it "+plan.Loadgen.String())
		}
	}
	return p, report.IsolationStatement(on, p)
}
