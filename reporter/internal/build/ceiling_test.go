package build

import (
	"slices"
	"strings"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// A cell past its ceiling is named (the report notes it) and the ceiling
// is kept for every cell: dropping it would let instrument_ceiling come
// and go between runs on its own. Its flag gives both numbers.
func TestExceededCeilingIsKept(t *testing.T) {
	closed := &manifest.Ceiling{RPS: 8000, Model: manifest.CeilingClosed}
	open := &manifest.Ceiling{RPS: 40000, Model: manifest.CeilingOpen}
	man := &manifest.Manifest{Ceiling: closed, OpenCeiling: open}
	cells := []report.Cell{
		{Key: cellid.New("nginx", "fast", "simple", "quick", 1), GoodputRPS: 11100, TargetRateRPS: 0},
		{Key: cellid.New("nginx", "go", "simple", "quick", 1), GoodputRPS: 7000, TargetRateRPS: 0},
		{Key: cellid.New("haproxy", "fast", "simple", "quick", 1), GoodputRPS: 900, TargetRateRPS: 1000},
	}
	if got := exceededCeilings(man, cells); !slices.Equal(got, []string{cells[0].ID}) {
		t.Errorf("exceeded = %v: want the cell at 11100 > 8000 only", got)
	}
	if why, near := closed.Near("closed-loop goodput", 11100, 0.8); !near || !contains(why, "11100", "8000", "above") {
		t.Errorf("the cell past its ceiling: %q %v", why, near)
	}
	if _, near := closed.Near("closed-loop goodput", 6000, 0.8); near {
		t.Error("a cell at 75 % of the ceiling flagged")
	}
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
