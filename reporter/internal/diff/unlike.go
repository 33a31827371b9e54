package diff

import (
	"fmt"
	"sort"
	"strings"

	"proxybench/reporter/internal/report"
)

// unlike lists what runs a and b measured differently: a cell key's load
// (concurrency, offered rate, window length), the placement (mode, role
// CPUs, proxy quota and workers), the host's CPUs, the proxies' CPU
// limits and the per-request timeout. Empty when they measured alike.
func unlike(a, b *report.Report) []string {
	var out []string
	diff := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s: %s in A, %s in B", what, x, y))
		}
	}
	diff("host CPUs", orDash(a.Environment.Host["cpus"]), orDash(b.Environment.Host["cpus"]))
	diff("placement", placement(a.Environment.Placement), placement(b.Environment.Placement))
	diff("proxy CPU limits", limits(a), limits(b))
	diff("request timeout", timeout(a), timeout(b))
	la, lb := loads(a), loads(b)
	var keys []string
	for k := range la {
		if _, ok := lb[k]; ok && la[k] != lb[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		diff(k+" load", la[k], lb[k])
	}
	return out
}

// loads is each plan key's load as "concurrency C, rate R req/s, window
// W s", from its first cell.
func loads(r *report.Report) map[string]string {
	out := map[string]string{}
	for _, c := range r.Cells {
		if c.Arm != "" {
			continue
		}
		if _, ok := out[c.PlanKey()]; ok {
			continue
		}
		rate := "closed loop"
		if !c.Closed() {
			rate = fmt.Sprintf("rate %g req/s", float64(c.TargetRateRPS))
		}
		out[c.PlanKey()] = fmt.Sprintf("concurrency %d, %s, window %g s", c.Concurrency, rate, float64(c.DurationS))
	}
	return out
}

func placement(p *report.Placement) string {
	if p == nil {
		return "none recorded"
	}
	var roles []string
	for _, r := range p.Roles {
		roles = append(roles, r.Role+" "+r.CPUs)
	}
	return fmt.Sprintf("%s (%s; proxy %g CPUs, %d workers)", p.Mode, strings.Join(roles, ", "), p.ProxyCPUs, p.Workers)
}

func limits(r *report.Report) string {
	var parts []string
	for _, p := range r.Environment.Proxies {
		if p.CPULimitCores.Known() {
			parts = append(parts, fmt.Sprintf("%s %g", p.Proxy, float64(p.CPULimitCores)))
		}
	}
	sort.Strings(parts)
	return orDash(strings.Join(parts, ", "))
}

func timeout(r *report.Report) string {
	if r.RequestTimeoutS <= 0 {
		return "–"
	}
	return fmt.Sprintf("%g s", r.RequestTimeoutS)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
