package scenario

import (
	"math"
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

func TestTLSShape(t *testing.T) {
	t.Parallel()
	set := defaults
	set.TLSVersion = "1.3"
	sh := tls.Resolve(set)
	if tls.Path("fast", set) != simple.Path("fast", set) || tls.Method != simple.Method || sh.Proto != "tls" || sh.Streams != 0 ||
		sh.NewConn || sh.NoResume || sh.TLSVersion != "1.3" || !tls.Secure() || tls.Skip("nginx") != nil || tls.Report != tlsTable {
		t.Errorf("tls is not simple over TLS: shape %+v", sh)
	}
	// simple stays cleartext: no TLS version in its shape.
	if sh := simple.Resolve(set); simple.Secure() || sh.Proto != "" || sh.TLSVersion != "" {
		t.Errorf("simple shape %+v", sh)
	}
	if TLSCostPair != [2]string{"simple", "tls"} {
		t.Errorf("TLS cost pair %v", TLSCostPair)
	}
}

func TestTLSTable(t *testing.T) {
	t.Parallel()
	tl := &manifest.TLS{ALPN: "http/1.1", Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256", HandshakesFull: 10, HandshakesResumed: 3990}
	c := ReportCell{Name: "c", DurationS: 2, RPS: 2000, Protocol: "tls", TLS: tl, HandshakeP50: 0.0002, HandshakeP99: 0.001}
	fs, ok := row(t, tlsTable, c)
	want := "c|tls (ALPN http/1.1)|TLS 1.3|TLS_AES_128_GCM_SHA256|2000|10|3990|2000|0.000 s|0.001 s|0|0"
	if got := strings.Join(texts(fs), "|"); !ok || got != want {
		t.Errorf("row %s, want %s", got, want)
	}
	if fs[10].Class != "" || fs[11].Class != "" {
		t.Errorf("no errors but classes %q %q", fs[10].Class, fs[11].Class)
	}
	bad := *tl
	bad.CertErrors, bad.ALPNMismatches, bad.HandshakeErrors = 2, 1, 1
	c.TLS, c.HandshakeP50, c.HandshakeP99 = &bad, math.NaN(), math.NaN()
	fs, _ = row(t, tlsTable, c)
	if fs[10].Text != "2" || fs[10].Class != "fail" || fs[11].Text != "2" || fs[11].Class != "fail" || fs[8].Text != "– s" {
		t.Errorf("errors not flagged: %q %q/%q", texts(fs), fs[10].Class, fs[11].Class)
	}
	// Nothing negotiated (every handshake failed): dashes, not blanks.
	c.TLS = &manifest.TLS{HandshakeErrors: 5}
	if fs, _ := row(t, tlsTable, c); fs[1].Text != "tls (ALPN –)" || fs[2].Text != "–" || fs[3].Text != "–" {
		t.Errorf("empty negotiation %q", texts(fs))
	}
	if _, ok := row(t, tlsTable, ReportCell{Name: "h1"}); ok {
		t.Error("a row for a cell without TLS")
	}
	if ProtocolText("", nil) != "h1" || ProtocolText("h2", tl) != "h2, TLS 1.3" {
		t.Errorf("protocol text %q %q", ProtocolText("", nil), ProtocolText("h2", tl))
	}
}
