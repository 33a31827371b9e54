package manifest

import "time"

// The timing guarantee between the loadgen and the reporter (docs,
// design notes): a cell's traffic counters, counted over (Start -
// MarginBefore, max(End, DrainEnd) + MarginAfter], are exact. The
// loadgen keeps every label set quiet for a settle time longer than
// MarginBefore between cells, and stays up after its last cell until
// Prometheus has scraped it MarginAfter past the last drain.
const (
	MarginBefore = time.Second
	MarginAfter  = 1500 * time.Millisecond
)
