package build

import (
	"log/slog"
	"testing"

	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// A ceiling one of the run's own cells went past was not the instrument's
// limit (measured while something else held the CPUs): no cell is judged
// against it, while a ceiling no cell reached still is.
func TestExceededCeilingIsNotJudged(t *testing.T) {
	closed := &manifest.Ceiling{RPS: 8000, Model: manifest.CeilingClosed}
	open := &manifest.Ceiling{RPS: 40000, Model: manifest.CeilingOpen}
	man := &manifest.Manifest{Ceiling: closed, OpenCeiling: open}
	cells := []report.Cell{
		{GoodputRPS: 11100, TargetRateRPS: 0},
		{GoodputRPS: 7000, TargetRateRPS: 0},
		{GoodputRPS: 900, TargetRateRPS: 1000},
	}
	got := exceededCeilings(man, cells, slog.New(slog.DiscardHandler))
	if !got[closed] || got[open] || len(got) != 1 {
		t.Errorf("exceeded = %v: want the closed ceiling only (a cell reached 11100 > 8000)", got)
	}
	if got := exceededCeilings(man, cells[1:], slog.New(slog.DiscardHandler)); len(got) != 0 {
		t.Errorf("no cell above a ceiling: exceeded %v", got)
	}
}
