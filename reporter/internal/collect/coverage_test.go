package collect

import (
	"testing"
	"time"

	"proxybench/internal/cellid"
)

// scrapesEvery is a log of scrapes every step from from (inclusive) to to
// (exclusive), except those in the holes [h0, h1).
func scrapesEvery(from, to time.Time, step time.Duration, holes ...[2]time.Time) ScrapeLog {
	var ts []time.Time
next:
	for t := from; t.Before(to); t = t.Add(step) {
		for _, h := range holes {
			if !t.Before(h[0]) && t.Before(h[1]) {
				continue next
			}
		}
		ts = append(ts, t)
	}
	return newScrapeLog(ts)
}

func TestScrapeLogInterval(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 250e6)
	if l := scrapesEvery(t0, t0.Add(time.Minute), 2*time.Second); l.Interval != 2*time.Second {
		t.Errorf("interval %v, want 2s", l.Interval)
	}
	// A long hole does not move the median.
	if l := scrapesEvery(t0, t0.Add(time.Minute), time.Second, [2]time.Time{t0.Add(10 * time.Second), t0.Add(40 * time.Second)}); l.Interval != time.Second {
		t.Errorf("interval with a hole %v, want 1s", l.Interval)
	}
	// Two targets' samples interleaved (0.3 s apart): floored at MinInterval.
	a := scrapesEvery(t0, t0.Add(time.Minute), time.Second).Times
	b := scrapesEvery(t0.Add(300*time.Millisecond), t0.Add(time.Minute), time.Second).Times
	if l := newScrapeLog(append(append([]time.Time(nil), a...), b...)); l.Interval != MinInterval || len(l.Times) != len(a)+len(b) {
		t.Errorf("interleaved: interval %v, %d times; want %v, %d", l.Interval, len(l.Times), MinInterval, len(a)+len(b))
	}
	// Duplicates (two series of one scrape) count once; one sample: the floor.
	if l := newScrapeLog([]time.Time{t0, t0}); len(l.Times) != 1 || l.Interval != MinInterval {
		t.Errorf("one scrape: %+v", l)
	}
}

// TestCoverage checks a 5-s window (start at +0.5 s, scrapes at +0.25 s,
// the synthetic phases) against holes of every phase: before, across and
// after each edge of its counting span.
func TestCoverage(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0).UTC()
	start := t0.Add(60*time.Second + 500*time.Millisecond)
	w := Window{Key: cellid.Key{ID: "c", Proxy: "nginx"}, Start: start, End: start.Add(5 * time.Second), Ended: true}
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	hole := func(a, b float64) [2]time.Time { return [2]time.Time{at(a), at(b)} }
	for _, tc := range []struct {
		name          string
		loadgen, exp  [][2]time.Time
		lgOK, exOK    bool
		lgGap, exGap  bool
		drainS        float64 // drain end after start, 0 = none
		scrapes, want int     // loadgen scrapes in the span, and expected
	}{
		{name: "no hole", lgOK: true, exOK: true, scrapes: 7, want: 8},
		// The span (start-1 s, end+1.5 s] holds 7 scrapes (7.5 expected).
		// Before its baseline at start-1 s are scrapes 0.25 and 1.25 s
		// earlier; losing the first leaves the second, inside the quiet 2 s.
		{name: "one scrape before the baseline", loadgen: [][2]time.Time{hole(-1.5, -1)}, lgOK: true, exOK: true, scrapes: 7, want: 8},
		// Losing both: the last before the baseline is 2.25 s older.
		{name: "quiet time lost", loadgen: [][2]time.Time{hole(-2.5, -1)}, lgGap: true, exOK: true, scrapes: 7, want: 8},
		// Across the start: 4 s without a scrape (> 3 s).
		{name: "across the start", loadgen: [][2]time.Time{hole(-1.1, 2)}, lgGap: true, exOK: true, scrapes: 4, want: 8},
		// Two scrapes lost inside: 3 s, allowed.
		{name: "two inside", loadgen: [][2]time.Time{hole(1, 3)}, lgOK: true, exOK: true, scrapes: 5, want: 8},
		{name: "three inside", loadgen: [][2]time.Time{hole(1, 4)}, lgGap: true, exOK: true, scrapes: 4, want: 8},
		// The one scrape after the traffic (end + 0.75 s) lost.
		{name: "after the traffic", loadgen: [][2]time.Time{hole(5.5, 6.5)}, lgGap: true, exOK: true, scrapes: 6, want: 8},
		// The next one (end + 1.75 s) is past the span: no matter.
		{name: "after the span", loadgen: [][2]time.Time{hole(6.5, 7.5)}, lgOK: true, exOK: true, scrapes: 7, want: 8},
		// A drain to end + 1 s moves the span: the scrape at end + 0.75 s
		// is no longer after the traffic, end + 1.75 s is.
		{name: "drain: after it", drainS: 6, lgOK: true, exOK: true, scrapes: 8, want: 9},
		{name: "drain: after it lost", drainS: 6, loadgen: [][2]time.Time{hole(6.5, 7.5)}, lgGap: true, exOK: true, scrapes: 7, want: 9},
		// The exporter: up to 5 s without a scrape.
		{name: "exporter 4 s", exp: [][2]time.Time{hole(0, 3.5)}, lgOK: true, exOK: true, scrapes: 7, want: 8},
		{name: "exporter 6 s", exp: [][2]time.Time{hole(-1, 4)}, lgOK: true, exGap: true, scrapes: 7, want: 8},
		// Not one exporter scrape inside the window: not a gap, just absent.
		{name: "exporter absent", exp: [][2]time.Time{hole(-10, 30)}, lgOK: true, scrapes: 7, want: 8},
		// The loadgen never scraped up to this window: not a gap either.
		{name: "loadgen never before", loadgen: [][2]time.Time{hole(-60, 30)}, exOK: true, scrapes: 0, want: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := w
			if tc.drainS > 0 {
				w.DrainEnd = at(tc.drainS)
			}
			s := &Scrapes{Known: true, Baseline: start.Add(-30 * time.Second),
				Loadgen:  scrapesEvery(t0.Add(250*time.Millisecond), t0.Add(2*time.Minute), time.Second, tc.loadgen...),
				Exporter: map[string]ScrapeLog{"nginx": scrapesEvery(t0.Add(250*time.Millisecond), t0.Add(2*time.Minute), time.Second, tc.exp...)}}
			c := s.Coverage(w)
			if c.LoadgenOK() != tc.lgOK || c.LoadgenGap != tc.lgGap || c.ExporterOK() != tc.exOK || c.ExporterGap != tc.exGap {
				t.Errorf("loadgen ok %v gap %v, exporter ok %v gap %v; want %v %v, %v %v\nloadgen %+v\nexporter %+v",
					c.LoadgenOK(), c.LoadgenGap, c.ExporterOK(), c.ExporterGap, tc.lgOK, tc.lgGap, tc.exOK, tc.exGap, *c.Loadgen, *c.Exporter)
			}
			if c.Loadgen.Scrapes != tc.scrapes || c.Loadgen.Expected != tc.want {
				t.Errorf("loadgen scrapes %d of %d expected, want %d of %d", c.Loadgen.Scrapes, c.Loadgen.Expected, tc.scrapes, tc.want)
			}
		})
	}
	// A window that never ended is not checked, nor is a run without any
	// sample of the loadgen's evidence series (an older loadgen).
	s := &Scrapes{Known: true, Loadgen: scrapesEvery(t0, t0.Add(time.Minute), time.Second)}
	if c := s.Coverage(Window{Start: start, End: start}); c.Loadgen != nil || c.Exporter != nil {
		t.Errorf("unended window checked: %+v", c)
	}
	if c := (&Scrapes{Known: true}).Coverage(w); c.Loadgen != nil || !c.LoadgenOK() || !c.ExporterOK() {
		t.Errorf("no evidence at all: %+v, want unchecked", c)
	}
}

