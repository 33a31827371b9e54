package manifest

import (
	"fmt"
	"time"
)

// The roles of a cell whose CPUs the loadgen watches (Contention.Roles).
const (
	RoleLoadgen = "loadgen" // the loadgen process itself
	RoleProxy   = "proxy"   // the proxy under test's container
	RoleOrigin  = "origin"  // the cell's origin's container
)

// Pressure scopes (RoleContention.PressureScope, LoadgenCPU.PressureScope).
const (
	PressureCgroup = "cgroup" // the role's own cgroup v2 group's cpu.pressure
	PressureHost   = "host"   // /proc/pressure/cpu: any busy task raises it
)

// Contention is what each of a cell's roles got of its CPUs over the
// window: every counter read at the window's two edges, end minus start.
// The reporter judges it (flag contended).
type Contention struct {
	// WindowSeconds is the time between the two readings: the denominator
	// of every share.
	WindowSeconds float64          `json:"window_seconds"`
	Roles         []RoleContention `json:"roles"`
}

// RoleContention is one role's account over the window. A reading that
// failed is absent (nil) and Unread says why.
type RoleContention struct {
	Role      string `json:"role"`                // RoleLoadgen, RoleProxy or RoleOrigin
	Container string `json:"container,omitempty"` // the proxy's or origin's container; "" for the loadgen
	// Worker is, for a cell several loadgen workers ran, the loadgen worker
	// this role is (its index); nil for the loadgen process that ran the
	// cell (alone, or as their coordinator), the proxy and the origin.
	Worker *int `json:"worker,omitempty"`
	// Host is where the role ran when that is not the host of the loadgen
	// that wrote the manifest; co-tenants share a host.
	Host string `json:"host,omitempty"`
	// CPUs the role may run on, as a kernel CPU list ("1", "0-1"): the
	// container's effective cpuset, the loadgen's affinity mask.
	CPUs       string  `json:"cpus,omitempty"`
	CPUSeconds float64 `json:"cpu_seconds"` // its own CPU: the cgroup's usage (containers), user+system (the loadgen)

	// Of its CPUs, from /proc/stat (USER_HZ ticks, summed over them):
	// busy = user + nice + system + irq + softirq; co-tenants = the CPU of
	// the cell's other roles whose own CPUs all lie inside these (sharing
	// by design, the cell's own work); foreign = max(0, busy - own -
	// co-tenants), the time these CPUs spent on somebody else; steal = the
	// hypervisor running another guest.
	BusySeconds     *float64 `json:"busy_seconds,omitempty"`
	CoTenantSeconds float64  `json:"co_tenant_seconds,omitempty"`
	CoTenants       []string `json:"co_tenants,omitempty"` // the roles counted in CoTenantSeconds
	ForeignSeconds  *float64 `json:"foreign_seconds,omitempty"`
	StealSeconds    *float64 `json:"steal_seconds,omitempty"`

	// Its cgroup's cpu.stat: CFS periods, of them throttled, time throttled
	// (summed over CPUs); nil without a readable cpu.stat, zero without a
	// quota.
	Throttling *Throttling `json:"throttling,omitempty"`

	// RunDelaySeconds: the time its threads were runnable but waiting for a
	// CPU, schedstat summed over every thread (of the container's cgroup, of
	// the loadgen process). A thread that exits inside the window loses its
	// wait since the first reading: ThreadsExited counts those.
	RunDelaySeconds *float64 `json:"run_delay_seconds,omitempty"`
	Threads         int      `json:"threads,omitempty"` // at the last reading
	ThreadsExited   int      `json:"threads_exited,omitempty"`

	// PressureSeconds: CPU pressure "some" stall time, of PressureScope
	// (PressureCgroup or PressureHost); nil where the kernel has no PSI.
	PressureSeconds *float64 `json:"pressure_seconds,omitempty"`
	PressureScope   string   `json:"pressure_scope,omitempty"`

	Unread []string `json:"unread,omitempty"` // what could not be read, and why
}

// Name is the role as a reason names it: "loadgen worker 2" for a
// worker, else the role.
func (r RoleContention) Name() string {
	if r.Worker != nil {
		return fmt.Sprintf("%s worker %d", r.Role, *r.Worker)
	}
	return r.Role
}

// Throttling is a cgroup's CFS bandwidth account over a window.
type Throttling struct {
	Periods          int64   `json:"periods"`
	ThrottledPeriods int64   `json:"throttled_periods"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
}

// StealStarvedShare is the share of a set of CPUs' time the hypervisor may
// steal before the work on them counts as starved: the reporter's default
// contended threshold for steal, and the share over any 1 s at which a
// study retakes a sample.
const StealStarvedShare = 0.20

// A stall of the loadgen (it could not run) disturbs a window when it
// lasts StallFloor or more and StallShare or more of the window: the
// requests due during it wait for the host, and 1 % of them own a p99.
// Below the floor a stall is the scheduler's ordinary noise on a busy
// host.
const (
	StallFloor = 0.050
	StallShare = 0.01
)

// Stall is the longest the loadgen could not run during a cell's window.
type Stall struct {
	Seconds float64   `json:"seconds"`
	At      time.Time `json:"at"` // when the wake-up it missed was due
}

// Disturbing is the stall's wording when it disturbed a window of
// window seconds starting at start (StallFloor, StallShare), "" when not.
func (s *Stall) Disturbing(start time.Time, window float64) string {
	if s == nil || window <= 0 || s.Seconds < StallFloor || s.Seconds/window < StallShare {
		return ""
	}
	return fmt.Sprintf("the loadgen could not run for %.0f ms at +%.1f s into the window (%.1f %% of it, >= %.0f %% and >= %.0f ms): the requests due then waited for the host",
		1000*s.Seconds, s.At.Sub(start).Seconds(), 100*s.Seconds/window, 100*StallShare, 1000*StallFloor)
}
