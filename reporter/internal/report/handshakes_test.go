package report

import (
	"strings"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
)

// hsCell is a tls-handshake-* cell with the manifest's exact latency of
// its kind (exact) or Prometheus's (prom), either nil.
func hsCell(proxy, sc string, repeat int, exact *manifest.HandshakeLatency, prom *HandshakeLatency) Cell {
	c := tlsCell(proxy, sc, repeat, 50, 1000, 0.5)
	c.TLS = &manifest.TLS{}
	if sc == "tls-handshake-resumed" {
		c.TLS.LatencyResumed, c.HandshakeResumed = exact, prom
		// Its first connections' full handshakes are not the resumed side's.
		c.TLS.LatencyFull = &manifest.HandshakeLatency{Count: 50, P50: 0.1, P99: 0.2}
		c.HandshakeFull = &HandshakeLatency{Count: 50, P50: 0.1, P99: 0.2}
	} else {
		c.TLS.LatencyFull, c.HandshakeFull = exact, prom
	}
	return c
}

func TestHandshakeSplit(t *testing.T) {
	t.Parallel()
	ex := func(n int64, p50, p99 float64) *manifest.HandshakeLatency {
		return &manifest.HandshakeLatency{Count: n, P50: p50, P99: p99}
	}
	pr := func(n int64, p50, p99 float64) *HandshakeLatency {
		return &HandshakeLatency{Count: n, Mean: NaN(), P50: Num(p50), P99: Num(p99)}
	}
	cells := []Cell{
		// nginx: exact numbers, two repeats each (medians), one invalid
		// full repeat left out.
		hsCell("nginx", "tls-handshake-full", 1, ex(5000, 0.0010, 0.0030), pr(5000, 0.0011, 0.0032)),
		hsCell("nginx", "tls-handshake-full", 2, ex(5200, 0.0012, 0.0034), nil),
		hsCell("nginx", "tls-handshake-full", 3, ex(100, 0.0500, 0.0900), nil),
		hsCell("nginx", "tls-handshake-resumed", 1, ex(9000, 0.0004, 0.0010), nil),
		hsCell("nginx", "tls-handshake-resumed", 2, ex(9100, 0.0006, 0.0014), nil),
		// caddy: no manifest numbers, Prometheus's; resumed side not run.
		hsCell("caddy", "tls-handshake-full", 1, nil, pr(3000, 0.002, 0.008)),
		// haproxy: resumed only, the full side absent from the run.
		hsCell("haproxy", "tls-handshake-resumed", 1, ex(8000, 0.0005, 0.0011), nil),
		// traefik: a cell with no handshake numbers at all.
		hsCell("traefik", "tls-handshake-full", 1, nil, nil),
		tlsCell("nginx", "tls", 1, 50, 8000, 0.6), // not a handshake cell
	}
	cells[2].Validity.Verdict = Invalid
	ctl := hsCell("nginx", "tls-handshake-full", 1, ex(10, 1, 1), nil)
	ctl.Key = cellid.NewArm("nginx", "fast", "tls-handshake-full", "2s", cellid.ArmControl, 1)
	cells = append(cells, ctl)
	notRun := []NotRun{{Key: cellid.New("caddy", "fast", "tls-handshake-resumed", "2s", 1), Reason: "preflight: caddy TLS 127.0.0.1:9884 (ALPN http/1.1, TLS 1.3): connection refused"}}

	got := BuildHandshakeSplit(cells, notRun)
	if len(got) != 4 {
		t.Fatalf("%d rows, want nginx, caddy, haproxy, traefik: %+v", len(got), got)
	}
	n, c, h, tr := got[0], got[1], got[2], got[3]
	if n.Proxy != "nginx" || n.Origin != "fast" || n.Tier != "2s" ||
		n.Full.Cells != 2 || n.Full.Count != 10200 || !near(n.Full.P50, 0.0011) || !near(n.Full.P99, 0.0032) || n.Full.Source != HandshakeExact ||
		n.Resumed.Cells != 2 || n.Resumed.Count != 18100 || !near(n.Resumed.P50, 0.0005) || !near(n.Resumed.P99, 0.0012) || n.Resumed.Source != HandshakeExact ||
		!near(n.RatioP50, 0.0005/0.0011) || !near(n.RatioP99, 0.0012/0.0032) || n.Full.NA != "" || n.Resumed.NA != "" {
		t.Errorf("nginx %+v", n)
	}
	if c.Proxy != "caddy" || c.Full.Source != HandshakePrometheus || c.Full.Count != 3000 || !near(c.Full.P99, 0.008) ||
		c.Resumed.Cells != 0 || !strings.HasPrefix(c.Resumed.NA, "preflight: caddy TLS") || c.Resumed.P50.Known() || c.RatioP50.Known() {
		t.Errorf("caddy %+v", c)
	}
	if h.Proxy != "haproxy" || h.Full.NA != "no tls-handshake-full cell in the run" || !near(h.Resumed.P50, 0.0005) || h.RatioP99.Known() {
		t.Errorf("haproxy %+v", h)
	}
	if tr.Proxy != "traefik" || tr.Full.Cells != 1 || tr.Full.Source != "" || tr.Full.P50.Known() || tr.Full.NA != "" {
		t.Errorf("traefik %+v", tr)
	}
	// A side mixing exact and estimated numbers says so.
	mixed := BuildHandshakeSplit([]Cell{hsCell("nginx", "tls-handshake-full", 1, ex(10, 0.001, 0.002), nil),
		hsCell("nginx", "tls-handshake-full", 2, nil, pr(10, 0.001, 0.002))}, nil)
	if s := mixed[0].Full.Source; s != "exact+prometheus" {
		t.Errorf("mixed source %q", s)
	}
	if got := BuildHandshakeSplit([]Cell{tlsCell("nginx", "tls", 1, 50, 8000, 0.6)}, nil); len(got) != 0 {
		t.Errorf("a run without handshake cells: %+v", got)
	}
}
