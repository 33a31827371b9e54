package attack

import (
	"crypto/tls"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/wire"
)

// handshakes is a recorder's account of its connections' TLS handshakes.
type handshakes struct {
	counts [wire.NumHandshakeResults]int64
	first  wire.Handshake // the first completed one: what was negotiated
	have   bool
}

func (h *handshakes) merge(o *handshakes) {
	for i, n := range o.counts {
		h.counts[i] += n
	}
	if !h.have && o.have {
		h.first, h.have = o.first, true
	}
}

// handshakeTimes are a run's completed handshakes' durations, full [0]
// and resumed [1] (boolIndex), as the handshake histogram's resumed label
// splits them, each histogram made at its first handshake: one pair for
// the run under its own lock, held for one record while a handshake
// costs the client a signature check or more; a pair per recorder would
// hold up to 64 x 2 x 140 KB.
type handshakeTimes struct {
	mu  sync.Mutex
	dur [2]*hdrhistogram.Histogram
}

func (h *handshakeTimes) observe(resumed bool, d time.Duration) {
	i := boolIndex(resumed)
	h.mu.Lock()
	if h.dur[i] == nil {
		h.dur[i] = newHist()
	}
	h.dur[i].RecordValue(clampUs(d)) //nolint:errcheck // clamped into range
	h.mu.Unlock()
}

// fill writes the distributions into t.
func (h *handshakeTimes) fill(t *manifest.TLS) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.LatencyFull, t.LatencyResumed = handshakeLatency(h.dur[0]), handshakeLatency(h.dur[1])
}

// handshakeLatency is the distribution of d; nil when it holds nothing.
func handshakeLatency(d *hdrhistogram.Histogram) *manifest.HandshakeLatency {
	if d == nil || d.TotalCount() == 0 {
		return nil
	}
	sec := func(q float64) float64 { return (time.Duration(d.ValueAtQuantile(q)) * time.Microsecond).Seconds() }
	return &manifest.HandshakeLatency{Count: d.TotalCount(), P50: sec(50), P99: sec(99)}
}

// fill writes the account into t.
func (h *handshakes) fill(t *manifest.TLS) {
	if h.have {
		t.ALPN, t.Version, t.Cipher = h.first.ALPN, tls.VersionName(h.first.Version), tls.CipherSuiteName(h.first.Cipher)
	}
	c := &h.counts
	t.HandshakesFull, t.HandshakesResumed = c[wire.HandshakeFull], c[wire.HandshakeResumed]
	t.CertErrors, t.ALPNMismatches, t.VersionRefused, t.HandshakeErrors = c[wire.HandshakeCertError], c[wire.HandshakeALPN], c[wire.HandshakeVersion], c[wire.HandshakeError]
}

// tlsObserver takes the handshakes of one worker's connections into its
// recorder, the run's handshake times and metrics. Several workers share
// a recorder (and a multiplexed connection's streams one observer), so it
// takes the recorder's lock; handshakes are rare next to requests.
type tlsObserver struct {
	rec   *recorder
	times *handshakeTimes
	rm    *runMetrics
}

var _ wire.HandshakeObserver = (*tlsObserver)(nil)

func (o *tlsObserver) Handshake(h *wire.Handshake) {
	completed := h.Version != 0 // its duration is a handshake's
	resumed := h.Result == wire.HandshakeResumed
	o.rec.mu.Lock()
	o.rec.hs.counts[h.Result]++
	if !o.rec.hs.have && completed {
		o.rec.hs.first, o.rec.hs.have = *h, true
		o.rec.hs.first.Err = nil
	}
	o.rec.mu.Unlock()
	o.rm.handshakes[h.Result].Inc()
	if completed {
		o.times.observe(resumed, h.Duration)
		o.rm.handshakeDuration[boolIndex(resumed)].Observe(h.Duration.Seconds())
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
