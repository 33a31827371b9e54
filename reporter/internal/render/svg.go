package render

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Okabe-Ito, a palette readable with the common forms of colour blindness.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000"}

// f formats SVG coordinates with a fixed precision, so output is byte-stable.
func f(x float64) string { return strconv.FormatFloat(math.Round(x*10)/10, 'f', 1, 64) }

type svg struct{ b strings.Builder }

func newSVG(w, h float64, title string) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12" role="img">`+"\n",
		f(w), f(h), f(w), f(h))
	fmt.Fprintf(&s.b, "<title>%s</title>\n", html.EscapeString(title))
	fmt.Fprintf(&s.b, `<rect width="%s" height="%s" fill="#ffffff"/>`+"\n", f(w), f(h))
	return s
}

func (s *svg) text(x, y float64, anchor, weight, fill string, size int, t string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="%s" font-weight="%s" fill="%s" font-size="%d">%s</text>`+"\n",
		f(x), f(y), anchor, weight, fill, size, html.EscapeString(t))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	d := ""
	if dash != "" {
		d = ` stroke-dasharray="` + dash + `"`
	}
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n", f(x1), f(y1), f(x2), f(y2), stroke, f(width), d)
}

func (s *svg) rect(x, y, w, h float64, fill string, opacity float64, stroke string) {
	st := ""
	if stroke != "" {
		st = ` stroke="` + stroke + `" stroke-width="1"`
	}
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="%s"%s/>`+"\n", f(x), f(y), f(w), f(h), fill, f(opacity), st)
}

func (s *svg) polyline(xs, ys []float64, stroke string) {
	var pts []string
	for i := range xs {
		pts = append(pts, f(xs[i])+","+f(ys[i]))
	}
	fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6" stroke-linejoin="round"/>`+"\n", strings.Join(pts, " "), stroke)
}

func (s *svg) String() string { return s.b.String() + "</svg>\n" }

// scale maps data values to pixels, linear or log10.
type scale struct {
	lo, hi  float64
	p0, p1  float64 // pixel positions of lo and hi
	log     bool
	unitFmt func(float64) string
}

func (sc scale) px(v float64) float64 {
	if sc.log {
		v = math.Log10(math.Max(v, sc.lo))
		return sc.p0 + (v-math.Log10(sc.lo))/(math.Log10(sc.hi)-math.Log10(sc.lo))*(sc.p1-sc.p0)
	}
	return sc.p0 + (v-sc.lo)/(sc.hi-sc.lo)*(sc.p1-sc.p0)
}

// ticks returns readable tick values: 1-2-5 steps, or 1-2-5 per decade on log.
func (sc scale) ticks() []float64 {
	var out []float64
	if sc.log {
		for e := math.Floor(math.Log10(sc.lo)); e <= math.Ceil(math.Log10(sc.hi)); e++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, e)
				if v >= sc.lo*0.999 && v <= sc.hi*1.001 {
					out = append(out, v)
				}
			}
		}
		return out
	}
	step := niceStep((sc.hi - sc.lo) / 5)
	for v := math.Ceil(sc.lo/step) * step; v <= sc.hi+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= raw {
			return m * e
		}
	}
	return 10 * e
}

// linearRange pads [0, max] up to a nice bound.
func linearRange(max float64) (float64, float64) {
	if max <= 0 || math.IsNaN(max) {
		return 0, 1
	}
	step := niceStep(max / 5)
	return 0, math.Ceil(max*1.05/step) * step
}

// logRange spans [min, max] in whole 1-2-5 steps.
func logRange(min, max float64) (float64, float64) {
	if min <= 0 || math.IsNaN(min) {
		min = max / 10
	}
	if max <= 0 || math.IsNaN(max) {
		return 1e-4, 1
	}
	lo := math.Pow(10, math.Floor(math.Log10(min)))
	hi := math.Pow(10, math.Ceil(math.Log10(max)))
	if hi/lo < 10 {
		hi = lo * 10
	}
	return lo, hi
}

// yAxis draws gridlines, tick labels and the axis title.
func (s *svg) yAxis(sc scale, x0, x1 float64, title string) {
	for _, v := range sc.ticks() {
		y := sc.px(v)
		s.line(x0, y, x1, y, "#e1e4e8", 1, "")
		s.text(x0-6, y+4, "end", "normal", "#57606a", 11, sc.unitFmt(v))
	}
	s.line(x0, sc.p0, x0, sc.p1, "#8c959f", 1, "")
	mid := (sc.p0 + sc.p1) / 2
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="middle" fill="#24292f" font-size="12" transform="rotate(-90 %s %s)">%s</text>`+"\n",
		f(x0-52), f(mid), f(x0-52), f(mid), html.EscapeString(title))
}

// legend draws colour keys in one row starting at x.
func (s *svg) legend(x, y float64, names, colors []string) {
	for i, n := range names {
		s.rect(x, y-9, 12, 12, colors[i], 1, "")
		s.text(x+17, y+1, "start", "normal", "#24292f", 12, n)
		x += 30 + float64(7*len([]rune(n)))
	}
}
