package report

import (
	"fmt"

	"proxybench/internal/manifest"
)

// Who limited a closed-loop cell (Cell.Bottleneck.Who).
const (
	// BottleneckProxy: the proxy's CPUs were busy: its goodput is the
	// proxy's capacity under the run's limits.
	BottleneckProxy = "proxy"
	// BottleneckLab: the loadgen's or the origin's CPUs were saturated
	// while the proxy's had headroom: the goodput is a lower bound of the
	// proxy's ("≥ N"), never a throughput winner.
	BottleneckLab = "lab"
)

// BusyShareSaturated is the share of a role's CPUs' time busy (every
// process's user, nice, system, irq and softirq time in /proc/stat) at
// which the role's CPUs are the limit.
const BusyShareSaturated = 0.90

// Bottleneck names who limited a closed-loop cell, with its evidence; the
// zero value is "neither" (or not judged: an open loop, or no readings).
type Bottleneck struct {
	Who    string `json:"who,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// LabBound says whether the lab, not the proxy, limited the cell.
func (c *Cell) LabBound() bool { return c.Bottleneck.Who == BottleneckLab }

// judgeBottleneck sets c.Bottleneck of a closed-loop cell from what its
// roles' CPUs did over the window (Contention): the proxy when its CPUs
// were BusyShareSaturated busy or more; the lab when the proxy's were not
// and the loadgen's or the origin's were.
func judgeBottleneck(c *Cell) {
	c.Bottleneck = Bottleneck{}
	if !c.Closed() {
		return
	}
	var proxy *RoleContention
	var lab []RoleContention
	for i := range c.Contention {
		r := &c.Contention[i]
		switch r.Role {
		case manifest.RoleProxy:
			proxy = r
		case manifest.RoleLoadgen, manifest.RoleOrigin:
			if r.BusyShare.Known() && float64(r.BusyShare) >= BusyShareSaturated {
				lab = append(lab, *r)
			}
		}
	}
	if proxy == nil || !proxy.BusyShare.Known() {
		return
	}
	if float64(proxy.BusyShare) >= BusyShareSaturated {
		c.Bottleneck = Bottleneck{Who: BottleneckProxy, Reason: fmt.Sprintf("the proxy's CPUs %s were %.0f %% busy (>= %.0f %%): its goodput is its capacity here",
			proxy.CPUs, 100*float64(proxy.BusyShare), 100*BusyShareSaturated)}
		return
	}
	if len(lab) > 0 {
		r := lab[0]
		c.Bottleneck = Bottleneck{Who: BottleneckLab, Reason: fmt.Sprintf("the %s's CPUs %s were %.0f %% busy (>= %.0f %%) while the proxy's %s were %.0f %%: the goodput is a lower bound of the proxy's",
			r.Role, r.CPUs, 100*float64(r.BusyShare), 100*BusyShareSaturated, proxy.CPUs, 100*float64(proxy.BusyShare))}
	}
}
