package dashgen

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/table"

	"proxybench/internal/metricdefs"
)

// Recorded series of prometheus/rules/traffic.rules.yml.
const (
	recRPS       = metricdefs.RecRPS
	recClass     = metricdefs.RecClass
	recReason    = metricdefs.RecReason
	recFailRatio = metricdefs.RecFailRatio
	recQuantile  = metricdefs.RecQuantile
	recMean      = metricdefs.RecMean
)

// trafficVars are the run/proxy/origin/scenario variables of the traffic
// dashboards. run only narrows the cell annotations and the cells table:
// traffic series carry no run label, runs are told apart by time.
func trafficVars(b *dashboard.DashboardBuilder) {
	b.WithVariable(runVar()).
		WithVariable(labelVar("proxy", "proxy", metricdefs.Requests.Name, "Proxy under test.")).
		WithVariable(labelVar("origin", "origin", metricdefs.Requests.Name, "Origin behind the proxy.")).
		WithVariable(labelVar("scenario", "scenario", metricdefs.Requests.Name, "Scenario (route family)."))
}

func overview() *dashboard.DashboardBuilder {
	d := newBoard("proxybench-overview", "proxybench / Run overview",
		"Live traffic per proxy and origin from the loadgen, read through the recording rules the reporter uses. Cell windows are annotations.",
		"overview")
	trafficVars(d.b)
	cellAnnotations(d.b, `{run=~"$run", `+trafficSel+`}`)
	sel := "{" + trafficSel + "}"
	q := func(quantile string) *prometheus.DataqueryBuilder {
		return query(recQuantile+`{quantile="`+quantile+`", `+trafficSel+`}`, "{{proxy}} → {{origin}} {{scenario}}")
	}
	legend := "{{proxy}} → {{origin}} {{scenario}}"

	d.row("Throughput and latency")
	d.add(graph("Requests per second", "Responses with any HTTP status per second (5 s window).", "reqps", 12,
		query(recRPS+sel, legend)))
	d.add(graph("Failure ratio", "(5xx responses + transport errors) / attempts (5 s window). Absent while idle.", "percentunit", 12,
		query(recFailRatio+sel, legend)))
	d.add(graph("Latency p50", "Median from the native histogram (5 s window). Open loop: from the intended send time.", "s", 8, q("0.5")))
	d.add(graph("Latency p99", "99th percentile from the native histogram (5 s window).", "s", 8, q("0.99")))
	d.add(graph("Latency p99.9", "99.9th percentile from the native histogram (5 s window).", "s", 8, q("0.999")))

	d.row("Errors and concurrency")
	d.add(stacked("Responses by status class", "Responses per second by class (2xx .. 5xx).", "reqps", 8,
		query(`sum by (proxy, class) (`+recClass+sel+`)`, "{{proxy}} {{class}}")))
	d.add(stacked("Transport errors by reason", "Requests that got no HTTP status, per second, by reason.", "reqps", 8,
		query(`sum by (proxy, reason) (`+recReason+sel+`)`, "{{proxy}} {{reason}}")))
	d.add(graph("In flight", "Requests sent and not yet completed.", "short", 8,
		query(`sum by (proxy, origin) (`+metricdefs.RequestsInFlight.Name+sel+`)`, "{{proxy}} → {{origin}}")))
	d.add(graph("Mean latency", "Mean from the native histogram (5 s window).", "s", 12,
		query(recMean+sel, legend)))
	d.add(graph("Wrong origin", "Responses whose X-Origin was not the expected origin, per second: must stay 0.", "reqps", 12,
		query(`sum by (proxy, origin) (rate(`+metricdefs.WrongOrigin.Name+sel+`[$__rate_interval]))`, "{{proxy}} → {{origin}}")))

	d.row("Cells")
	d.add(cellsTable())
	return d.b
}

// cellsTable lists the cells of the selected runs, one row per cell.
func cellsTable() *table.PanelBuilder {
	sel := `{run=~"$run", proxy=~"$proxy", origin=~"$origin", scenario=~"$scenario"}`
	inst := func(expr string) *prometheus.DataqueryBuilder {
		return prometheus.NewDataqueryBuilder().
			Datasource(ds()).
			Expr(expr).
			Format(prometheus.PromQueryFormatTable).
			EditorMode(prometheus.QueryEditorModeCode).
			Instant()
	}
	return table.NewPanelBuilder().
		Title("Cells of the selected runs").
		Description("Window start/end (UTC), concurrency, offered rate (0 = closed loop) and failed flag of each cell, as the loadgen published them.").
		Datasource(ds()).
		Span(24).
		Height(10).
		Targets(targets([]*prometheus.DataqueryBuilder{
			inst(cellStart + sel + " * 1000"),
			inst(cellEnd + sel + " * 1000"),
			inst(metricdefs.CellConcurrency.Name + sel),
			inst(metricdefs.CellTargetRate.Name + sel),
			inst(metricdefs.CellFailed.Name + sel),
		})).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true, "job": true, "instance": true, "__name__": true},
			"renameByName": map[string]any{
				"Value #A": "start", "Value #B": "end", "Value #C": "concurrency",
				"Value #D": "offered rps", "Value #E": "failed",
			},
		}}).
		OverrideByName("start", []dashboard.DynamicConfigValue{{Id: "unit", Value: "dateTimeAsIso"}}).
		OverrideByName("end", []dashboard.DynamicConfigValue{{Id: "unit", Value: "dateTimeAsIso"}}).
		NoValue("-").
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}))
}
