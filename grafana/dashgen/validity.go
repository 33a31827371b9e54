package dashgen

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"proxybench/internal/metricdefs"
)

// Recorded series of prometheus/rules/validity.rules.yml.
const (
	recScheduled = "proxy_origin_scenario:proxybench_open_loop_scheduled:rate5s"
	recSent      = "proxy_origin_scenario:proxybench_open_loop_sent:rate5s"
	recLagQ      = "proxy_origin_scenario_quantile:proxybench_open_loop_lag_seconds:histogram_quantile_rate5s"
)

// validity answers "can these numbers be trusted": was the loadgen itself
// the bottleneck, did it send at the offered rate, were all targets scraped.
func validity() *dashboard.DashboardBuilder {
	d := newBoard("proxybench-validity", "proxybench / Validity",
		"Is the measurement sound: loadgen CPU against its limit, open-loop lag, achieved against offered rate, scrape health.",
		"validity")
	trafficVars(d.b)
	cellAnnotations(d.b, `{run=~"$run", `+trafficSel+`}`)
	sel := "{" + trafficSel + "}"
	legend := "{{proxy}} → {{origin}} {{scenario}}"

	d.row("Load generator")
	d.add(graph("Loadgen CPU", "Cores the loadgen process uses, and the cores it may use. Near the limit, latency includes the loadgen's own queueing.", "short", 12,
		query(`rate(`+metricdefs.ProcessCPU.Name+`{job="loadgen"}[$__rate_interval])`, "used"),
		query(metricdefs.LoadgenCPULimit.Name+`{job="loadgen"}`, "limit")))
	d.add(graph("Loadgen CPU utilisation", "Used cores / allowed cores.", "percentunit", 12,
		query(`rate(`+metricdefs.ProcessCPU.Name+`{job="loadgen"}[$__rate_interval]) / `+metricdefs.LoadgenCPULimit.Name+`{job="loadgen"}`, "utilisation")))

	d.row("Open loop")
	d.add(graph("Achieved vs offered rate", "Offered (target) rate, requests actually sent, and responses per second. Closed-loop cells offer 0.", "reqps", 12,
		query(`sum by (proxy, origin, scenario) (`+metricdefs.TargetRate.Name+sel+`)`, legend+" offered"),
		query(recSent+sel, legend+" sent"),
		query(recRPS+sel, legend+" responses")))
	d.add(graph("Schedule backlog", "Requests due but not yet sent, per second (scheduled - sent, 5 s window): above 0 the loadgen falls behind.", "reqps", 12,
		query(recScheduled+sel+" - "+recSent+sel, legend)))
	d.add(graph("Open-loop lag p99", "99th percentile of actual minus intended send time (5 s window). Only open-loop cells have a schedule.", "s", 24,
		query(recLagQ+`{quantile="0.99", `+trafficSel+`}`, legend)))

	d.row("Data")
	d.add(graph("Scrape targets up", "1 when the last scrape of the job succeeded.", "short", 12,
		query(metricdefs.Up.Name, "{{job}}")))
	d.add(graph("Scrape duration", "Seconds per scrape; must stay well under the 1 s interval.", "s", 12,
		query(metricdefs.ScrapeDuration.Name, "{{job}}")))
	return d.b
}
