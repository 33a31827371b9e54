package render

import (
	"bytes"
	"strings"
	"testing"

	"proxybench/internal/stack"
	"proxybench/reporter/internal/report"
)

// The direct control's cells get a section of their own and never a place
// in the winner table or the matrices, even when they are the fastest.
func TestProxyTaxSection(t *testing.T) {
	t.Parallel()
	r := loadReport(t)
	var direct []report.Cell
	for _, c := range r.Cells {
		if c.Proxy == "nginx" && c.Arm == "" {
			d := c
			d.Proxy = stack.Direct
			d.ID = strings.Replace(c.ID, "nginx.", "direct.", 1)
			d.Latency.P50, d.Latency.P99 = c.Latency.P50/10, c.Latency.P99/10 // far faster than any proxy
			if d.Latency.Exact != nil {
				ex := *c.Latency.Exact
				ex.P50, ex.P99 = ex.P50/10, ex.P99/10
				d.Latency.Exact = &ex
			}
			direct = append(direct, d)
		}
	}
	if len(direct) == 0 {
		t.Fatal("the synthetic report has no nginx cells")
	}
	r.Cells = append(r.Cells, direct...)
	r.Groups = report.BuildGroups(r.Cells)
	r.ProxyTax = report.BuildProxyTax(r.Cells, r.Thresholds)
	if len(r.ProxyTax) == 0 {
		t.Fatal("no proxy tax rows")
	}
	d := Document(r)
	var md bytes.Buffer
	if err := Markdown(&md, d); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	i := strings.Index(out, "9. What the proxy adds")
	if i < 0 {
		t.Fatal("no section 9")
	}
	if !strings.Contains(out[i:], "| nginx |") || !strings.Contains(out[i:], "added p50 µs [95 % CI]") {
		t.Errorf("section 9 lacks nginx's row:\n%s", out[i:])
	}
	for _, sec := range d.Sections {
		if !strings.HasPrefix(sec.Title, "1.") && !strings.HasPrefix(sec.Title, "2.") {
			continue
		}
		for _, tb := range sec.Tables {
			if strings.Contains(tb.Caption, "Who won") || strings.Contains(tb.Caption, "scenario") {
				for _, h := range tb.Header {
					if h == stack.Direct {
						t.Errorf("%s: direct in the header", tb.Caption)
					}
				}
				for _, row := range tb.Rows {
					for _, c := range row {
						if c.Text == stack.Direct {
							t.Errorf("%s: direct in a row %v", tb.Caption, row)
						}
					}
				}
			}
		}
	}
	if _, ok := proxyTaxSection(&report.Report{}); ok {
		t.Error("a run without the direct control has the section")
	}
}
