package render

// Bar is one value of a grouped bar chart with its 95 % interval (Lo, Hi;
// NaN when there is none).
type Bar struct{ V, Lo, Hi float64 }

// BarPanel is one panel of a grouped bar chart: Series bars (one colour
// each) within each of Groups.
type BarPanel struct {
	Title, YLabel string
	Groups        []string
	Series        []string
	Values        map[[2]string]Bar // (group, series)
	Log           bool
	Format        func(float64) string // tick labels
	Note          string               // under the panel
}

// BarChart renders panels as one SVG figure, in the reports' style and
// palette; output depends only on its input.
func BarChart(title string, panels []BarPanel) string {
	ps := make([]panel, 0, len(panels))
	for _, p := range panels {
		q := panel{title: p.Title, ylabel: p.YLabel, groups: p.Groups, series: p.Series, log: p.Log, fmt: p.Format,
			note: p.Note, vals: map[[2]string]bar{}}
		for i := range p.Series {
			q.colors = append(q.colors, palette[i%len(palette)])
		}
		for k, v := range p.Values {
			q.vals[k] = bar{v: v.V, lo: v.Lo, hi: v.Hi}
		}
		ps = append(ps, q)
	}
	return barFigure(title, ps)
}

// Sig formats x with n significant digits, as every report table does.
func Sig(x float64, n int) string { return sig(x, n) }

// Passed renders a pass/fail badge cell.
func Passed(ok bool) Cell {
	if ok {
		return Cell{Text: "pass", Class: "pass"}
	}
	return Cell{Text: "fail", Class: "fail"}
}
