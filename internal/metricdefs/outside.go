package metricdefs

// containerLabels are the labels the exporter gives cAdvisor's series
// (exporter/internal/containers).
var containerLabels = []string{"id", "name", "image", "service"}

// Outside series read by more than one component: cAdvisor's, embedded in
// the exporter; the Go client's process collector, in the loadgen and the
// exporter; Prometheus's own per target.
var (
	ContainerCPUUsage            = def(Def{Name: "container_cpu_usage_seconds_total", Type: Counter, Owner: Outside, Labels: with(containerLabels, "cpu")})
	ContainerMemoryWorkingSet    = def(Def{Name: "container_memory_working_set_bytes", Type: Gauge, Owner: Outside, Labels: with(containerLabels)})
	ContainerCFSPeriods          = def(Def{Name: "container_cpu_cfs_periods_total", Type: Counter, Owner: Outside, Labels: with(containerLabels)})
	ContainerCFSThrottledPeriods = def(Def{Name: "container_cpu_cfs_throttled_periods_total", Type: Counter, Owner: Outside, Labels: with(containerLabels)})
	ContainerCFSThrottledSeconds = def(Def{Name: "container_cpu_cfs_throttled_seconds_total", Type: Counter, Owner: Outside, Labels: with(containerLabels)})
	ContainerSpecCPUQuota        = def(Def{Name: "container_spec_cpu_quota", Type: Gauge, Owner: Outside, Labels: with(containerLabels)})
	ContainerSpecCPUPeriod       = def(Def{Name: "container_spec_cpu_period", Type: Gauge, Owner: Outside, Labels: with(containerLabels)})
	ContainerSpecMemoryLimit     = def(Def{Name: "container_spec_memory_limit_bytes", Type: Gauge, Owner: Outside, Labels: with(containerLabels)})

	ProcessCPU            = def(Def{Name: "process_cpu_seconds_total", Type: Counter, Owner: Outside})
	ProcessResidentMemory = def(Def{Name: "process_resident_memory_bytes", Type: Gauge, Owner: Outside})

	Up             = def(Def{Name: "up", Type: Gauge, Owner: Outside})
	ScrapeDuration = def(Def{Name: "scrape_duration_seconds", Type: Gauge, Owner: Outside})
)
