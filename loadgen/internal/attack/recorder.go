package attack

import (
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
)

// Histogram bounds: 1 µs .. 60 s at 3 significant figures.
const (
	histMin = 1
	histMax = 60_000_000
	histSig = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histSig) }

// maxRecorders bounds memory when an open loop grows to thousands of
// workers: workers share recorders round-robin beyond this, and a recorder's
// mutex is only ever contended by the few workers that share it.
const maxRecorders = 64

// recorder accumulates the results of the workers that own it. Its mutex is
// uncontended on the hot path (one worker per recorder up to maxRecorders)
// and taken once a second by the progress snapshot.
type recorder struct {
	mu       sync.Mutex
	hist     *hdrhistogram.Histogram // measured window
	interval *hdrhistogram.Histogram // everything since the last progress snapshot

	requests, errors, bytes, wrongOrigin, sent int64
	codes                                      map[int]int64
	reasons                                    [numReasons]int64
	end                                        time.Time // last completion in the window

	allRequests, allErrors int64 // warm-up included, for progress
	codeCounters           map[int]prometheus.Counter

	inFlight atomic.Int64
	_        [64]byte // keep neighbouring recorders off this cache line
}

func newRecorder() *recorder {
	return &recorder{
		hist:         newHist(),
		interval:     newHist(),
		codes:        map[int]int64{},
		codeCounters: map[int]prometheus.Counter{},
	}
}

// record accounts one finished request; latency is from the (intended) send.
// measured says whether the request was due (open loop) or sent (closed
// loop) at or after the window start; warm-up requests only reach Prometheus.
func (r *recorder) record(rm *runMetrics, done time.Time, latency time.Duration, res response, err error, measured, open bool) {
	us := latency.Microseconds()
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
	}
	var reason errReason
	if err != nil {
		reason = classify(err)
	}
	r.mu.Lock()
	if measured && open {
		r.sent++
	}
	r.interval.RecordValue(us) //nolint:errcheck // clamped into range above
	var ctr prometheus.Counter
	if err != nil {
		r.allErrors++
	} else {
		r.allRequests++
		ctr = r.codeCounters[res.code]
		if ctr == nil {
			ctr = rm.code(res.code)
			r.codeCounters[res.code] = ctr
		}
	}
	if measured {
		if err != nil {
			r.errors++
			r.reasons[reason]++
		} else {
			r.requests++
			r.codes[res.code]++
			r.hist.RecordValue(us) //nolint:errcheck // clamped into range above
		}
		r.bytes += res.bytes
		if err == nil && !res.originOK && res.code >= 200 && res.code < 300 {
			r.wrongOrigin++
		}
		if done.After(r.end) {
			r.end = done
		}
	}
	r.mu.Unlock()

	// Prometheus series count everything, warm-up included: the runner's
	// window series say which part was measured.
	if err != nil {
		rm.errors[reason].Inc()
	} else {
		ctr.Inc()
		rm.duration.Observe(latency.Seconds())
		if !res.originOK && res.code >= 200 && res.code < 300 {
			rm.wrongOrigin.Inc()
		}
	}
	if res.bytes > 0 {
		rm.bytes.Add(float64(res.bytes))
	}
}
