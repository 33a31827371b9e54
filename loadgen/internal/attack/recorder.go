package attack

import (
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/reqsample"
	"proxybench/loadgen/internal/wire"
)

// Histogram bounds: 1 µs .. 60 s at 3 significant figures.
const (
	histMin = 1
	histMax = 60_000_000
	histSig = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histSig) }

// newLagHist is the open loop's send-lag histogram: 1 µs .. 60 s at 2
// significant figures (1 %), small enough to keep one per recorder.
func newLagHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, 2) }

// clampUs is d in whole microseconds, within the histograms' bounds.
func clampUs(d time.Duration) int64 { return min(max(d.Microseconds(), histMin), histMax) }

// maxRecorders bounds memory when an open loop grows to thousands of
// workers: workers share recorders round-robin beyond this, and a recorder's
// mutex is only ever contended by the few workers that share it.
const maxRecorders = 64

// recorder accumulates the results of the workers that own it. Its mutex is
// uncontended on the hot path (one worker per recorder up to maxRecorders)
// and taken once a second by the progress snapshot.
type recorder struct {
	mu       sync.Mutex
	hist     *hdrhistogram.Histogram // measured requests, late ones included
	interval *hdrhistogram.Histogram // everything since the last progress snapshot
	lag      *hdrhistogram.Histogram // open loop: lag of the window's non-capped sends; nil in closed loop

	requests, errors, bytes, wrongOrigin, sent, capped, queued int64
	codes                                                      map[int]int64
	reasons                                                    [numReasons]int64

	late        int64 // completed after the window's end
	lateCodes   map[int]int64
	lateReasons [numReasons]int64
	drainEnd    time.Time // last late completion

	hs handshakes // TLS: this recorder's workers' handshakes

	samp *reqsample.Sampler // Spec.SampleRequests; nil when not asked

	allRequests, allErrors int64 // warm-up included, for progress
	codeCounters           map[int]prometheus.Counter

	split *split // Spec.Split's parts; nil without one

	inFlight atomic.Int64
	held     atomic.Int64 // sends the MaxRate cap held (closed loop: counted when sent)
	_        [64]byte     // keep neighbouring recorders off this cache line
}

func newRecorder(open bool, split Splitter) *recorder {
	r := &recorder{
		hist:         newHist(),
		interval:     newHist(),
		codes:        map[int]int64{},
		lateCodes:    map[int]int64{},
		codeCounters: map[int]prometheus.Counter{},
		split:        newSplit(split),
	}
	if open {
		r.lag = newLagHist()
	}
	return r
}

// sample makes the recorder keep a sample of its requests' times
// (Spec.SampleRequests), at most capacity in each reservoir.
func (r *recorder) sample(capacity int, seed uint64) {
	r.samp = reqsample.New(capacity, reqsample.TailQuantile, seed)
}

// openSend is how an open-loop request was sent: lag is the actual send
// time minus the intended one, or minus when its worker became free
// (connected, or its previous request answered) if that came later: a slow
// accept, handshake or answer is the target's wait, not the loadgen's;
// capped says it waited because max in
// flight was reached (then its lag is the target's doing and stays out of
// LagP99).
type openSend struct {
	lag    time.Duration
	capped bool
	held   bool // the MaxRate cap held it: its lag is the cap's, out of LagP99 too
	queued bool // due inside the window, still queued at its end: sent after it
	// wait is the part of its latency before it was sent (from its due
	// time to the send; 0 when it was sent at its latency's start).
	wait time.Duration
}

// record accounts one finished request; latency is from the (intended) send.
// Every request of an attack is measured: a warm-up is an attack of its
// own (WarmUp). open is the open loop's send (nil in closed loop): it
// counts as sent, and as capped or in the lag. late says it completed after the
// window's end: it is then counted apart (Late), and its latency still goes
// into the window's histogram.
func (r *recorder) record(rm *runMetrics, done time.Time, latency time.Duration, res wire.Response, err error, open *openSend, late bool) {
	us := clampUs(latency)
	inFlight := latency
	if open != nil {
		inFlight -= open.wait
	}
	rm.inFlightS.Add(inFlight.Seconds())
	var reason errReason
	if err != nil {
		reason = wire.Classify(err)
	}
	part := -1
	if r.split != nil && !late {
		part = r.split.s.Part(done.Add(-latency), done)
	}
	r.mu.Lock()
	if open != nil {
		r.sent++
		if open.held {
			r.held.Add(1)
		}
		if open.queued {
			r.queued++
		}
		if open.capped {
			r.capped++
		} else if !open.held {
			r.lag.RecordValue(clampUs(open.lag)) //nolint:errcheck // clamped into range
		}
	}
	r.interval.RecordValue(us) //nolint:errcheck // clamped into range above
	if r.samp != nil {
		r.samp.Add(done, latency, inFlight)
	}
	var ctr prometheus.Counter
	if err != nil {
		r.allErrors++
	} else {
		r.allRequests++
		ctr = r.codeCounters[res.Code]
		if ctr == nil {
			ctr = rm.code(res.Code)
			r.codeCounters[res.Code] = ctr
		}
	}
	switch {
	case late:
		r.late++
		if err != nil {
			r.lateReasons[reason]++
		} else {
			r.lateCodes[res.Code]++
			r.hist.RecordValue(us) //nolint:errcheck // clamped into range above
		}
		if done.After(r.drainEnd) {
			r.drainEnd = done
		}
	default:
		if err != nil {
			r.errors++
			r.reasons[reason]++
		} else {
			r.requests++
			r.codes[res.Code]++
			r.hist.RecordValue(us) //nolint:errcheck // clamped into range above
		}
		r.bytes += res.Bytes
		if err == nil && !res.OriginOK && res.Code >= 200 && res.Code < 300 {
			r.wrongOrigin++
		}
		if part >= 0 {
			r.split.add(part, done, latency, res.Code, reason, err != nil)
		}
	}
	r.mu.Unlock()

	// The Prometheus series count every request of the attack, warm-up
	// attacks included: the runner's window series say which was measured.
	if err != nil {
		rm.errors[reason].Inc()
		if late {
			rm.lateErrors[reason].Inc()
		}
	} else {
		ctr.Inc()
		if late {
			rm.lateCode(res.Code).Inc()
		}
		rm.duration.Observe(latency.Seconds())
		if !res.OriginOK && res.Code >= 200 && res.Code < 300 {
			rm.wrongOrigin.Inc()
		}
	}
	if res.Bytes > 0 {
		rm.bytes.Add(float64(res.Bytes))
	}
}
