package report

import (
	"slices"

	"proxybench/internal/manifest"
	"proxybench/internal/placement"
)

// Placement is the run's CPU placement (manifest.json): each role's
// planned CPUs beside what was measured when the run started. A CPU list
// is in the cpuset format; "" means no cpuset (every online CPU).
type Placement struct {
	Mode      string       `json:"mode"` // auto, none, custom
	Reason    string       `json:"reason,omitempty"`
	CPUs      int          `json:"cpus"` // online CPUs
	Online    string       `json:"online"`
	Roles     []PlacedRole `json:"roles"` // loadgen, proxy, origins, observability
	ProxyCPUs float64      `json:"proxy_cpus"`
	Workers   int          `json:"workers"`
	// Loadgen is the loadgen's affinity read back from its threads;
	// Containers each container's cpuset and quota from the engine.
	Loadgen    manifest.LoadgenAffinity `json:"loadgen"`
	Containers []PlacedContainer        `json:"containers"`
	// Mismatches lists every measured cpuset or proxy quota that is not
	// the plan's; empty when the stack and the loadgen ran as planned.
	Mismatches []string `json:"mismatches,omitempty"`
}

// PlacedRole is one role's planned CPUs.
type PlacedRole struct {
	Role string `json:"role"`
	CPUs string `json:"cpus"`
}

// PlacedContainer is one container's measured placement.
type PlacedContainer struct {
	manifest.ContainerCPUs
	AsPlanned bool `json:"as_planned"`
}

// Isolation states what the cgroup freezer isolation (the runner pauses
// every other proxy while one is measured) does and does not isolate, for
// this run's placement.
type Isolation struct {
	On       *bool    `json:"on"` // nil when the plan is unknown
	Isolates []string `json:"isolates"`
	Not      []string `json:"does_not_isolate"`
}

// IsolationStatement is the statement for a run with isolation on or off
// (nil: unknown) and its placement (nil: unknown).
func IsolationStatement(on *bool, p *Placement) Isolation {
	s := Isolation{On: on}
	paused := "While a proxy is measured, every other proxy is frozen (docker pause: the cgroup freezer)"
	switch {
	case on != nil && !*on:
		s.Not = append(s.Not, "Isolation was off for this run (-isolate=false): the other proxies kept running, idle but runnable on the proxy's CPUs, with their timers, health checks and (Go) GC.")
		paused = "With isolation on, every other proxy is frozen while one is measured (docker pause: the cgroup freezer)"
	case on == nil:
		paused = "With isolation on (the default), every other proxy is frozen while one is measured (docker pause: the cgroup freezer)"
	}
	s.Isolates = append(s.Isolates,
		paused+": its processes are off the CPU, so they take no CPU time from the measured proxy and wake no timers, health checks or garbage collections.",
		"A frozen proxy is thawed as it was: no restart, no cold start, its connections and Go GC history kept.")
	shared := "The CPUs the loadgen, the origins and observability share: the loadgen, the origin behind the proxy, Prometheus and the exporter compete for them (the loadgen's run delay and CPU pressure show it)."
	switch {
	case p == nil:
	case roleCPUs(p, placement.RoleProxy) == "":
		shared = "The CPUs themselves: without cpusets the loadgen, the proxy, the origins and observability all run on every CPU and compete for it."
	case sharedCPUs(p) != "":
		shared = "The CPUs the loadgen, the origins and observability share (CPU " + sharedCPUs(p) + " in this placement): the loadgen, the origin behind the proxy, Prometheus and the exporter compete for them (the loadgen's run delay and CPU pressure show it)."
	default:
		shared = "The processes inside each role: the loadgen, the origins and observability have CPUs apart from each other and from the proxy, but all four origins share the origins' CPUs, and Prometheus, the exporter and the docker filter share observability's."
	}
	s.Not = append(s.Not,
		"Frozen proxies still hold their memory, their sockets (listeners, idle upstream connections to the origins) and their page cache.",
		shared,
		"Kernel work for the traffic: softirq network processing runs on whichever CPU takes it and is charged to no container.",
		"Shared hardware: memory bandwidth, the last-level cache, SMT siblings, and the hypervisor (steal time).",
		"Anything else on the host: dockerd, containerd and their shims, other users' processes.")
	return s
}

// sharedCPUs is the CPUs used by more than one of loadgen, origins and
// observability, as a list; "" when none is.
func sharedCPUs(p *Placement) string {
	count := map[int]int{}
	for _, role := range []string{placement.RoleLoadgen, placement.RoleOrigins, placement.RoleObservability} {
		cs, _ := placement.ParseCPUSet(roleCPUs(p, role))
		for _, c := range cs {
			count[c]++
		}
	}
	var shared placement.CPUSet
	for c, n := range count {
		if n > 1 {
			shared = append(shared, c)
		}
	}
	slices.Sort(shared)
	return shared.String()
}

func roleCPUs(p *Placement, role string) string {
	for _, r := range p.Roles {
		if r.Role == role {
			return r.CPUs
		}
	}
	return ""
}
