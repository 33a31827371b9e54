package build

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
)

// Richness counts what a report holds that a rebuild can lose: a rebuild
// with Prometheus unreachable, or after the run's windows left its
// retention, finds fewer cells or only the manifest's numbers.
type Richness struct {
	Cells int // cells in the report
	// ServerSide counts the cells Prometheus answered for: its series for
	// the window (server_side), or the evidence of a gap in its scrapes
	// there (prometheus_gap). A gap is not a loss: a report built before
	// gaps were detected took numbers from the scrapes Prometheus missed,
	// and its rebuild must replace it.
	ServerSide int
	Exact      int // cells with the loadgen's exact latency (latency.exact)
}

// RichnessOf counts r.
func RichnessOf(r *report.Report) Richness {
	n := Richness{Cells: len(r.Cells)}
	for i := range r.Cells {
		if r.Cells[i].ServerSide || r.Cells[i].PrometheusGap != nil {
			n.ServerSide++
		}
		if r.Cells[i].Latency.Exact != nil {
			n.Exact++
		}
	}
	return n
}

// PoorerThan reports whether n has fewer cells, fewer server-side cells or
// fewer cells with exact latency than o: replacing o by n would lose
// something.
func (n Richness) PoorerThan(o Richness) bool {
	return n.Cells < o.Cells || n.ServerSide < o.ServerSide || n.Exact < o.Exact
}

func (n Richness) String() string {
	return fmt.Sprintf("%d cells, %d server-side, %d with exact latency", n.Cells, n.ServerSide, n.Exact)
}

// Saved says where Save put a report.
type Saved struct {
	Replaced bool     // r went to dir's report.json, .md, .html and figures
	Report   string   // dir/report.json
	Partial  []string // report.partial.json and .md, when the existing report was kept
	Old, New Richness // Old: the existing report's (zero when there was none)
}

// Save writes r into dir with output.Write, unless dir/report.json already
// holds a richer report of the same run (r is PoorerThan it): then that
// report stays as it is and r goes to report.partial.json and
// report.partial.md beside it. force replaces regardless. A full write
// removes partial files an earlier poorer rebuild left. An existing
// report.json that cannot be read (another schema, corrupt) is replaced.
func Save(dir string, r *report.Report, force bool) (Saved, error) {
	s := Saved{Report: filepath.Join(dir, "report.json"), New: RichnessOf(r)}
	if !force {
		old, err := output.Read(s.Report)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			// Unreadable by this reporter: nothing in it to keep.
		case old.Run == r.Run:
			s.Old = RichnessOf(old)
			if s.New.PoorerThan(s.Old) {
				p, err := output.WritePartial(dir, r)
				if err != nil {
					return s, err
				}
				s.Partial = p
				return s, nil
			}
		}
	}
	if err := output.Write(dir, r); err != nil {
		return s, err
	}
	s.Replaced = true
	return s, output.RemovePartial(dir)
}
