package dashgen

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"proxybench/internal/metricdefs"
)

// resources shows what each proxy container costs, from the cAdvisor series
// the exporter embeds (labels: service = compose service, name = container).
func resources() *dashboard.DashboardBuilder {
	d := newBoard("proxybench-resources", "proxybench / Resources",
		"Container CPU, memory working set and CFS throttling per proxy (cAdvisor in the exporter), with the origins for context.",
		"resources")
	d.b.WithVariable(labelVar("proxy", "service", metricdefs.ProxyInfo.Name, "Proxy container (compose service)."))
	d.b.WithVariable(runVar())
	cellAnnotations(d.b, `{run=~"$run"}`)
	sel := `{service=~"$proxy"}`
	legend := "{{service}}"

	d.row("Proxies")
	d.add(graph("CPU", "Cores used (all CPUs of the container, user + system).", "short", 12,
		query(`sum by (service) (rate(`+metricdefs.ContainerCPUUsage.Name+sel+`[$__rate_interval]))`, legend)))
	d.add(graph("Memory working set", "Working set bytes: what the kernel would not reclaim first; the OOM killer's view.", "bytes", 12,
		query(`sum by (service) (`+metricdefs.ContainerMemoryWorkingSet.Name+sel+`)`, legend)))
	d.add(graph("CPU throttling", "Share of CFS periods in which the container was throttled by its CPU limit.", "percentunit", 12,
		query(`sum by (service) (rate(`+metricdefs.ContainerCFSThrottledPeriods.Name+sel+`[$__rate_interval]))
  / sum by (service) (rate(`+metricdefs.ContainerCFSPeriods.Name+sel+`[$__rate_interval]) > 0)`, legend)))
	d.add(graph("Throttled time", "Seconds per second the container spent throttled.", "s", 12,
		query(`sum by (service) (rate(`+metricdefs.ContainerCFSThrottledSeconds.Name+sel+`[$__rate_interval]))`, legend)))

	d.row("Origins")
	origins := `{service=~"origin-.+"}`
	d.add(graph("Origin CPU", "Cores used by each origin: an origin near its limit caps every proxy in front of it.", "short", 12,
		query(`sum by (service) (rate(`+metricdefs.ContainerCPUUsage.Name+origins+`[$__rate_interval]))`, legend)))
	d.add(graph("Origin memory working set", "Working set bytes of each origin.", "bytes", 12,
		query(`sum by (service) (`+metricdefs.ContainerMemoryWorkingSet.Name+origins+`)`, legend)))
	return d.b
}
