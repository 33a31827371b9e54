package render

import (
	"slices"
	"strings"

	"proxybench/internal/proxyconf"
	"proxybench/reporter/internal/report"
)

// parityTable is the parity settings as the running proxies reported them
// at the run's start, a row on which they differ marked; warnings are
// those rows as sentences for the section's text.
func parityTable(p *report.Parity) (t Table, warnings []string) {
	t = Table{Caption: "Parity, read from the running proxies at the run's start", Header: append([]string{"setting"}, p.Proxies...)}
	differs := map[string]bool{}
	for _, w := range p.Warnings {
		row, _, _ := strings.Cut(w, " differs: ")
		differs[row] = true
	}
	for _, row := range proxyconf.Rows {
		name := Cell{Text: row}
		if differs[row] {
			name = Cell{Text: row + " ⚠", Class: "suspect"}
		}
		cells := []Cell{name}
		for _, px := range p.Proxies {
			pc := p.Configs[px]
			v, ok := pc.Values[row]
			switch {
			case pc.Error != "":
				cells = append(cells, txt("not read"))
			case !ok:
				cells = append(cells, txt("–"))
			case v.NA:
				cells = append(cells, txt("n/a: "+v.From))
			default:
				c := txt(v.Value + " (" + v.From + ")")
				if differs[row] {
					c.Class = "suspect"
				}
				cells = append(cells, c)
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	for _, px := range p.Proxies {
		pc := p.Configs[px]
		if pc.Error != "" {
			t.Notes = append(t.Notes, px+": not read ("+pc.Error+").")
			continue
		}
		t.Notes = append(t.Notes, px+": from "+pc.Source+".")
	}
	t.Notes = append(t.Notes, "Each value is what the running proxy reported about itself, not the repository's configuration file; a proxy's defaults fill what it does not set. A row marked ⚠ differs between proxies (n/a values are not compared).")
	for _, w := range p.Warnings {
		warnings = append(warnings, "⚠ Parity: "+w+".")
	}
	return t, slices.Clip(warnings)
}
