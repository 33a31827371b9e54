package build

import (
	"context"
	"fmt"
	"math"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/metricdefs"
	"proxybench/internal/placement"
	"proxybench/internal/promapi"
	"proxybench/internal/stack"
	"proxybench/reporter/internal/collect"
	"proxybench/reporter/internal/report"
)

// environment is the report's environment section: the proxies' versions
// and limits, the host, the placement and what isolation does, from the
// manifest and the running stack.
func environment(ctx context.Context, cfg Config, r *report.Report, man *manifest.Manifest) report.Environment {
	env := report.Environment{Host: map[string]string{}}
	env.Placement, env.Isolation = placementEnv(man)
	if man != nil {
		env.Ceiling, env.OpenCeiling = man.Ceiling, man.OpenCeiling
	}
	// Every proxy's worker count (docs/parity.md): the placement's, or
	// what the stack ran with before it had one.
	workers := placement.NoneCPUs
	if env.Placement != nil {
		workers = env.Placement.Workers
	}
	seen := map[string]bool{}
	var proxies []string
	for _, c := range r.Cells {
		if !seen[c.Proxy] && !stack.IsDirect(c.Proxy) { // the direct control has no proxy to describe
			seen[c.Proxy] = true
			proxies = append(proxies, c.Proxy)
		}
	}
	info := map[string]map[string]string{}
	cpu := map[string]float64{}
	mem := map[string]float64{}
	if r.Sources.PrometheusOK && len(r.Cells) > 0 {
		rng := promapi.Duration(r.End.Sub(r.Start) + time.Minute)
		at := promapi.FormatTime(r.End.Add(collect.MarginAfter))
		q := func(expr string) []promapi.Sample {
			v, err := cfg.Prom.Query(ctx, expr, r.End.Add(collect.MarginAfter))
			if err != nil {
				cfg.Log.Warn("environment query failed", "query", expr, "err", err)
			}
			return v
		}
		for _, s := range q(fmt.Sprintf("last_over_time(%s[%s] @ %s)", metricdefs.ProxyInfo.Name, rng, at)) {
			info[s.Labels["service"]] = s.Labels
		}
		for _, s := range q(fmt.Sprintf("max by (service) (last_over_time(%[3]s[%[1]s] @ %[2]s)) / max by (service) (last_over_time(%[4]s[%[1]s] @ %[2]s))", rng, at,
			metricdefs.ContainerSpecCPUQuota.Name, metricdefs.ContainerSpecCPUPeriod.Name)) {
			cpu[s.Labels["service"]] = s.Value
		}
		for _, s := range q(fmt.Sprintf("max by (service) (last_over_time(%s[%s] @ %s))", metricdefs.ContainerSpecMemoryLimit.Name, rng, at)) {
			mem[s.Labels["service"]] = s.Value
		}
		env.Host["prometheus"] = r.Sources.PrometheusVersion
	}
	for _, p := range proxies {
		pe := report.ProxyEnv{Proxy: p, CPULimitCores: report.NaN(), MemLimitBytes: report.NaN(), Workers: placement.WorkerSetting(p, workers)}
		if l := info[p]; l != nil {
			pe.Image, pe.Version = l["image"], l["version"]
		}
		// The loadgen asked the binary itself; the exporter has only the
		// image's label (it cannot run anything in a container).
		if v := manifestVersion(man, p); v != "" {
			pe.Version = v
		}
		if w, ok := readWorkers(man, p); ok {
			pe.Workers = w
		}
		if v, ok := cpu[p]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
			pe.CPULimitCores = report.Num(v)
		}
		if v, ok := mem[p]; ok && v > 0 && v < 1<<60 {
			pe.MemLimitBytes = report.Num(v)
		}
		env.Proxies = append(env.Proxies, pe)
	}
	if man != nil {
		h := man.Host
		for k, v := range map[string]string{"hostname": h.Hostname, "os": h.OS, "kernel": h.Kernel, "cpu_model": h.CPUModel,
			"loadgen": h.Loadgen, "docker": h.Docker} {
			if v != "" {
				env.Host[k] = v
			}
		}
		if h.CPUs > 0 {
			env.Host["cpus"] = fmt.Sprint(h.CPUs)
		}
		if h.MemBytes > 0 {
			env.Host["memory"] = fmt.Sprintf("%.1f GiB", float64(h.MemBytes)/(1<<30))
		}
	}
	env.Parity = parity(man, proxies)
	return env
}

func manifestVersion(man *manifest.Manifest, proxy string) string {
	if man == nil {
		return ""
	}
	return man.Versions[proxy]
}
