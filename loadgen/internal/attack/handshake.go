package attack

import (
	"crypto/tls"

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
// recorder and the run's metrics. Several workers share a recorder (and a
// multiplexed connection's streams one observer), so it takes the
// recorder's lock; handshakes are rare next to requests.
type tlsObserver struct {
	rec *recorder
	rm  *runMetrics
}

var _ wire.HandshakeObserver = (*tlsObserver)(nil)

func (o *tlsObserver) Handshake(h *wire.Handshake) {
	o.rec.mu.Lock()
	o.rec.hs.counts[h.Result]++
	if !o.rec.hs.have && h.Version != 0 {
		o.rec.hs.first, o.rec.hs.have = *h, true
		o.rec.hs.first.Err = nil
	}
	o.rec.mu.Unlock()
	o.rm.handshakes[h.Result].Inc()
	if h.Version != 0 { // completed: its duration is a handshake's
		o.rm.handshakeDuration[boolIndex(h.Result == wire.HandshakeResumed)].Observe(h.Duration.Seconds())
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
