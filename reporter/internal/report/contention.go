package report

import (
	"fmt"
	"strings"

	"proxybench/internal/cputime"
	"proxybench/internal/manifest"
)

// RoleContention is what one of the cell's roles (the loadgen, the proxy,
// the origin) got of its CPUs over the window: the manifest's edge
// readings (manifest.RoleContention) as shares of the window w. n = the
// number of its CPUs.
type RoleContention struct {
	Role      string `json:"role"`
	Container string `json:"container,omitempty"`
	Worker    *int   `json:"worker,omitempty"` // the loadgen worker this role is (manifest.RoleContention.Worker)
	Host      string `json:"host,omitempty"`
	CPUs      string `json:"cpus,omitempty"`
	// ForeignShare: foreign / (w x n), the share of its CPUs' time that
	// went to somebody else than the cell's roles.
	ForeignShare Num `json:"foreign_share"`
	// RunDelayPerS: the run-queue wait summed over its threads / w
	// (seconds per second; above 1 when several threads waited at once).
	RunDelayPerS Num `json:"run_delay_per_second"`
	// PressureShare: PSI "some" / w of its own cgroup; null for the host's
	// pressure, which any busy task raises (PressureScope says which it had).
	PressureShare Num    `json:"pressure_share"`
	PressureScope string `json:"pressure_scope,omitempty"`
	StealShare    Num    `json:"steal_share"`              // steal / (w x n)
	BusyShare     Num    `json:"busy_share"`               // busy / (w x n): every process's time on its CPUs
	ThrottledPerS Num    `json:"throttled_per_second"`     // throttled time / w
	ThreadsExited int    `json:"threads_exited,omitempty"` // their wait inside the window is not counted
}

// ContentionOf derives the shares of a manifest's contention readings; nil
// when there are none (an older manifest, or no manifest).
func ContentionOf(m *manifest.Contention) []RoleContention {
	if m == nil || m.WindowSeconds <= 0 {
		return nil
	}
	w := m.WindowSeconds
	per := func(p *float64, d float64) Num {
		if p == nil || d <= 0 {
			return NaN()
		}
		return Num(*p / d)
	}
	var out []RoleContention
	for _, r := range m.Roles {
		n := 0.0
		if cpus, err := cputime.ParseList(r.CPUs); err == nil {
			n = float64(len(cpus))
		}
		rc := RoleContention{Role: r.Role, Container: r.Container, Worker: r.Worker, Host: r.Host, CPUs: r.CPUs, PressureScope: r.PressureScope,
			ForeignShare: per(r.ForeignSeconds, w*n), RunDelayPerS: per(r.RunDelaySeconds, w), StealShare: per(r.StealSeconds, w*n), BusyShare: per(r.BusySeconds, w*n),
			PressureShare: NaN(), ThrottledPerS: NaN(), ThreadsExited: r.ThreadsExited}
		if r.PressureScope == manifest.PressureCgroup {
			rc.PressureShare = per(r.PressureSeconds, w)
		}
		if r.Throttling != nil {
			rc.ThrottledPerS = Num(r.Throttling.ThrottledSeconds / w)
		}
		out = append(out, rc)
	}
	return out
}

// ContentionThresholds tune the contended flag (shares are fractions).
type ContentionThresholds struct {
	ForeignShare  float64 `json:"contended_foreign_share"`        // foreign share of a role's CPUs at or above, ...
	RunDelayPerS  float64 `json:"contended_run_delay_per_second"` // ... while its run delay per second at or above, ...
	PressureShare float64 `json:"contended_pressure_share"`       // ... or its own cgroup's PSI some share at or above: starved
	StealShare    float64 `json:"contended_steal_share"`          // steal share of a role's CPUs at or above: starved
	ThrottledPerS float64 `json:"contended_throttled_per_second"` // the origin's throttled time per second at or above: starved
}

// DefaultContention are the documented defaults (reporter/README.md),
// calibrated on a 2-core host with the proxy alone on one core.
var DefaultContention = ContentionThresholds{
	ForeignShare:  manifest.ForeignStarvedShare,
	RunDelayPerS:  manifest.RunDelayStarvedPerS,
	PressureShare: 0.25,
	StealShare:    manifest.StealStarvedShare,
	ThrottledPerS: 0.05,
}