// TestWorkerCoverage: each loadgen worker of a cell several ran is checked
// as the loadgen is, by its index: one with a hole in its scrapes, or never
// scraped while the others are, fails the cell's loadgen numbers and is a
// gap; a cell of the loadgen alone, or a run whose workers Prometheus
// never scraped, checks none.
func TestWorkerCoverage(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0).UTC()
	start := t0.Add(60*time.Second + 500*time.Millisecond)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	every := func(phase time.Duration, holes ...[2]time.Time) ScrapeLog {
		return scrapesEvery(t0.Add(phase), t0.Add(2*time.Minute), time.Second, holes...)
	}
	w := Window{Key: cellid.Key{ID: "c", Proxy: "nginx"}, Start: start, End: start.Add(5 * time.Second), Ended: true, Workers: 3}
	s := &Scrapes{Known: true, Baseline: start.Add(-30 * time.Second), Loadgen: every(250 * time.Millisecond),
		Workers: map[int]ScrapeLog{0: every(100 * time.Millisecond), 1: every(400*time.Millisecond, [2]time.Time{at(1), at(4)}), 2: every(700 * time.Millisecond)}}
	c := s.Coverage(w)
	if len(c.Workers) != 3 || c.LoadgenOK() || !c.Loadgen.OK() {
		t.Fatalf("%d workers checked, loadgen ok %v (its own scrapes %v)", len(c.Workers), c.LoadgenOK(), c.Loadgen.OK())
	}
	for i, wc := range c.Workers {
		if wc.Scrapes.Worker == nil || *wc.Scrapes.Worker != i || wc.Scrapes.Job != "loadgen_worker" || wc.Scrapes.OK() != (i != 1) || wc.Gap != (i == 1) {
			t.Errorf("worker %d: %+v, gap %v", i, *wc.Scrapes, wc.Gap)
		}
	}
	// Worker 2 never scraped, the others are: its share is missing.
	delete(s.Workers, 2)
	s.Workers[1] = every(400 * time.Millisecond)
	c = s.Coverage(w)
	if len(c.Workers) != 3 || c.LoadgenOK() || c.Workers[2].Scrapes.OK() || !c.Workers[2].Gap || c.Workers[2].Scrapes.Scrapes != 0 || !c.Workers[1].Scrapes.OK() {
		t.Errorf("worker 2 never scraped: %+v", c.Workers)
	}
	for _, tc := range []struct {
		name string
		s    *Scrapes
		w    Window
	}{
		{"the loadgen alone", s, func() Window { w := w; w.Workers = 0; return w }()},
		{"workers never scraped", &Scrapes{Known: true, Baseline: s.Baseline, Loadgen: s.Loadgen}, w},
	} {
		if c := tc.s.Coverage(tc.w); len(c.Workers) != 0 || !c.LoadgenOK() {
			t.Errorf("%s: workers checked %+v", tc.name, c.Workers)
		}
	}
}
