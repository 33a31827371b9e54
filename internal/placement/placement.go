// Package placement owns the lab's CPU placement plan: which CPUs the
// host-run loadgen, the proxy under test, the origins and the observability
// stack (exporter, Prometheus, Grafana, the docker filter) get, and the CPU
// quota and worker count every proxy runs with. It decides the plan from
// the host's online CPUs (auto), leaves everything unpinned (none) or
// validates the cpusets a plan file names (custom); it words the plan as
// the compose file's variables (Env), pins the loadgen's own threads
// (Pin) and compares a running stack with the plan (Check). Parity holds by
// construction: every proxy gets the one proxy cpuset, quota and worker
// count.
package placement

import (
	"fmt"
	"strings"
)

// Modes.
const (
	Auto   = "auto"   // from the host's online CPUs (the default)
	None   = "none"   // no cpusets: every process may run on every CPU
	Custom = "custom" // the cpusets a plan file's placement section names
)

// Roles, in the order every table shows them.
const (
	RoleLoadgen       = "loadgen"
	RoleProxy         = "proxy"
	RoleOrigins       = "origins"
	RoleObservability = "observability"
)

// Roles lists the roles in display order.
var Roles = []string{RoleLoadgen, RoleProxy, RoleOrigins, RoleObservability}

// RoleOfLabel maps a container's proxybench.role label (compose file) to
// its placement role; "" for a container the stack does not place.
func RoleOfLabel(label string) string {
	switch label {
	case "proxy":
		return RoleProxy
	case "origin":
		return RoleOrigins
	case "infra":
		return RoleObservability
	}
	return ""
}

// NoneCPUs is the proxies' quota and worker count without placement: 2
// (capped at the host's CPUs), what the stack ran with before it had a
// placement plan.
const NoneCPUs = 2

// Spec is what a run asks for: the -placement flag (auto or none) or a plan
// file's placement section. Naming any role's CPUs makes it custom: the
// proxy's are required, every other role left out gets the CPUs the proxy
// does not have.
type Spec struct {
	Mode          string `yaml:"mode" json:"mode,omitempty"`
	Loadgen       string `yaml:"loadgen" json:"loadgen,omitempty"`
	Proxy         string `yaml:"proxy" json:"proxy,omitempty"`
	Origins       string `yaml:"origins" json:"origins,omitempty"`
	Observability string `yaml:"observability" json:"observability,omitempty"`
}

// Name is the mode the spec asks for: its Mode, else custom when it names
// any role's CPUs, else auto.
func (s Spec) Name() string {
	switch {
	case s.Mode != "":
		return s.Mode
	case s.hasRoles():
		return Custom
	}
	return Auto
}

func (s Spec) hasRoles() bool {
	return s.Loadgen != "" || s.Proxy != "" || s.Origins != "" || s.Observability != ""
}

// roles pairs each role with its plan-file key and value.
func (s Spec) roles() []struct{ role, value string } {
	return []struct{ role, value string }{
		{RoleLoadgen, s.Loadgen}, {RoleProxy, s.Proxy}, {RoleOrigins, s.Origins}, {RoleObservability, s.Observability},
	}
}