// judgeContention flags a cell contended (suspect) when any of its roles
// was starved of its CPUs by somebody else: its CPUs' time went to other
// processes while its threads waited for one, the hypervisor stole them,
// or (the origin) its CPU quota throttled it. The loadgen's own quota is
// loadgen_bound's, and the proxy's is the parity limit under test, not
// contention. One flag names every starved role, the proxy first.
func judgeContention(c *Cell, th ContentionThresholds, add func(code, sev, format string, a ...any)) {
	var who []string
	for _, role := range []string{manifest.RoleProxy, manifest.RoleOrigin, manifest.RoleLoadgen} {
		for _, r := range c.Contention {
			if r.Role != role {
				continue
			}
			if why := starved(r, th); len(why) > 0 {
				who = append(who, roleName(r)+": "+strings.Join(why, "; "))
			}
		}
	}
	// Steal comes in bursts: a second the hypervisor took from the host
	// owns that second's requests (the tail), whatever the window's
	// average says. The loadgen watched every second of the window
	// (StealWorstSecond, the share of the host's CPUs).
	if w := c.StealWorstSecond; w.Known() && float64(w) >= th.StealShare {
		who = append(who, fmt.Sprintf("the host: the hypervisor stole %.0f %% of its CPUs in the window's worst second (>= %s)", 100*float64(w), Pct(th.StealShare)))
	}
	// A stall of the loadgen (it could not run, whoever took the CPU) is
	// judged on what it did to the window: long enough and a large
	// enough share of it to own the tail (manifest.Stall.Disturbing).
	if c.DurationS.Known() {
		if why := c.Stall.Disturbing(c.Start, float64(c.DurationS)); why != "" {
			who = append(who, why)
		}
	}
	if len(who) > 0 {
		add(FlagContended, Suspect, "%s", strings.Join(who, "; "))
	}
}

// starved is every way role r was starved, worded with its evidence and
// threshold; none when it was not.
func starved(r RoleContention, th ContentionThresholds) []string {
	var why []string
	at := func(v Num, limit float64) bool { return v.Known() && float64(v) >= limit }
	if at(r.ForeignShare, th.ForeignShare) {
		switch {
		case at(r.RunDelayPerS, th.RunDelayPerS):
			why = append(why, fmt.Sprintf("%.0f %% of %s time went to other processes (>= %s) while its threads waited %.2f s per s for a CPU (>= %g s)",
				100*float64(r.ForeignShare), cpusOf(r), Pct(th.ForeignShare), float64(r.RunDelayPerS), th.RunDelayPerS))
		case at(r.PressureShare, th.PressureShare):
			why = append(why, fmt.Sprintf("%.0f %% of %s time went to other processes (>= %s) while some of its threads waited for a CPU %.0f %% of the time (its cgroup's PSI, >= %s)",
				100*float64(r.ForeignShare), cpusOf(r), Pct(th.ForeignShare), 100*float64(r.PressureShare), Pct(th.PressureShare)))
		}
	}
	if at(r.StealShare, th.StealShare) {
		why = append(why, fmt.Sprintf("the hypervisor stole %.0f %% of %s time (>= %s)", 100*float64(r.StealShare), cpusOf(r), Pct(th.StealShare)))
	}
	if r.Role == manifest.RoleOrigin && at(r.ThrottledPerS, th.ThrottledPerS) {
		why = append(why, fmt.Sprintf("its cgroup's CPU quota throttled it %.2f s per s (>= %g s)", float64(r.ThrottledPerS), th.ThrottledPerS))
	}
	return why
}

// roleName is "proxy (proxybench-nginx)", or "loadgen worker 2".
func roleName(r RoleContention) string {
	if r.Container == "" {
		return manifest.RoleContention{Role: r.Role, Worker: r.Worker}.Name()
	}
	return r.Role + " (" + r.Container + ")"
}

// cpusOf is "its CPU 1's" or "its CPUs 0-1'".
func cpusOf(r RoleContention) string {
	switch {
	case r.CPUs == "":
		return "its CPUs'"
	case strings.ContainsAny(r.CPUs, ",-"):
		return "its CPUs " + r.CPUs + "'"
	}
	return "its CPU " + r.CPUs + "'s"
}
