package collect

import (
	"context"
	"time"

	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
)

// Await's pace: how often it asks, and how long past a counting span's end
// it waits for a sample Prometheus may still be storing.
const (
	awaitPoll  = 50 * time.Millisecond
	awaitSlack = 500 * time.Millisecond
)

// AwaitFinalScrape returns once Prometheus holds, for every loadgen target
// (the loadgen, each of its workers) scraped just before the run's last
// traffic ended, a scrape that began after it. The loadgen leaves after its
// first scrape past its last drain, so a report built at once (make bench,
// a test) could otherwise ask before Prometheus has stored that sample and
// count the last window short. For a run whose last counting span ended
// more than awaitSlack ago it returns at once; it never waits past that
// (a scrape lost there is Coverage's to flag).
func AwaitFinalScrape(ctx context.Context, c *promapi.Client, windows []Window, now func() time.Time) error {
	var last time.Time
	for _, w := range windows {
		last = MaxTime(last, MaxTime(w.End, w.DrainEnd))
	}
	if last.IsZero() {
		return nil
	}
	// How long at most, by the run's clock, and never longer than a whole
	// span's margin by the wall clock (a clock that does not move, as in a
	// test, ends it too).
	wait := min(last.Add(MarginAfter+awaitSlack).Sub(now()), MarginAfter+awaitSlack)
	for begin := time.Now(); time.Since(begin) < wait; {
		ts, err := rawTimes(ctx, c, loadgenScrapeSeries, metricdefs.WorkerLabel, last.Add(-Quiet), now().Add(time.Second))
		if err != nil {
			return err
		}
		if scrapedAfter(ts, last) {
			return nil
		}
		t := time.NewTimer(awaitPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// scrapedAfter says whether every target with a sample at or before at has
// one after it too.
func scrapedAfter(byTarget map[string][]time.Time, at time.Time) bool {
	for _, ts := range byTarget {
		before, after := false, false
		for _, t := range ts {
			if t.After(at) {
				after = true
			} else {
				before = true
			}
		}
		if before && !after {
			return false
		}
	}
	return true
}
