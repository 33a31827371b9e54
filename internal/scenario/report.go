package scenario

import (
	"fmt"
	"math"
	"time"

	"proxybench/internal/manifest"
)

// Table is what a scenario adds to the report's scenario section: a table
// with one row per cell of the scenario that has something to show. The
// renderer shows each table once, in the Rank of its first scenario, and
// leaves out a table without rows.
type Table struct {
	Caption string
	Header  []string
	Right   []bool // right-aligned columns
	Notes   []string
	// Row is the cell's row; false when the cell has nothing to show.
	Row func(c ReportCell, f Format) ([]Field, bool)
	// Rows, set in place of Row, are the cell's rows when it has several
	// (one per fault); none when it has nothing to show.
	Rows func(c ReportCell, f Format) [][]Field
}

// CellRows are c's rows of t: Rows', or Row's one.
func (t *Table) CellRows(c ReportCell, f Format) [][]Field {
	if t.Rows != nil {
		return t.Rows(c, f)
	}
	if fields, ok := t.Row(c, f); ok {
		return [][]Field{fields}
	}
	return nil
}

// ReportCell is what a report row reads of a measured cell. Unknown
// numbers are NaN.
type ReportCell struct {
	Name      string    // how the report names the cell
	Start     time.Time // the window's start
	DurationS float64   // measured window
	RPS       float64   // requests per second
	S2xx      int64     // 2xx responses
	P50, P99  float64   // exact latency percentiles, seconds
	Data      *manifest.ScenarioData
	// Protocol is what the cell spoke (h1, tls, h2, h3; "" = h1); TLS what
	// its handshakes negotiated and counted, nil for h1.
	Protocol string
	TLS      *manifest.TLS
	// HandshakeP50 and HandshakeP99 are the completed handshakes' latency
	// (Prometheus's histogram over the window), seconds.
	HandshakeP50, HandshakeP99 float64
}

// Field is one cell of a report row; Class is "" or, for a verdict, pass
// or fail.
type Field struct {
	Text  string
	Class string
}

// Format is the report's number formatting (the renderer's), so that
// scenario rows read like the rest of the report. Unknown numbers (NaN)
// render as a dash.
type Format interface {
	Int(n int64) string // 12,345
	Num(v float64, digits int) string
	Pct(ratio float64) string   // 0.1 -> 10.0 %
	Dur(seconds float64) string // 1.23 ms
	MB(bytes float64) string    // megabytes
}

func text(s string) Field { return Field{Text: s} }

// verdict is a yes (pass) or no (fail) field.
func verdict(ok bool) Field {
	if ok {
		return Field{Text: "yes", Class: "pass"}
	}
	return Field{Text: "no", Class: "fail"}
}

// humanBytes is n in B, KiB or MiB, whichever divides it.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

var nan = math.NaN()
