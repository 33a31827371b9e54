package report

import (
	"math"
	"strings"
	"testing"

	"proxybench/internal/cellid"
)

// tlsCell is a cell of scenario sc for the TLS cost table: its requests/s
// and the proxy's mean CPU.
func tlsCell(proxy, sc string, repeat, conc int, rps, cores float64) Cell {
	k := cellid.Key{ID: proxy + ".fast." + sc + ".2s.r" + string(rune('0'+repeat)), Proxy: proxy, Origin: "fast", Scenario: sc, Tier: "2s", Repeat: repeat}
	return Cell{Key: k, Concurrency: conc, TargetRateRPS: 0, RPS: Num(rps), ProxyRes: Resources{CPUMeanCores: Num(cores)}}
}

func TestTLSCost(t *testing.T) {
	t.Parallel()
	cells := []Cell{
		// nginx: cleartext 10,000 req/s at 0.5 cores (50 µs/req), TLS 9,500
		// (within 10 %) at 0.7125 (75 µs/req), repeats' medians; 1,000 full
		// handshakes/s at 0.8 cores.
		tlsCell("nginx", "simple", 1, 50, 10000, 0.5),
		tlsCell("nginx", "simple", 2, 50, 10000, 0.5),
		tlsCell("nginx", "tls", 1, 50, 9500, 0.7125),
		tlsCell("nginx", "tls", 2, 50, 9500, 0.7125),
		tlsCell("nginx", "tls-handshake-full", 1, 50, 1000, 0.8),
		tlsCell("nginx", "tls-handshake-resumed", 1, 50, 3000, 0.8), // not in the table
		// caddy: TLS at another concurrency: not comparable.
		tlsCell("caddy", "simple", 1, 50, 5000, 1),
		tlsCell("caddy", "tls", 1, 100, 4000, 1),
		// custom: a closed loop at rates 20 % apart: not at one rate.
		tlsCell("custom", "simple", 1, 50, 10000, 0.5),
		tlsCell("custom", "tls", 1, 50, 8000, 0.6),
		// haproxy: simple alone says nothing about TLS.
		tlsCell("haproxy", "simple", 1, 50, 9000, 0.4),
		// traefik: handshakes only, one invalid repeat left out.
		tlsCell("traefik", "tls-handshake-full", 1, 50, 600, 1.2),
		tlsCell("traefik", "tls-handshake-full", 2, 50, 10, 0.1),
	}
	cells[len(cells)-1].Validity.Verdict = Invalid
	ctl := tlsCell("nginx", "tls", 3, 50, 1, 1)
	ctl.Arm = cellid.ArmControl // arms are left out
	cells = append(cells, ctl)

	got := BuildTLSCost(cells)
	if len(got) != 4 {
		t.Fatalf("%d rows, want nginx, caddy, custom, traefik: %+v", len(got), got)
	}
	n, c, cu, tr := got[0], got[1], got[2], got[3]
	if n.Proxy != "nginx" || !n.Comparable || n.Note != "" || !near(n.ClearCPUPerRequest, 50e-6) || !near(n.TLSCPUPerRequest, 75e-6) ||
		!near(n.Overhead, 0.5) || !near(n.ClearRPS, 10000) || !near(n.TLSRPS, 9500) ||
		!near(n.HandshakeRPS, 1000) || !near(n.HandshakeCores, 0.8) || !near(n.HandshakesPerCore, 1250) {
		t.Errorf("nginx %+v", n)
	}
	if c.Proxy != "caddy" || c.Comparable || c.Overhead.Known() || !strings.Contains(c.Note, "concurrency 50") || !strings.Contains(c.Note, "concurrency 100") ||
		!near(c.TLSCPUPerRequest, 250e-6) || c.HandshakeRPS.Known() {
		t.Errorf("caddy %+v", c)
	}
	if cu.Proxy != "custom" || cu.Comparable || cu.Overhead.Known() || !strings.Contains(cu.Note, "different rates") || !strings.Contains(cu.Note, "-20 %") ||
		!near(cu.TLSCPUPerRequest, 75e-6) {
		t.Errorf("custom %+v", cu)
	}
	// The same closed-loop gap in an open loop at one target rate is one
	// rate: comparable.
	open := []Cell{tlsCell("custom", "simple", 1, 50, 1000, 0.05), tlsCell("custom", "tls", 1, 50, 800, 0.06)}
	open[0].TargetRateRPS, open[1].TargetRateRPS = 1000, 1000
	if got := BuildTLSCost(open); len(got) != 1 || !got[0].Comparable || !near(got[0].Overhead, 0.5) {
		t.Errorf("open loop at one target rate %+v", got)
	}
	if tr.Proxy != "traefik" || tr.Note != "" || tr.Overhead.Known() || !near(tr.HandshakesPerCore, 500) || !near(tr.HandshakeRPS, 600) {
		t.Errorf("traefik %+v", tr)
	}
	// tls without simple: the note says why there is no overhead.
	if got := BuildTLSCost([]Cell{tlsCell("nginx", "tls", 1, 50, 8000, 0.6)}); len(got) != 1 || !strings.Contains(got[0].Note, "no simple") {
		t.Errorf("tls alone %+v", got)
	}
	// Unknown CPU stays unknown, never 0.
	if got := BuildTLSCost([]Cell{tlsCell("nginx", "simple", 1, 50, 8000, math.NaN()), tlsCell("nginx", "tls", 1, 50, 0, 0.5)}); got[0].ClearCPUPerRequest.Known() ||
		got[0].TLSCPUPerRequest.Known() || got[0].Overhead.Known() {
		t.Errorf("unknowns %+v", got[0])
	}
}
