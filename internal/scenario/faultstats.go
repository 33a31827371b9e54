package scenario

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"proxybench/internal/manifest"
)

// How a faults cell's window is binned and judged (docs/faults.md).
const (
	// MinFaultBin is the shortest bin; a long window's bins are longer, so
	// that it has at most MaxFaultBins.
	MinFaultBin  = 100 * time.Millisecond
	MaxFaultBins = 1000
	// A recovered bin's p99 stays at or under RecoveryFactor × the steady
	// p99, or the steady p99 plus RecoveryFloor when that is more: with a
	// steady p99 under a millisecond, a 2× bound alone took one host stall
	// of 20-37 ms for a proxy not yet recovered.
	RecoveryFactor = 2
	RecoveryFloor  = 5 * time.Millisecond
	// RecoveryHold is how long the bins must stay recovered (or until the
	// fault's span ends) for recovery to count.
	RecoveryHold = 500 * time.Millisecond
)

// latBuckets is the number of a bin's latency buckets: 1 µs steps up to
// 16 µs, then 8 per power of two (within 12.5 %) up to 2^26 µs (67 s).
const latBuckets = 16 + 22*8

// FaultSeries is a faults cell's window in bins by completion time: per
// bin the answers, the failures (transport errors and statuses outside
// 2xx), the timeouts and 5xx among them, the first and last failure, and
// a log-bucketed histogram of the answers' latencies. Observe is safe for
// concurrent use and allocates nothing; Begin sets the window's start.
type FaultSeries struct {
	bin   time.Duration
	start atomic.Int64 // unix ns; 0 until Begin
	bins  []faultBin
}

type faultBin struct {
	requests, failed, timedOut, s5xx atomic.Int64
	firstFail, lastFail              atomic.Int64 // unix ns; 0 = none
	lat                              [latBuckets]atomic.Int64
}

// NewFaultSeries bins a window of length window: MinFaultBin, or longer so
// that there are at most MaxFaultBins.
func NewFaultSeries(window time.Duration) *FaultSeries {
	bin := max(MinFaultBin, (window/MaxFaultBins + time.Millisecond - 1).Truncate(time.Millisecond))
	n := max(1, int((window+bin-1)/bin))
	return &FaultSeries{bin: bin, bins: make([]faultBin, n)}
}

// Bins is the number of bins.
func (s *FaultSeries) Bins() int { return len(s.bins) }

// Begin sets the window's start (the first Begin counts).
func (s *FaultSeries) Begin(at time.Time) { s.start.CompareAndSwap(0, at.UnixNano()) }

// Start is the window's start; zero before Begin.
func (s *FaultSeries) Start() time.Time {
	if ns := s.start.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Bin is the bin a completion at done falls in, -1 outside the window.
func (s *FaultSeries) Bin(done time.Time) int {
	st := s.start.Load()
	if st == 0 || done.UnixNano() < st {
		return -1
	}
	if k := int((done.UnixNano() - st) / int64(s.bin)); k < len(s.bins) {
		return k
	}
	return -1
}

// Observe counts one completion at done in bin k: an answer with code
// (reason "") or a transport error (reason its class, e.g. timeout).
func (s *FaultSeries) Observe(k int, done time.Time, latency time.Duration, code int, reason string) {
	if k < 0 || k >= len(s.bins) {
		return
	}
	b := &s.bins[k]
	if reason == "" {
		b.requests.Add(1)
		b.lat[latBucket(latency)].Add(1)
	}
	if reason == "" && code >= 200 && code < 300 {
		return
	}
	b.failed.Add(1)
	switch {
	case reason == "timeout":
		b.timedOut.Add(1)
	case reason == "" && code >= 500:
		b.s5xx.Add(1)
	}
	ns := done.UnixNano()
	for f := b.firstFail.Load(); f == 0 || ns < f; f = b.firstFail.Load() {
		if b.firstFail.CompareAndSwap(f, ns) {
			break
		}
	}
	for l := b.lastFail.Load(); ns > l; l = b.lastFail.Load() {
		if b.lastFail.CompareAndSwap(l, ns) {
			break
		}
	}
}

func latBucket(d time.Duration) int {
	us := uint64(max(0, d.Microseconds()))
	if us < 16 {
		return int(us)
	}
	e := bits.Len64(us) - 1 // >= 4
	i := 16 + (e-4)*8 + int(us>>(e-3)&7)
	return min(i, latBuckets-1)
}

// latUpper is the largest latency bucket i holds, seconds.
func latUpper(i int) float64 {
	if i < 16 {
		return float64(i) / 1e6
	}
	e, m := (i-16)/8+4, (i-16)%8
	return float64((uint64(9+m)<<(e-3))-1) / 1e6
}

// p99 of the latency buckets summed over bins [from, to); 0 without answers.
func (s *FaultSeries) p99(from, to int) float64 {
	var h [latBuckets]int64
	var n int64
	for k := max(0, from); k < min(to, len(s.bins)); k++ {
		for i := range h {
			c := s.bins[k].lat[i].Load()
			h[i] += c
			n += c
		}
	}
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(0.99 * float64(n)))
	var cum int64
	for i, c := range h {
		if cum += c; cum >= rank {
			return latUpper(i)
		}
	}
	return latUpper(latBuckets - 1)
}

