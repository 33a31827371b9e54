package attack

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Splitter sorts a window's completions into parts: a sliced duet
// measures both of its arms in one window, switching between them every
// slice; each slice is a part and each arm a group of parts. Part(sent,
// done) is the part a request sent at sent (in open loop, its intended
// send time) and answered at done counts in, or -1 for none (it straddles
// a switch, or was sent in the guard after one). Group(part) is the group
// whose latency histogram the part's completions go into. Part is called
// once per completion inside the window, from the workers, so it must be
// cheap and safe for concurrent use.
type Splitter interface {
	Parts() int
	Groups() int
	Part(sent, done time.Time) int
	Group(part int) int
}

// PartObserver is a Splitter that also sees each completion it gave a
// part: when it completed, its latency, its status (0 for an error) and
// its error class ("" for an answer; wire.ReasonNames). Observe is called
// with the recorder's lock held, from many recorders at once: it must be
// cheap and safe for concurrent use.
type PartObserver interface {
	Observe(part int, done time.Time, latency time.Duration, code int, reason string)
}

// Part is one part's exact account of a split window (Spec.Split): the
// completions Splitter.Part gave it, counted as the window's own are.
type Part struct {
	Requests     int64
	Errors       int64
	Codes        map[int]int64
	ErrorReasons map[string]int64
}

// partAcc is one recorder's account of one part.
type partAcc struct {
	requests, errors int64
	codes            map[int]int64
	reasons          [numReasons]int64
}

// split is one recorder's account of a split window.
type split struct {
	s     Splitter
	obs   PartObserver // s, when it observes; nil otherwise
	parts []partAcc
	hists []*hdrhistogram.Histogram // by group
}

func newSplit(s Splitter) *split {
	if s == nil {
		return nil
	}
	sp := &split{s: s, parts: make([]partAcc, s.Parts()), hists: make([]*hdrhistogram.Histogram, s.Groups())}
	sp.obs, _ = s.(PartObserver)
	for i := range sp.parts {
		sp.parts[i].codes = map[int]int64{}
	}
	for i := range sp.hists {
		sp.hists[i] = newHist()
	}
	return sp
}

// add counts one completion in part p, done at done after latency; the
// recorder's lock is held.
func (sp *split) add(p int, done time.Time, latency time.Duration, code int, reason errReason, failed bool) {
	if p < 0 || p >= len(sp.parts) {
		return
	}
	if sp.obs != nil {
		if failed {
			sp.obs.Observe(p, done, latency, 0, reasonNames[reason])
		} else {
			sp.obs.Observe(p, done, latency, code, "")
		}
	}
	us := clampUs(latency)
	a := &sp.parts[p]
	if failed {
		a.errors++
		a.reasons[reason]++
		return
	}
	a.requests++
	a.codes[code]++
	if g := sp.s.Group(p); g >= 0 && g < len(sp.hists) {
		sp.hists[g].RecordValue(us) //nolint:errcheck // clamped into range by the caller
	}
}

// addTo adds one recorder's account into the result's.
func (sp *split) addTo(res *Result) {
	if res.Parts == nil {
		res.Parts = make([]Part, len(sp.parts))
		res.GroupHists = make([]*hdrhistogram.Histogram, len(sp.hists))
		for i := range res.GroupHists {
			res.GroupHists[i] = newHist()
		}
	}
	for i := range sp.parts {
		p := &sp.parts[i]
		own := Part{Requests: p.requests, Errors: p.errors, Codes: p.codes, ErrorReasons: map[string]int64{}}
		for r := range numReasons {
			if n := p.reasons[r]; n > 0 {
				own.ErrorReasons[reasonNames[r]] = n
			}
		}
		res.Parts[i].add(own)
	}
	for i, h := range sp.hists {
		res.GroupHists[i].Merge(h)
	}
}

// add adds o's counts into p's.
func (p *Part) add(o Part) {
	if p.Codes == nil {
		p.Codes, p.ErrorReasons = map[int]int64{}, map[string]int64{}
	}
	p.Requests += o.Requests
	p.Errors += o.Errors
	for c, n := range o.Codes {
		p.Codes[c] += n
	}
	for r, n := range o.ErrorReasons {
		p.ErrorReasons[r] += n
	}
}

// mergeSplit adds r's parts and group histograms into m's (Merge).
func mergeSplit(m, r *Result) {
	for i := range r.Parts {
		if i == len(m.Parts) {
			m.Parts = append(m.Parts, Part{})
		}
		m.Parts[i].add(r.Parts[i])
	}
	for i, h := range r.GroupHists {
		if i == len(m.GroupHists) {
			m.GroupHists = append(m.GroupHists, newHist())
		}
		m.GroupHists[i].Merge(h)
	}
}
