// Package render owns the human-facing outputs of a report: one document
// model (sections of prose and tables) rendered as Markdown and as a
// self-contained HTML page, and the deterministic SVG figures both embed.
package render

import (
	"fmt"
	"math"
	"strings"

	"proxybench/reporter/internal/report"
)

// Doc is the report as prose, tables and figures, before formatting.
type Doc struct {
	Title    string
	Lead     []string // paragraphs under the title
	Sections []Section
}

// Section is one numbered part of the report.
type Section struct {
	Title   string
	Text    []string
	Figures []string // figure file names under figures/
	Tables  []Table
	Lead    int // tables shown before the figures
}

// Table is a titled grid; Right marks numeric columns.
type Table struct {
	Caption string
	Header  []string
	Right   []bool
	Rows    [][]Cell
	Notes   []string
}

// Cell is one table cell. Class is "valid", "suspect", "invalid", "pass",
// "fail" or "", and turns into a badge in HTML.
type Cell struct {
	Text  string
	Class string
	Best  bool // the winner of its column or row
}

func txt(s string) Cell { return Cell{Text: s} }

// Formatting of numbers, shared by Markdown, HTML and the figures.

func fmtDur(v report.Num) string {
	if !v.Known() {
		return "–"
	}
	s := float64(v)
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case s < 1:
		return trimZeros(fmt.Sprintf("%.3g", s*1e3)) + " ms"
	default:
		return trimZeros(fmt.Sprintf("%.3g", s)) + " s"
	}
}

func fmtMs(v report.Num) string {
	if !v.Known() {
		return "–"
	}
	return sig(float64(v)*1e3, 3)
}

func sig(x float64, n int) string {
	if x == 0 {
		return "0"
	}
	digits := n - 1 - int(math.Floor(math.Log10(math.Abs(x))))
	if digits < 0 {
		digits = 0
	}
	return fmt.Sprintf("%.*f", digits, x)
}

func fmtNum(v report.Num, digits int) string {
	if !v.Known() {
		return "–"
	}
	return fmt.Sprintf("%.*f", digits, float64(v))
}

func fmtInt(v int64) string {
	s := fmt.Sprint(v)
	if v < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func fmtPct(v report.Num) string {
	if !v.Known() {
		return "–"
	}
	p := float64(v) * 100
	if p == 0 {
		return "0 %"
	}
	if p < 0.01 {
		return "<0.01 %"
	}
	return trimZeros(fmt.Sprintf("%.2f", p)) + " %"
}

func fmtMB(v report.Num) string {
	if !v.Known() {
		return "–"
	}
	return trimZeros(fmt.Sprintf("%.1f", float64(v)/1e6)) + " MB"
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func verdictCell(v string) Cell {
	switch v {
	case report.Valid:
		return Cell{Text: "✓ valid", Class: "valid"}
	case report.Suspect:
		return Cell{Text: "⚠ suspect", Class: "suspect"}
	default:
		return Cell{Text: "✗ invalid", Class: "invalid"}
	}
}
