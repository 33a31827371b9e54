// Package dashgen owns the proxybench Grafana dashboards as Go code: Run
// overview, Resources, Go GC and Validity, built with the grafana-foundation-sdk
// types. `go run ./grafana/gen` writes them to grafana/dashboards/*.json, the
// files Grafana provisions; grafana/dashcheck proves the two agree.
//
// Traffic panels read the recording rules of prometheus/rules (the series the
// reporter reads too), so a dashboard and a report never compute a number two
// ways; every other series is named by a row of internal/metricdefs.
package dashgen

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"proxybench/internal/metricdefs"
)

// DatasourceUID is the uid of the provisioned Prometheus datasource
// (grafana/provisioning/datasources/prometheus.yml); every panel names it.
const DatasourceUID = "proxybench-prom"

// Dashboard is one generated dashboard and the file it is written to.
type Dashboard struct {
	File      string // base name under grafana/dashboards/
	Dashboard dashboard.Dashboard
}

// All builds every dashboard, in a stable order.
func All() ([]Dashboard, error) {
	builders := []struct {
		file  string
		build func() *dashboard.DashboardBuilder
	}{
		{"overview.json", overview},
		{"resources.json", resources},
		{"go-gc.json", goGC},
		{"validity.json", validity},
	}
	out := make([]Dashboard, 0, len(builders))
	for _, b := range builders {
		d, err := b.build().Build()
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", b.file, err)
		}
		out = append(out, Dashboard{File: b.file, Dashboard: d})
	}
	return out, nil
}

// Marshal is the canonical encoding of a dashboard file: indented JSON with a
// final newline, so regenerating is byte-for-byte reproducible.
func Marshal(d dashboard.Dashboard) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode dashboard %q: %w", deref(d.Uid), err)
	}
	return append(b, '\n'), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ds() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr(DatasourceUID)}
}

// board numbers panels and rows as they are added: ids must be unique per
// dashboard and stable across regenerations.
type board struct {
	b      *dashboard.DashboardBuilder
	nextID uint32
}

func newBoard(uid, title, desc string, tags ...string) *board {
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(desc).
		Tags(append([]string{"proxybench"}, tags...)).
		Timezone(common.TimeZoneBrowser).
		Time("now-15m", "now").
		Refresh("5s").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Readonly()
	return &board{b: b}
}

func (d *board) row(title string) {
	d.nextID++
	d.b.WithRow(dashboard.NewRowBuilder(title).Id(d.nextID))
}

func (d *board) add(p cog.Builder[dashboard.Panel]) {
	d.nextID++
	d.b.WithPanel(withID{p, d.nextID})
}

// withID sets the panel id at build time, whatever the panel type.
type withID struct {
	cog.Builder[dashboard.Panel]
	id uint32
}

func (w withID) Build() (dashboard.Panel, error) {
	p, err := w.Builder.Build()
	if err != nil {
		return p, err
	}
	p.Id = cog.ToPtr(w.id)
	return p, nil
}

// query is one PromQL target; refIDs are assigned by the panel helpers.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(ds()).
		Expr(expr).
		LegendFormat(legend).
		EditorMode(prometheus.QueryEditorModeCode).
		Range()
}

func targets(qs []*prometheus.DataqueryBuilder) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], len(qs))
	for i, q := range qs {
		out[i] = q.RefId(string(rune('A' + i)))
	}
	return out
}

// graph is a time series panel of the given width (of 24) and unit.
func graph(title, desc, unit string, width uint32, qs ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(desc).
		Datasource(ds()).
		Unit(unit).
		Min(0).
		Span(width).
		Height(8).
		LineWidth(1).
		FillOpacity(0).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{"mean", "max", "lastNotNull"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending)).
		Targets(targets(qs))
}

// stacked is graph with series stacked, for parts of a whole.
func stacked(title, desc, unit string, width uint32, qs ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return graph(title, desc, unit, width, qs...).
		FillOpacity(40).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// labelVar is a multi-value query variable over one label of one metric,
// "All" by default.
func labelVar(name, label, metric, help string) *dashboard.QueryVariableBuilder {
	q := fmt.Sprintf("label_values(%s, %s)", metric, label)
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(help).
		Datasource(ds()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(dashboard.VariableOption{
			Selected: cog.ToPtr(true),
			Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
			Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
		})
}

// trafficSel is the label filter every traffic query carries.
const trafficSel = `proxy=~"$proxy", origin=~"$origin", scenario=~"$scenario"`

var (
	cellStart = metricdefs.CellWindowStart.Name
	cellEnd   = metricdefs.CellWindowEnd.Name
)

// runVar selects runs by id. Traffic series carry no run label (runs are
// told apart by time), so it narrows the cell annotations and cells table.
func runVar() *dashboard.QueryVariableBuilder {
	return labelVar("run", "run", cellStart, "Run id: selects the cell windows shown as annotations and in the cells table.")
}

// cellAnnotations mark where each measured window of the cells matching sel
// starts and ends. The series value is the timestamp (useValueForTime), so
// the mark is exact whatever step Grafana samples the series at.
func cellAnnotations(b *dashboard.DashboardBuilder, sel string) {
	for _, m := range []struct{ name, metric, color string }{
		{"Cell start", cellStart, "green"},
		{"Cell end", cellEnd, "red"},
	} {
		b.Annotation(dashboard.NewAnnotationQueryBuilder().
			Name(m.name).
			Datasource(ds()).
			Enable(true).
			Hide(false).
			IconColor(m.color).
			// The top-level expr (which Grafana moves into target on load)
			// rather than target: the SDK's strict decoder drops an
			// annotation target, so the round-trip check could not vouch
			// for it.
			Expr(m.metric + sel + " * 1000").
			Step("1s").
			UseValueForTime(true).
			TitleFormat("{{cell}}").
			TextFormat("run {{run}}").
			TagKeys("proxy,origin,scenario,tier,repeat"))
	}
}
