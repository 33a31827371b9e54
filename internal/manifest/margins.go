package manifest

import "time"

// The timing guarantee between the loadgen and the reporter (docs,
// design notes): a cell's traffic counters, counted over (Start -
// MarginBefore, max(End, DrainEnd) + MarginAfter], are exact; a process's
// first window may begin right after Prometheus's first scrape of it, and
// its span then begins at that scrape (the reporter tells the loadgen's
// processes apart by their start time). The loadgen keeps every label set
// quiet for a settle time longer than MarginBefore between cells, and stays
// up after its last cell until Prometheus has scraped it past the last
// drain (that sample lies inside every span; the staleness marker of its
// exit may too, and the reporter's range selections skip it).
const (
	MarginBefore = time.Second
	MarginAfter  = 1500 * time.Millisecond
	// AfterFirstScrape is how long after Prometheus's first scrape of a
	// loadgen worker (package fleet) its first window may start at the
	// earliest: the counting baseline, 1 s before the window, then falls
	// after that scrape (and after the staleness markers it writes for the
	// series a previous process left under the same labels), with a fifth
	// of a second to spare.
	AfterFirstScrape = 1200 * time.Millisecond
)