// Problems is everything wrong with the spec that can be told without the
// host: the mode, the cpuset lists, and the proxy's CPUs shared with
// another role. Each names the plan key, the bad value and what to do.
func (s Spec) Problems() []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	switch s.Name() {
	case Auto, None:
		if s.hasRoles() {
			bad("placement.mode %s with CPUs named for %s: drop the mode (naming CPUs means custom) or drop the CPUs", s.Name(), strings.Join(s.named(), ", "))
		}
	case Custom:
		if s.Proxy == "" {
			bad("placement.proxy: empty: a custom placement needs the proxy's CPUs, e.g. proxy: \"1\" (or use mode auto or none)")
		}
	default:
		bad("placement.mode %q: use auto (the default: from the host's CPUs), none (no cpusets) or custom (name the CPUs of loadgen, proxy, origins, observability)", s.Mode)
	}
	sets := map[string]CPUSet{}
	for _, r := range s.roles() {
		cs, err := ParseCPUSet(r.value)
		if err != nil {
			bad("placement.%s %v", r.role, err)
			continue
		}
		if r.value != "" && len(cs) == 0 {
			bad("placement.%s %q: no CPUs: name at least one, or leave the key out", r.role, r.value)
		}
		sets[r.role] = cs
	}
	if px := sets[RoleProxy]; len(px) > 0 {
		for _, r := range s.roles() {
			if r.role == RoleProxy {
				continue
			}
			if both := px.Intersect(sets[r.role]); len(both) > 0 {
				bad("placement.%s %q shares CPU %s with placement.proxy %q: the proxy's CPUs are its own; give %s other CPUs", r.role, r.value, both, s.Proxy, r.role)
			}
		}
	}
	return out
}

func (s Spec) named() []string {
	var out []string
	for _, r := range s.roles() {
		if r.value != "" {
			out = append(out, r.role)
		}
	}
	return out
}

// Placement is a resolved plan: each role's CPUs and the proxies' quota
// and workers. An empty CPUSet means no cpuset: every online CPU.
type Placement struct {
	Mode          string
	Reason        string // why the plan is what it is, in a sentence
	Online        CPUSet // the host's online CPUs
	Loadgen       CPUSet
	Proxy         CPUSet
	Origins       CPUSet
	Observability CPUSet
	ProxyCPUs     float64 // every proxy's CPU quota, in cores (compose cpus)
	Workers       int     // every proxy's workers / threads / GOMAXPROCS
	OriginWorkers int     // the Go origins' GOMAXPROCS
}

// Of returns the CPUs of a role.
func (p Placement) Of(role string) CPUSet {
	switch role {
	case RoleLoadgen:
		return p.Loadgen
	case RoleProxy:
		return p.Proxy
	case RoleOrigins:
		return p.Origins
	case RoleObservability:
		return p.Observability
	}
	return nil
}

// Separated reports whether the proxy has CPUs no other role uses.
func (p Placement) Separated() bool { return len(p.Proxy) > 0 }

// Resolve turns a spec into the plan for a host with these online CPUs.
// Its error lists every problem, in the plan's words.
func Resolve(s Spec, online CPUSet) (Placement, error) {
	probs := s.Problems()
	if len(online) == 0 {
		probs = append(probs, "placement: the host reports no online CPU (/sys/devices/system/cpu/online)")
	}
	if len(probs) > 0 {
		return Placement{}, invalid(probs)
	}
	switch s.Name() {
	case None:
		p := unplaced(None, online)
		p.Reason = "placement none: no cpusets; every process may run on every CPU"
		return p, nil
	case Auto:
		return auto(online), nil
	}
	return custom(s, online)
}

func invalid(probs []string) error {
	return fmt.Errorf("invalid plan:\n  %s", strings.Join(probs, "\n  "))
}

// unplaced is the plan without cpusets: the proxies keep the quota and
// workers of NoneCPUs.
func unplaced(mode string, online CPUSet) Placement {
	n := min(NoneCPUs, len(online))
	return Placement{Mode: mode, Online: online, ProxyCPUs: float64(n), Workers: n, OriginWorkers: n}
}

