package render

import (
	"fmt"
	"math"

	"proxybench/reporter/internal/report"
)

// FigFaults is the faults cells' latency over time with the lab's faults
// marked.
const FigFaults = "faults.svg"

// faultColors shade each kind of fault.
var faultColors = map[string]string{"kill": "#D55E00", "pause": "#0072B2", "503": "#CC79A7"}

// faultsFigure is one panel per faults cell: its bins' p99 over the window
// (log scale), the bins with failures marked below the axis with their
// count, and every fault of the lab's log as a shaded span from the moment
// it was asked to the moment the replica was back, labelled with its kind;
// the steady p99 and the recovery threshold dashed. "" when the run has no
// faults cell with a timeline.
func faultsFigure(r *report.Report) string {
	var cells []*report.Cell
	for _, c := range sortedCells(r) {
		if d := c.ScenarioData; d != nil && d.Faults != nil && len(d.Faults.Timeline.P99S) > 0 {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return ""
	}
	const ph = 240.0
	title := "Faults: p99 over the window, the lab's faults marked"
	s := newSVG(figW, 40+float64(len(cells))*(ph+20), title)
	s.text(16, 24, "start", "bold", "#1b1f24", 15, title)
	for i, c := range cells {
		faultPanel(s, 40+float64(i)*(ph+20), ph, c)
	}
	return s.String()
}

func faultPanel(s *svg, y0, ph float64, c *report.Cell) {
	fs := c.ScenarioData.Faults
	tl := fs.Timeline
	top, bottom := y0+40, y0+ph-46
	x0, x1 := marginL, figW-marginR
	s.text(x0, y0+14, "start", "normal", "#24292f", 12, fmt.Sprintf("%s: p99 per %g ms bin (log scale); failures per bin below; shaded = fault, from asked to replica back",
		cellName(c), math.Round(fs.BinS*1e3)))
	lo, hi := math.Inf(1), 0.0
	for _, v := range append(append([]float64{}, tl.P99S...), fs.SteadyP99S, fs.RecoveryThresholdS) {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi == 0 {
		s.text((x0+x1)/2, (top+bottom)/2, "middle", "normal", "#57606a", 12, "no answers")
		return
	}
	ys := scale{p0: bottom, p1: top, log: true, unitFmt: func(v float64) string { return trimZeros(sig(v*1e3, 2)) + " ms" }}
	ys.lo, ys.hi = logRange(lo, hi)
	span := float64(len(tl.P99S)) * fs.BinS
	xs := scale{p0: x0, p1: x1, lo: 0, hi: span}
	_, xs.hi = linearRange(span)
	sec := func(t float64) float64 { return xs.px(t) }
	// The faults first, under the data.
	for _, ev := range fs.Log {
		from := ev.Start.Sub(c.Start).Seconds()
		to := ev.Restored.Sub(c.Start).Seconds()
		if ev.Restored.IsZero() {
			to = span
		}
		col := faultColors[ev.Kind]
		if col == "" {
			col = "#8c959f"
		}
		s.rect(sec(from), top, math.Max(1, sec(to)-sec(from)), bottom-top, col, 0.15, "")
		s.line(sec(from), top, sec(from), bottom, col, 1.2, "")
		s.line(sec(ev.End.Sub(c.Start).Seconds()), top, sec(ev.End.Sub(c.Start).Seconds()), bottom, col, 1, "3,3")
		s.text(sec(from)+3, top+12, "start", "bold", col, 11, ev.Kind)
	}
	s.yAxis(ys, x0, x1, "p99")
	for _, v := range xs.ticks() {
		s.line(xs.px(v), bottom, xs.px(v), bottom+4, "#8c959f", 1, "")
		s.text(xs.px(v), bottom+16, "middle", "normal", "#57606a", 11, trimZeros(sig(v, 3))+" s")
	}
	s.line(x0, bottom, x1, bottom, "#8c959f", 1, "")
	for _, v := range []float64{fs.SteadyP99S, fs.RecoveryThresholdS} {
		if v > 0 {
			s.line(x0, ys.px(v), x1, ys.px(v), "#57606a", 1, "6,4")
		}
	}
	var px, py []float64
	flush := func() {
		if len(px) > 0 {
			s.polyline(px, py, "#1b1f24")
		}
		px, py = nil, nil
	}
	maxFail := int64(0)
	for _, n := range tl.Failed {
		maxFail = max(maxFail, n)
	}
	for k, v := range tl.P99S {
		mid := (float64(k) + 0.5) * fs.BinS
		if v > 0 {
			px, py = append(px, sec(mid)), append(py, ys.px(v))
		} else {
			flush()
		}
		if k < len(tl.Failed) && tl.Failed[k] > 0 {
			h := 4 + 10*float64(tl.Failed[k])/float64(maxFail)
			s.rect(sec(mid)-1.5, bottom+20, 3, h, "#a40e26", 0.9, "")
		}
	}
	flush()
	note := "dashed: steady p99 and the recovery threshold; red ticks: failed requests per bin"
	if maxFail > 0 {
		note += fmt.Sprintf(" (tallest: %d)", maxFail)
	}
	s.text(x1, bottom+44, "end", "normal", "#57606a", 11, note)
}
