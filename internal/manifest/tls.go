package manifest

// TLS is what an attack's (a cell's) TLS connections negotiated and how
// their handshakes went: the loadgen's attack.Result.TLS, recorded as is.
// Nil for plain HTTP/1.1. The negotiated fields are the first completed
// handshake's; the counts cover every handshake of the attack, those of
// connections dialled while draining included, its warm-up's not.
type TLS struct {
	ALPN    string `json:"alpn"`    // the protocol the server selected: http/1.1, h2, h3
	Version string `json:"version"` // e.g. "TLS 1.3"
	Cipher  string `json:"cipher"`  // e.g. "TLS_AES_128_GCM_SHA256"

	HandshakesFull    int64 `json:"handshakes_full"`            // completed without resumption
	HandshakesResumed int64 `json:"handshakes_resumed"`         // completed, session resumed
	CertErrors        int64 `json:"certificate_errors"`         // the server's certificate did not verify
	ALPNMismatches    int64 `json:"alpn_mismatches,omitempty"`  // the server selected another protocol than asked (a fall back): failed
	VersionRefused    int64 `json:"version_refused,omitempty"`  // the server refused the versions asked (protocol_version alert)
	HandshakeErrors   int64 `json:"handshake_errors,omitempty"` // failed otherwise: timeout, reset, other alerts

	// LatencyFull and LatencyResumed are the durations of the handshakes
	// that completed (from the ClientHello to the handshake's end, TCP
	// connect excluded; h3: the whole QUIC dial), full and resumed apart,
	// from the loadgen's exact histograms (HdrHistogram, microseconds, 3
	// significant figures): the handshakes its
	// proxybench_tls_handshake_duration_seconds{resumed} counts. Nil when
	// none of the kind completed.
	LatencyFull    *HandshakeLatency `json:"handshake_latency_full,omitempty"`
	LatencyResumed *HandshakeLatency `json:"handshake_latency_resumed,omitempty"`
}

// HandshakeLatency is the distribution of a kind of handshake's
// durations, in seconds.
type HandshakeLatency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
}

// Handshakes is every handshake attempted.
func (t *TLS) Handshakes() int64 {
	return t.HandshakesFull + t.HandshakesResumed + t.CertErrors + t.ALPNMismatches + t.VersionRefused + t.HandshakeErrors
}
