package attack

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Splitter sorts a window's completions into parts: a sliced duet
// measures both of its arms in one window, switching between them every
// slice, and each arm is a part. Part(sent, done) is the part a request
// sent at sent (in open loop, its intended send time) and answered at done
// counts in, or -1 for none (it straddles a switch, or was sent in the
// guard after one). It is called once per completion inside the window,
// from the workers, so it must be cheap and safe for concurrent use.
type Splitter interface {
	Parts() int
	Part(sent, done time.Time) int
}

// Part is one part's exact account of a split window (Spec.Split): the
// completions Splitter.Part gave it, counted as the window's own are.
type Part struct {
	Requests     int64
	Errors       int64
	Codes        map[int]int64
	ErrorReasons map[string]int64
	Hist         *hdrhistogram.Histogram // as Result.Hist, this part's completions only
}

// partAcc is one recorder's account of one part.
type partAcc struct {
	requests, errors int64
	codes            map[int]int64
	reasons          [numReasons]int64
	hist             *hdrhistogram.Histogram
}

func newParts(s Splitter) []partAcc {
	if s == nil {
		return nil
	}
	out := make([]partAcc, s.Parts())
	for i := range out {
		out[i] = partAcc{codes: map[int]int64{}, hist: newHist()}
	}
	return out
}

// add counts one completion in its part; the recorder's lock is held.
func (p *partAcc) add(us int64, code int, reason errReason, failed bool) {
	if failed {
		p.errors++
		p.reasons[reason]++
		return
	}
	p.requests++
	p.codes[code]++
	p.hist.RecordValue(us) //nolint:errcheck // clamped into range by the caller
}

// addTo adds one recorder's part into the result's.
func (p *partAcc) addTo(out *Part) {
	if out.Codes == nil {
		out.Codes, out.ErrorReasons, out.Hist = map[int]int64{}, map[string]int64{}, newHist()
	}
	out.Requests += p.requests
	out.Errors += p.errors
	for c, n := range p.codes {
		out.Codes[c] += n
	}
	for i := range numReasons {
		if n := p.reasons[i]; n > 0 {
			out.ErrorReasons[reasonNames[i]] += n
		}
	}
	out.Hist.Merge(p.hist)
}

// mergeParts adds b's parts into a's, part by part (Merge).
func mergeParts(a, b []Part) []Part {
	for i := range b {
		if i == len(a) {
			a = append(a, Part{Codes: map[int]int64{}, ErrorReasons: map[string]int64{}, Hist: newHist()})
		}
		a[i].Requests += b[i].Requests
		a[i].Errors += b[i].Errors
		for c, n := range b[i].Codes {
			a[i].Codes[c] += n
		}
		for c, n := range b[i].ErrorReasons {
			a[i].ErrorReasons[c] += n
		}
		if b[i].Hist != nil {
			a[i].Hist.Merge(b[i].Hist)
		}
	}
	return a
}
