//go:build e2e

package scenarios

import (
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

// TestTLSScenarios: every proxy over TLS (keep-alive HTTP/1.1, HTTP/2
// streams, a new connection per request with full and with resumed
// handshakes, 64 KiB and 1 MiB bodies over HTTP/2) and HTTP/3 where the
// proxy has it, 1 s cells. Each cell negotiated what it asked (ALPN, TLS
// 1.3), no certificate error, no failed handshake; the full variant never
// resumes, the resumed one does for every connection after the first
// wave, and the manifest holds the exact latency of each kind's
// handshakes; keep-alive cells shake hands once per connection; every 2xx
// of an HTTP/2 payload cell carried the whole body.
func TestTLSScenarios(t *testing.T) {
	const conc = 10
	m := run(t, "-tier", "1s", "-proxies", "nginx,haproxy,traefik,caddy", "-scenarios", "tls,h2,tls-handshake,h2-payload,h3",
		"-concurrency", "10", "-tls-version", "1.3")
	ran, skipped := cells(t, m)
	for _, tt := range []struct {
		scenario, proto, alpn string
		conns                 int64 // connections of a keep-alive cell; 0 = one per request
	}{
		{"tls", "tls", "http/1.1", conc},
		{"h2", "h2", "h2", conc / 10},
		{"tls-handshake-full", "tls", "http/1.1", 0},
		{"tls-handshake-resumed", "tls", "http/1.1", 0},
		{"h2-payload-64k", "h2", "h2", conc / 10},
		{"h2-payload-1m", "h2", "h2", conc / 10},
		{"h3", "h3", "h3", conc / 10},
	} {
		got := byScenario(t, ran, skipped, tt.scenario)
		want := 4
		if tt.scenario == "h3" {
			want = 2
		}
		if len(got) != want {
			t.Errorf("%s: %d proxies ran it, want %d", tt.scenario, len(got), want)
		}
		for proxy, c := range got {
			noErrors(t, c, 0)
			tl := c.TLS
			if c.Protocol != tt.proto || tl == nil {
				t.Errorf("%s %s: protocol %q, TLS %+v: want %s with a TLS record", proxy, tt.scenario, c.Protocol, tl, tt.proto)
				continue
			}
			if tl.ALPN != tt.alpn || tl.Version != "TLS 1.3" || tl.Cipher == "" {
				t.Errorf("%s %s: negotiated ALPN %q, %q, cipher %q: want %s, TLS 1.3", proxy, tt.scenario, tl.ALPN, tl.Version, tl.Cipher, tt.alpn)
			}
			if tl.CertErrors != 0 || tl.ALPNMismatches+tl.VersionRefused+tl.HandshakeErrors != 0 {
				t.Errorf("%s %s: failed handshakes %+v", proxy, tt.scenario, tl)
			}
			if ok := ok2xx(c); ok != c.Requests || ok < 50 {
				t.Errorf("%s %s: %d 2xx of %d requests", proxy, tt.scenario, ok, c.Requests)
			}
			if strings.HasPrefix(tt.scenario, "h2-payload") {
				sd := fullBodies(t, proxy, c)
				t.Logf("%s %s: %d requests, %.0f MB/s", proxy, tt.scenario, c.Requests, sd.BytesPerSec/1e6)
			}
			full, resumed := tl.HandshakesFull, tl.HandshakesResumed
			switch {
			case tt.conns > 0:
				// Keep-alive: a handshake per connection, never one per request.
				if full+resumed < 1 || full+resumed > tt.conns {
					t.Errorf("%s %s: %d full + %d resumed handshakes on %d keep-alive connections", proxy, tt.scenario, full, resumed, tt.conns)
				}
			case tt.scenario == "tls-handshake-full":
				if resumed != 0 || full < c.Requests {
					t.Errorf("%s %s: %d full, %d resumed handshakes for %d requests: every one full", proxy, tt.scenario, full, resumed, c.Requests)
				}
			default:
				// The first wave (one per worker) has no session to resume yet.
				if full > conc || resumed < c.Requests-conc {
					t.Errorf("%s %s: %d full, %d resumed handshakes for %d requests: want at most %d full, the rest resumed",
						proxy, tt.scenario, full, resumed, c.Requests, conc)
				}
			}
			// The exact latency of each kind covers its handshakes.
			for _, k := range []struct {
				kind string
				n    int64
				l    *manifest.HandshakeLatency
			}{{"full", full, tl.LatencyFull}, {"resumed", resumed, tl.LatencyResumed}} {
				if (k.n == 0) != (k.l == nil) || (k.l != nil && (k.l.Count != k.n || k.l.P50 <= 0 || k.l.P99 < k.l.P50)) {
					t.Errorf("%s %s: %d %s handshakes, exact latency %+v", proxy, tt.scenario, k.n, k.kind, k.l)
				}
			}
		}
	}
}
