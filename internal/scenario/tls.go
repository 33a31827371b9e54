package scenario

import (
	"net/http"

	"proxybench/internal/manifest"
)

// tls is simple over TLS: GET / over keep-alive HTTP/1.1 connections to the
// proxy's TLS port (ALPN http/1.1). Its cells have simple's shape, so the
// report's TLS cost table sets the proxy's CPU per request of each against
// the other's.
var tls = Scenario{
	Name:   "tls",
	About:  "GET / over keep-alive HTTP/1.1 over TLS to the proxy's TLS port (ALPN http/1.1)",
	Rank:   80,
	Method: http.MethodGet,
	Path:   func(o string, _ Settings) string { return "/" + o + "/" },
	Proto:  "tls",
	Report: tlsTable,
}

func init() { register(&tls) }

// TLSCostPair names the scenarios the report's TLS cost table compares: the
// cleartext baseline and the same cells over TLS.
var TLSCostPair = [2]string{simple.Name, tls.Name}

// tlsTable is shared by every scenario over TLS but the payload ones (whose
// table shows the protocol): what each cell negotiated and how its
// handshakes went.
var tlsTable = &Table{
	Caption: "TLS, HTTP/2 and HTTP/3: what each cell negotiated",
	Header: []string{"cell", "protocol", "TLS version", "cipher", "req/s", "handshakes full", "resumed", "handshakes/s",
		"handshake p50", "handshake p99", "certificate errors", "failed handshakes"},
	Right: []bool{false, false, false, false, true, true, true, true, true, true, true, true},
	Notes: []string{"Handshakes are every TLS handshake of the cell's window, those of connections dialled while draining included; " +
		"handshake latency runs from the ClientHello to the end of the handshake (TCP connect excluded; HTTP/3: the whole QUIC dial), " +
		"read from the loadgen's handshake histogram over the window. A failed handshake (another protocol selected, a version refused, " +
		"a certificate that does not verify) fails its request with reason tls."},
	Row: func(c ReportCell, f Format) ([]Field, bool) {
		t := c.TLS
		if t == nil {
			return nil, false
		}
		rate := nan
		if c.DurationS > 0 {
			rate = float64(t.HandshakesFull+t.HandshakesResumed) / c.DurationS
		}
		failed := t.ALPNMismatches + t.VersionRefused + t.HandshakeErrors
		return []Field{text(c.Name), text(protoName(c.Protocol) + " (ALPN " + orDash(t.ALPN) + ")"), text(orDash(t.Version)), text(orDash(t.Cipher)),
			text(f.Num(c.RPS, 0)), text(f.Int(t.HandshakesFull)), text(f.Int(t.HandshakesResumed)), text(f.Num(rate, 0)),
			text(f.Dur(c.HandshakeP50)), text(f.Dur(c.HandshakeP99)), countField(f, t.CertErrors), countField(f, failed)}, true
	},
}

// ProtocolText is how a report names what a cell spoke: h1, or the
// protocol with the TLS version negotiated, e.g. "h2, TLS 1.3".
func ProtocolText(proto string, t *manifest.TLS) string {
	s := protoName(proto)
	if t != nil && t.Version != "" {
		s += ", " + t.Version
	}
	return s
}

func protoName(p string) string {
	if p == "" {
		return "h1"
	}
	return p
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// countField is a count that should be 0: a fail when it is not.
func countField(f Format, n int64) Field {
	fd := text(f.Int(n))
	if n > 0 {
		fd.Class = "fail"
	}
	return fd
}
