package placement

import (
	"fmt"
	"math"
	"strings"
)

// Observed is one running container's placement as the engine reports it.
type Observed struct {
	Name   string
	Role   string  // placement role (RoleOfLabel); "" is not checked
	Cpuset string  // HostConfig.CpusetCpus; "" = no cpuset
	CPUs   float64 // its CPU quota in cores; 0 = none
}

// quotaTolerance is how far a quota may be from the plan's and still
// match (the engine stores nanocores or a quota per period).
const quotaTolerance = 0.005

// Mismatches lists every way the containers differ from the plan: a
// cpuset other than its role's, or a proxy whose quota is not the plan's.
// Parity follows: every proxy matching the one plan shares one cpuset and
// quota.
func (p Placement) Mismatches(ctrs []Observed) []string {
	var out []string
	for _, c := range ctrs {
		if c.Role == "" {
			continue
		}
		want := p.Of(c.Role)
		got, err := ParseCPUSet(c.Cpuset)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s has cpuset %q, which does not parse: %v", c.Name, c.Cpuset, err))
		case !got.Equal(want):
			out = append(out, fmt.Sprintf("%s (%s) runs on CPUs %s, the plan gives %s CPUs %s", c.Name, c.Role, ListOrAll(got), c.Role, ListOrAll(want)))
		}
		if c.Role == RoleProxy && math.Abs(c.CPUs-p.ProxyCPUs) > quotaTolerance {
			out = append(out, fmt.Sprintf("%s has a CPU quota of %s, the plan gives every proxy %g", c.Name, quotaText(c.CPUs), p.ProxyCPUs))
		}
	}
	return out
}

func quotaText(cpus float64) string {
	if cpus == 0 {
		return "none"
	}
	return fmt.Sprintf("%g", cpus)
}

// StackMode names the placement the containers run with: auto or none
// when they match that mode's plan for these online CPUs, "" when they
// match neither (a custom plan, or containers changed by hand).
func StackMode(ctrs []Observed, online CPUSet) string {
	for _, m := range []string{Auto, None} {
		if p, err := Resolve(Spec{Mode: m}, online); err == nil && len(p.Mismatches(ctrs)) == 0 {
			return m
		}
	}
	return ""
}

// MismatchError is the error of a run whose plan the running stack does
// not follow: it says what differs and how to bring the two together.
// upFlags are the make variables that bring the stack up with the run's
// placement (PLACEMENT=auto, or PLAN=<file> for a custom one).
func (p Placement) MismatchError(ctrs []Observed, online CPUSet, upFlags string) error {
	diffs := p.Mismatches(ctrs)
	if len(diffs) == 0 {
		return nil
	}
	stack := "another placement (custom, or containers changed by hand)"
	if m := StackMode(ctrs, online); m != "" {
		stack = "placement " + m
	}
	const most = 4
	if len(diffs) > most {
		diffs = append(diffs[:most:most], fmt.Sprintf("and %d more", len(diffs)-most))
	}
	return fmt.Errorf("the stack runs %s, the run asks placement %s:\n  %s\n"+
		"  bring the stack up with the run's placement: make up %s (a container changed by hand, docker update, keeps its change until it is recreated: docker rm -f it, then make up), or run with the stack's placement",
		stack, p.Mode, strings.Join(diffs, "\n  "), upFlags)
}