// binOf is the bin whose span holds t (clamped to the window's bins).
func (s *FaultSeries) binOf(t time.Time) int {
	k := int(math.Floor(float64(t.Sub(s.Start())) / float64(s.bin)))
	return min(max(k, 0), len(s.bins))
}

// at is bin k's start.
func (s *FaultSeries) at(k int) time.Time { return s.Start().Add(time.Duration(k) * s.bin) }

// AnalyzeFaults is a faults cell's account from the lab's fault log (in
// time order) and the window's series, whose window ends at end: the
// timeline, the steady p99 (before the first fault) and, per fault, its
// span (its start to the next fault's start, or end) with the failures in
// it, the detection and the recovery (docs/faults.md).
func AnalyzeFaults(log []manifest.FaultEvent, s *FaultSeries, end time.Time) *manifest.Faults {
	out := &manifest.Faults{Log: log, BinS: s.bin.Seconds()}
	n := len(s.bins)
	if !end.IsZero() && !s.Start().IsZero() {
		n = min(n, max(0, s.binOf(end.Add(s.bin-1))))
	}
	tl := &out.Timeline
	for k := range n {
		b := &s.bins[k]
		tl.Requests = append(tl.Requests, b.requests.Load())
		tl.Failed = append(tl.Failed, b.failed.Load())
		tl.P99S = append(tl.P99S, s.p99(k, k+1))
	}
	if len(log) == 0 || s.Start().IsZero() {
		return out
	}
	out.SteadyP99S = s.p99(0, s.binOf(log[0].Start))
	if out.SteadyP99S > 0 { // else no threshold: nothing completed before the first fault
		out.RecoveryThresholdS = max(RecoveryFactor*out.SteadyP99S, out.SteadyP99S+RecoveryFloor.Seconds())
	}
	for i, ev := range log {
		spanEnd := end
		if i+1 < len(log) {
			spanEnd = log[i+1].Start
		}
		out.Results = append(out.Results, s.fault(ev, spanEnd, n, out.RecoveryThresholdS))
	}
	return out
}

// fault is what ev cost over its span [ev.Start, spanEnd): a bin counts in
// the span holding its middle.
func (s *FaultSeries) fault(ev manifest.FaultEvent, spanEnd time.Time, n int, threshold float64) manifest.FaultResult {
	r := manifest.FaultResult{Kind: ev.Kind, SpanS: spanEnd.Sub(ev.Start).Seconds()}
	mid := func(k int) time.Time { return s.at(k).Add(s.bin / 2) }
	first, last := s.binOf(ev.Start), s.binOf(spanEnd)
	if mid(first).Before(ev.Start) {
		first++
	}
	if last >= n {
		last = n - 1
	} else if !mid(last).Before(spanEnd) {
		last--
	}
	var firstFail, lastFail, lastBeforeEnd int64
	for k := first; k <= last; k++ {
		b := &s.bins[k]
		r.Failed += b.failed.Load()
		r.TimedOut += b.timedOut.Load()
		r.Status5xx += b.s5xx.Load()
		if f := b.firstFail.Load(); f != 0 && (firstFail == 0 || f < firstFail) {
			firstFail = f
		}
		if l := b.lastFail.Load(); l != 0 {
			lastFail = max(lastFail, l)
			if mid(k).Before(ev.End) || ev.End.IsZero() {
				lastBeforeEnd = max(lastBeforeEnd, l)
			}
		}
	}
	since := func(ns int64) *float64 { v := time.Unix(0, ns).Sub(ev.Start).Seconds(); return &v }
	if firstFail != 0 {
		r.FirstFailureS, r.LastFailureS = since(firstFail), since(lastFail)
	}
	switch {
	case lastBeforeEnd == 0:
		r.Detection = "none failed"
	case !ev.End.IsZero() && time.Unix(0, lastBeforeEnd).After(ev.End.Add(-s.bin)):
		r.Detection = "failed until the replica came back"
	default:
		r.DetectionS = since(lastBeforeEnd)
	}
	r.RecoveryS, r.Recovery = s.recovery(ev, spanEnd, last, threshold)
	return r
}

// recovery is the time from ev.Restored to the first bin from which every
// bin up to the span's last one (or for RecoveryHold) has no failure and a
// p99 at or under threshold.
func (s *FaultSeries) recovery(ev manifest.FaultEvent, spanEnd time.Time, last int, threshold float64) (*float64, string) {
	switch {
	case ev.Restored.IsZero():
		return nil, "the replica was not brought back"
	case threshold <= 0:
		return nil, "no steady p99 (nothing answered before the first fault)"
	}
	good := func(k int) bool {
		b := &s.bins[k]
		return b.failed.Load() == 0 && b.requests.Load() > 0 && s.p99(k, k+1) <= threshold
	}
	hold := max(1, int(RecoveryHold/s.bin))
	for k := s.binOf(ev.Restored); k <= last && k < len(s.bins); k++ {
		run := 0
		for j := k; j <= last && j < len(s.bins) && run < hold && good(j); j++ {
			run++
		}
		if run == hold || (run > 0 && k+run > last) {
			v := max(0, s.at(k).Sub(ev.Restored).Seconds())
			return &v, ""
		}
	}
	if spanEnd.IsZero() {
		return nil, "not back at the steady p99"
	}
	return nil, "not back at the steady p99 before the span ended"
}
