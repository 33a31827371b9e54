package manifest

// Placement is the run's CPU placement (internal/placement): the plan the
// run asked for and what was measured when it started. A CPU list is in
// the Linux cpuset format ("1", "2-3", "0,2-3"); "" means no cpuset, every
// online CPU.
type Placement struct {
	Mode   string `json:"mode"`             // auto, none or custom
	Reason string `json:"reason,omitempty"` // why the plan is what it is
	CPUs   int    `json:"cpus"`             // online CPUs of the host
	Online string `json:"online"`           // their list
	// Planned is each role's CPUs; every proxy gets the proxy's, with the
	// same quota and worker count (parity).
	Planned       RoleCPUs `json:"planned"`
	ProxyCPUs     float64  `json:"proxy_cpus"`     // every proxy's CPU quota, cores
	Workers       int      `json:"workers"`        // every proxy's workers / threads / GOMAXPROCS
	OriginWorkers int      `json:"origin_workers"` // the Go origins' GOMAXPROCS
	// Loadgen is the loadgen's own affinity, read back from every thread
	// after it pinned itself.
	Loadgen LoadgenAffinity `json:"loadgen"`
	// Containers are the stack's containers as the engine reported them at
	// the start; empty without Docker.
	Containers []ContainerCPUs `json:"containers,omitempty"`
}

// RoleCPUs is the CPU list of each role.
type RoleCPUs struct {
	Loadgen       string `json:"loadgen"`
	Proxy         string `json:"proxy"`
	Origins       string `json:"origins"`
	Observability string `json:"observability"`
}

// LoadgenAffinity is what the loadgen's threads may run on.
type LoadgenAffinity struct {
	CPUs       string `json:"cpus"` // the mask every thread shares
	Threads    int    `json:"threads"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Error      string `json:"error,omitempty"` // when it could not be read
}

// ContainerCPUs is one container's measured placement.
type ContainerCPUs struct {
	Name    string  `json:"name"`
	Service string  `json:"service"`
	Role    string  `json:"role"`   // placement role: proxy, origins, observability
	State   string  `json:"state"`  // running, paused, exited...
	Cpuset  string  `json:"cpuset"` // HostConfig.CpusetCpus; "" = every CPU
	CPUs    float64 `json:"cpus"`   // CPU quota in cores; 0 = none
	// Node is the Docker Swarm node that runs it (a stack's task); absent
	// for a compose container.
	Node string `json:"node,omitempty"`
}
