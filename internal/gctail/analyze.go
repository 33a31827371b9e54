package gctail

import (
	"slices"
	"sort"
	"time"

	"proxybench/internal/gccycles"
	"proxybench/internal/reqsample"
)

// Shifts is how many circular shifts of the GC timeline the chance
// estimate takes.
const Shifts = 199

// Result is what a cell's join says. Shares are weighted by how many
// requests each sampled one stands for, over the requests sent and
// completed inside the window.
type Result struct {
	// P99Seconds is the cell's exact p99 (the loadgen's histogram): the
	// tail is the requests slower than it.
	P99Seconds float64 `json:"p99_seconds"`
	// Sampled is the uniform sample's requests, Tail the sampled
	// requests slower than the p99; TailCompleteness their weight over 1 %
	// of the uniform sample's (1 when the tail sampler caught all of them).
	Sampled          int     `json:"sampled"`
	Tail             int     `json:"tail"`
	TailCompleteness float64 `json:"tail_completeness"`
	// Cycles is the GC cycles in the window; Coverage and STWCoverage the
	// share of the window they (their stop-the-world phases) covered.
	Cycles      int     `json:"cycles"`
	Coverage    float64 `json:"coverage"`
	STWCoverage float64 `json:"stw_coverage"`
	// TailOverlap is the share of the tail whose time at the proxy
	// (send to completion) overlapped a GC cycle (a stop-the-world or the
	// mark phase), TailOverlapSTW a stop-the-world phase; AllOverlap and
	// AllOverlapSTW the same for all requests (the uniform sample).
	TailOverlap    float64 `json:"tail_overlap"`
	TailOverlapSTW float64 `json:"tail_overlap_stw"`
	AllOverlap     float64 `json:"all_overlap"`
	AllOverlapSTW  float64 `json:"all_overlap_stw"`
	// Chance is the tail's overlap expected by chance: its mean over
	// Shifts circular shifts of the GC timeline within the window (the
	// requests' durations and the cycles' lengths and spacing kept);
	// ChanceHigh its 95th percentile; PValue the share of shifts whose
	// overlap reached TailOverlap (with the observed one counted).
	Chance     float64 `json:"chance"`
	ChanceHigh float64 `json:"chance_high"`
	PValue     float64 `json:"p_value"`
	Shifts     int     `json:"shifts"`
	// P99OverlapSeconds and P99ClearSeconds are the p99 latency of the
	// requests that overlapped a GC cycle and of those that did not;
	// Overlapping and Clear the uniform sample's counts of each.
	P99OverlapSeconds float64 `json:"p99_overlap_seconds"`
	P99ClearSeconds   float64 `json:"p99_clear_seconds"`
	Overlapping       int     `json:"overlapping"`
	Clear             int     `json:"clear"`
	// Anchor is how the cycles were placed on the loadgen's clock (the
	// same host clock): the error of a cycle's start is at most the
	// anchor's least log delay late, and up to gccycles.Truncation early.
	Anchor gccycles.Anchor `json:"anchor"`
}

// span is a half-open interval of Unix nanoseconds.
type span struct{ s, e int64 }

// spans are the cycles' intervals, or their stop-the-world phases'.
func spans(cycles []gccycles.Cycle, stw bool) []span {
	var out []span
	for _, c := range cycles {
		s, e := c.Start.UnixNano(), c.End().UnixNano()
		if !stw {
			out = append(out, span{s, e})
			continue
		}
		out = append(out, span{s, s + int64(c.SweepTerm)}, span{e - int64(c.MarkTerm), e})
	}
	slices.SortFunc(out, func(a, b span) int { return int(min(max(a.s-b.s, -1), 1)) })
	return out
}

// hits says whether [s, e] overlaps one of sp (sorted, disjoint).
func hits(sp []span, s, e int64) bool {
	i := sort.Search(len(sp), func(i int) bool { return sp[i].e > s })
	return i < len(sp) && sp[i].s < e
}

// covered is the time sp covers within [ws, we).
func covered(sp []span, ws, we int64) int64 {
	var t int64
	for _, x := range sp {
		t += max(0, min(x.e, we)-max(x.s, ws))
	}
	return t
}

// shifted is sp moved by d within the window [ws, ws+w), wrapping around
// its end (a span that crosses it is cut in two).
func shifted(sp []span, ws, w, d int64) []span {
	out := make([]span, 0, len(sp)+1)
	for _, x := range sp {
		s := max(x.s, ws)
		e := min(x.e, ws+w)
		if e <= s {
			continue
		}
		ns := ws + (s-ws+d)%w
		ne := ns + (e - s)
		if ne <= ws+w {
			out = append(out, span{ns, ne})
			continue
		}
		out = append(out, span{ns, ws + w}, span{ws, ws + (ne - ws - w)})
	}
	slices.SortFunc(out, func(a, b span) int { return int(min(max(a.s-b.s, -1), 1)) })
	return out
}

