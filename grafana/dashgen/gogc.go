package dashgen

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"proxybench/internal/metricdefs"
)

// goGC shows the Go runtime's garbage collector inside each Go proxy, from
// the gctrace lines the exporter parses (labels: service, container).
func goGC() *dashboard.DashboardBuilder {
	d := newBoard("proxybench-go-gc", "proxybench / Go GC",
		"Garbage collection in the Go proxies (Traefik, Caddy): stop-the-world pauses, cycles, heap and GC CPU, parsed from GODEBUG=gctrace=1.",
		"gc")
	d.b.WithVariable(labelVar("proxy", "service", metricdefs.GCCycles.Name, "Go proxy (compose service)."))
	d.b.WithVariable(runVar())
	cellAnnotations(d.b, `{run=~"$run", proxy=~"$proxy"}`)
	sel := `{service=~"$proxy"}`
	legend := "{{service}}"

	d.row("Pauses")
	pq := func(q, name string) *prometheus.DataqueryBuilder {
		return query(`histogram_quantile(`+q+`, sum by (service) (rate(`+metricdefs.GCPause.Name+sel+`[$__rate_interval])))`, legend+" "+name)
	}
	d.add(graph("Stop-the-world pause quantiles", "Sweep termination + mark termination wall clock per cycle, from the native histogram.", "s", 12,
		pq("0.5", "p50"), pq("0.99", "p99"), pq("1", "max")))
	d.add(pauseHeatmap(sel))
	d.add(graph("Pause time per second", "Seconds of stop-the-world pause per second of wall clock.", "s", 12,
		query(`sum by (service) (histogram_sum(rate(`+metricdefs.GCPause.Name+sel+`[$__rate_interval])))`, legend)))
	d.add(graph("GC cycles per second", "All cycles, and the forced ones (runtime.GC or the 2 min periodic GC) apart.", "short", 12,
		query(`sum by (service) (rate(`+metricdefs.GCCycles.Name+sel+`[$__rate_interval]))`, legend+" all"),
		query(`sum by (service) (rate(`+metricdefs.GCForcedCycles.Name+sel+`[$__rate_interval]))`, legend+" forced")))

	d.row("Heap and GC CPU")
	d.add(graph("Heap", "Live heap after the last cycle and the goal of the next one.", "bytes", 12,
		query(`max by (service) (`+metricdefs.GCHeapLive.Name+sel+`)`, legend+" live"),
		query(`max by (service) (`+metricdefs.GCHeapGoal.Name+sel+`)`, legend+" goal")))
	d.add(graph("GC CPU", "Cores spent in GC (all phases, from the cpu fields), and the runtime's cumulative GC CPU fraction.", "short", 12,
		query(`sum by (service) (rate(`+metricdefs.GCCPU.Name+sel+`[$__rate_interval]))`, legend+" cores"),
		query(`max by (service) (`+metricdefs.GCCPUFraction.Name+sel+`)`, legend+" fraction")))
	d.add(graph("gctrace parse errors", "Lines that looked like gctrace but did not parse, per second: must stay 0.", "short", 24,
		query(`sum by (service) (rate(`+metricdefs.GCTraceParseErrors.Name+sel+`[$__rate_interval]))`, legend)))
	return d.b
}

// pauseHeatmap draws the pause distribution from the classic buckets, which
// every Grafana heatmap understands (always_scrape_classic_histograms).
func pauseHeatmap(sel string) *heatmap.PanelBuilder {
	return heatmap.NewPanelBuilder().
		Title("Stop-the-world pause histogram").
		Description("Pauses per second by duration bucket (classic buckets of " + metricdefs.GCPause.Name + ").").
		Datasource(ds()).
		Span(12).
		Height(8).
		Calculate(false).
		CellGap(1).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit("s").AxisPlacement(common.AxisPlacementLeft)).
		Tooltip(heatmap.NewHeatmapTooltipBuilder().Mode(common.TooltipDisplayModeSingle).YHistogram(true)).
		Targets(targets([]*prometheus.DataqueryBuilder{
			query(`sum by (le) (rate(`+metricdefs.GCPause.Bucket()+sel+`[$__rate_interval]))`, "{{le}}").
				Format(prometheus.PromQueryFormatHeatmap),
		}))
}