// auto is the default plan, from the number of online CPUs n (taken in
// order, lowest first):
//
//	n = 1   nothing can be separated: no cpusets, as none
//	n = 2   proxy on the second CPU; loadgen, origins, observability on the first
//	n = 3   proxy on the third, origins on the second, loadgen and observability on the first
//	n >= 4  proxy on the top max(1, n/4) CPUs, origins on the max(1, n/4) below,
//	        observability on the first, the loadgen on the rest
//
// The loadgen keeps the largest share from 4 CPUs on: it must outrun the
// proxy, and observability (scrapes once a second) needs little.
func auto(online CPUSet) Placement {
	n := len(online)
	if n == 1 {
		p := unplaced(Auto, online)
		p.Reason = "1 CPU online: nothing can be separated, so no cpusets (as placement none)"
		return p
	}
	c := online
	p := Placement{Mode: Auto, Online: online}
	switch {
	case n == 2:
		p.Proxy = CPUSet{c[1]}
		p.Loadgen, p.Origins, p.Observability = CPUSet{c[0]}, CPUSet{c[0]}, CPUSet{c[0]}
		p.Reason = "2 CPUs: the proxy on one, everything else on the other"
	case n == 3:
		p.Proxy, p.Origins = CPUSet{c[2]}, CPUSet{c[1]}
		p.Loadgen, p.Observability = CPUSet{c[0]}, CPUSet{c[0]}
		p.Reason = "3 CPUs: the proxy, the origins, and the loadgen with observability on one each"
	default:
		k := max(1, n/4)
		p.Proxy = append(CPUSet{}, c[n-k:]...)
		p.Origins = append(CPUSet{}, c[n-2*k:n-k]...)
		p.Observability = CPUSet{c[0]}
		p.Loadgen = append(CPUSet{}, c[1:n-2*k]...)
		p.Reason = fmt.Sprintf("%d CPUs: a quarter each to the proxy (%d) and the origins (%d), one to observability, the rest (%d) to the loadgen", n, k, k, len(p.Loadgen))
	}
	p.ProxyCPUs, p.Workers, p.OriginWorkers = float64(len(p.Proxy)), len(p.Proxy), len(p.Origins)
	return p
}

// custom checks the named CPUs against the online ones; a role left out
// gets the online CPUs the proxy does not have.
func custom(s Spec, online CPUSet) (Placement, error) {
	var probs []string
	p := Placement{Mode: Custom, Online: online, Reason: "placement custom: the plan file's cpusets"}
	proxy, _ := ParseCPUSet(s.Proxy)
	rest := online.Minus(proxy)
	for _, r := range s.roles() {
		cs, _ := ParseCPUSet(r.value) // Problems parsed them already
		if off := cs.Minus(online); len(off) > 0 {
			probs = append(probs, fmt.Sprintf("placement.%s %q: CPU %s not online (online: %s): name CPUs of %s", r.role, r.value, off, online, online))
			continue
		}
		if len(cs) == 0 {
			cs = rest
		}
		switch r.role {
		case RoleLoadgen:
			p.Loadgen = cs
		case RoleProxy:
			p.Proxy = cs
		case RoleOrigins:
			p.Origins = cs
		case RoleObservability:
			p.Observability = cs
		}
	}
	if len(probs) == 0 && len(rest) == 0 {
		probs = append(probs, fmt.Sprintf("placement.proxy %q takes every online CPU (%s): leave at least one for the loadgen, the origins and observability", s.Proxy, online))
	}
	if len(probs) > 0 {
		return Placement{}, invalid(probs)
	}
	p.ProxyCPUs, p.Workers, p.OriginWorkers = float64(len(p.Proxy)), len(p.Proxy), len(p.Origins)
	return p, nil
}

// Summary is the plan in one line, for logs and the placement command.
func (p Placement) Summary() string {
	var parts []string
	for _, r := range Roles {
		parts = append(parts, r+" "+ListOrAll(p.Of(r)))
	}
	return fmt.Sprintf("placement %s (online CPUs %s): %s; every proxy: CPU quota %g, workers %d", p.Mode, p.Online,
		strings.Join(parts, ", "), p.ProxyCPUs, p.Workers)
}

// ListOrAll is a role's CPUs as the tables show them: the list, or "all"
// without a cpuset.
func ListOrAll(s CPUSet) string {
	if len(s) == 0 {
		return "all"
	}
	return s.String()
}