// share is the weighted share of reqs that overlap sp.
func share(reqs []reqsample.Req, sp []span) float64 {
	var in, all float64
	for _, r := range reqs {
		all += float64(r.W)
		if hits(sp, r.Sent(), r.Done) {
			in += float64(r.W)
		}
	}
	if all == 0 {
		return 0
	}
	return in / all
}

// Analyze joins f's requests with its cycles; p99 is the cell's exact p99.
func Analyze(f *File, p99 time.Duration) Result {
	ws, we := f.WindowStart.UnixNano(), f.WindowEnd.UnixNano()
	inWindow := func(r reqsample.Req) bool { return r.Sent() >= ws && r.Done <= we }
	var uni, tailAll, tail []reqsample.Req
	for _, r := range f.Requests.Uniform {
		if inWindow(r) {
			uni = append(uni, r)
		}
	}
	for _, r := range f.Requests.Tail {
		if inWindow(r) {
			tailAll = append(tailAll, r)
			if r.Latency > int64(p99) {
				tail = append(tail, r)
			}
		}
	}
	cyc, stw := spans(f.Cycles, false), spans(f.Cycles, true)
	res := Result{P99Seconds: p99.Seconds(), Sampled: len(uni), Tail: len(tail), Anchor: f.Anchor}
	for _, c := range f.Cycles {
		if c.End().UnixNano() > ws && c.Start.UnixNano() < we {
			res.Cycles++
		}
	}
	if w := we - ws; w > 0 {
		res.Coverage = float64(covered(cyc, ws, we)) / float64(w)
		res.STWCoverage = float64(covered(stw, ws, we)) / float64(w)
	}
	var uw, tw float64
	for _, r := range uni {
		uw += float64(r.W)
	}
	for _, r := range tail {
		tw += float64(r.W)
	}
	if uw > 0 {
		res.TailCompleteness = tw / (uw / 100)
	}
	res.TailOverlap, res.TailOverlapSTW = share(tail, cyc), share(tail, stw)
	res.AllOverlap, res.AllOverlapSTW = share(uni, cyc), share(uni, stw)

	if w := we - ws; w > 0 && len(tail) > 0 && len(cyc) > 0 {
		chances := make([]float64, 0, Shifts)
		reached := 1
		for k := 1; k <= Shifts; k++ {
			x := share(tail, shifted(cyc, ws, w, w*int64(k)/int64(Shifts+1)))
			chances = append(chances, x)
			if x >= res.TailOverlap {
				reached++
			}
		}
		slices.Sort(chances)
		var sum float64
		for _, x := range chances {
			sum += x
		}
		res.Chance = sum / float64(len(chances))
		res.ChanceHigh = chances[len(chances)*95/100]
		res.PValue = float64(reached) / float64(Shifts+1)
		res.Shifts = Shifts
	}

	over := func(r reqsample.Req) bool { return hits(cyc, r.Sent(), r.Done) }
	clear := func(r reqsample.Req) bool { return !over(r) }
	thresh := f.Requests.TailThreshold
	var p float64
	p, res.Overlapping = quantile99(uni, tailAll, thresh, over)
	res.P99OverlapSeconds = p
	p, res.Clear = quantile99(uni, tailAll, thresh, clear)
	res.P99ClearSeconds = p
	return res
}

// quantile99 is the p99 latency, in seconds, of the requests in, and the
// uniform sample's count of them. The uniform sample says how many
// requests there were; when its 1 % lies above the tail's threshold the
// tail, which holds every request above it, places the p99 (far more
// requests than the uniform sample's few above its own p99), else the
// uniform sample alone does.
func quantile99(uni, tail []reqsample.Req, thresh int64, in func(reqsample.Req) bool) (float64, int) {
	var sel []reqsample.Req
	var n float64
	for _, r := range uni {
		if in(r) {
			sel = append(sel, r)
			n += float64(r.W)
		}
	}
	if len(sel) == 0 {
		return 0, 0
	}
	want := n / 100
	var ts []reqsample.Req
	for _, r := range tail {
		if in(r) {
			ts = append(ts, r)
		}
	}
	byLatencyDown := func(a, b reqsample.Req) int { return int(min(max(b.Latency-a.Latency, -1), 1)) }
	slices.SortFunc(ts, byLatencyDown)
	var acc float64
	for _, r := range ts {
		if acc += float64(r.W); acc >= want {
			if r.Latency > thresh {
				return time.Duration(r.Latency).Seconds(), len(sel)
			}
			break
		}
	}
	slices.SortFunc(sel, byLatencyDown)
	acc = 0
	for _, r := range sel {
		if acc += float64(r.W); acc >= want {
			return time.Duration(r.Latency).Seconds(), len(sel)
		}
	}
	return time.Duration(sel[len(sel)-1].Latency).Seconds(), len(sel)
}
