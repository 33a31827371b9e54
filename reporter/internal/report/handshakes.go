package report

import (
	"slices"
	"strings"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/internal/stats"
)

// HandshakeSplit is one proxy's TLS handshake latency on one origin and
// tier, full against resumed: the full handshakes of its
// tls-handshake-full cells and the resumed handshakes of its
// tls-handshake-resumed cells (so the first connections there, which have
// no session to resume yet, stay out), and their ratio.
type HandshakeSplit struct {
	Proxy   string        `json:"proxy"`
	Origin  string        `json:"origin"`
	Tier    string        `json:"tier"`
	Full    HandshakeSide `json:"full"`
	Resumed HandshakeSide `json:"resumed"`
	// RatioP50 and RatioP99 are resumed / full: below 1 when resuming a
	// session is the faster handshake.
	RatioP50 Num `json:"resumed_over_full_p50"`
	RatioP99 Num `json:"resumed_over_full_p99"`
}

// HandshakeSide is one kind of handshake of a HandshakeSplit: the median
// over the repeats that are not invalid (all repeats when every one is) of
// each cell's p50 and p99, and the handshakes counted in them. A cell's
// numbers are the loadgen's exact ones (the manifest's
// tls.handshake_latency_full / _resumed) where it has them, else
// Prometheus's histogram estimates (tls_handshake_latency_full /
// _resumed). Unknown numbers are null.
type HandshakeSide struct {
	Cells int   `json:"cells"` // repeats used
	Count int64 `json:"count"` // handshakes of the kind in them
	P50   Num   `json:"p50"`   // seconds
	P99   Num   `json:"p99"`
	// Source is where the numbers came from: exact (every cell's from the
	// manifest), prometheus (every cell's from the histogram), or
	// exact+prometheus; "" when no cell had any.
	Source string `json:"source,omitempty"`
	// NA, when the side has no cell, says why: the reason its cells were
	// not run, or that the run has none.
	NA string `json:"na,omitempty"`
}

// Where a HandshakeSide's numbers came from.
const (
	HandshakeExact      = "exact"
	HandshakePrometheus = "prometheus"
)

// BuildHandshakeSplit is a row per proxy x origin x tier with cells of
// tls-handshake-full or tls-handshake-resumed, in the cells' order; the
// arms' cells are left out. notRun gives the reason of a side without
// cells.
func BuildHandshakeSplit(cells []Cell, notRun []NotRun) []HandshakeSplit {
	full, resumed := scenario.TLSHandshakeFull, scenario.TLSHandshakeResumed
	order, by := byProxyOriginTier(cells, full, resumed)
	out := make([]HandshakeSplit, 0, len(order))
	for _, k := range order {
		s := HandshakeSplit{Proxy: k.proxy, Origin: k.origin, Tier: k.tier,
			Full: handshakeSide(usable(by[k][full]), false), Resumed: handshakeSide(usable(by[k][resumed]), true)}
		for _, side := range []struct {
			h  *HandshakeSide
			sc string
		}{{&s.Full, full}, {&s.Resumed, resumed}} {
			if side.h.Cells == 0 {
				side.h.NA = notRunReason(notRun, k, side.sc)
			}
		}
		s.RatioP50, s.RatioP99 = ratio(s.Resumed.P50, s.Full.P50), ratio(s.Resumed.P99, s.Full.P99)
		out = append(out, s)
	}
	return out
}

// handshakeSide is the resumed (or full) handshakes' latency of cs.
func handshakeSide(cs []*Cell, resumed bool) HandshakeSide {
	h := HandshakeSide{Cells: len(cs)}
	var p50s, p99s []float64
	var sources []string
	for _, c := range cs {
		p50, p99, n, src := cellHandshake(c, resumed)
		if src == "" {
			continue
		}
		h.Count += n
		if !slices.Contains(sources, src) {
			sources = append(sources, src)
		}
		if p50.Known() {
			p50s = append(p50s, float64(p50))
		}
		if p99.Known() {
			p99s = append(p99s, float64(p99))
		}
	}
	slices.Sort(sources) // exact before prometheus
	h.P50, h.P99, h.Source = Num(stats.Median(p50s)), Num(stats.Median(p99s)), strings.Join(sources, "+")
	return h
}

// cellHandshake is c's latency of the resumed (or full) handshakes: the
// manifest's exact one, else Prometheus's; source "" when it has neither.
func cellHandshake(c *Cell, resumed bool) (p50, p99 Num, count int64, source string) {
	var e *manifest.HandshakeLatency
	p := c.HandshakeFull
	if c.TLS != nil {
		e = c.TLS.LatencyFull
	}
	if resumed {
		p = c.HandshakeResumed
		if c.TLS != nil {
			e = c.TLS.LatencyResumed
		}
	}
	switch {
	case e != nil:
		return Num(e.P50), Num(e.P99), e.Count, HandshakeExact
	case p != nil:
		return p.P50, p.P99, p.Count, HandshakePrometheus
	}
	return NaN(), NaN(), 0, ""
}

// notRunReason is why the run has no cell of scenario sc for k: the
// reason of its first cell not run, else that the run has none.
func notRunReason(notRun []NotRun, k groupKey, sc string) string {
	prefix := cellid.Key{Proxy: k.proxy, Origin: k.origin, Scenario: sc, Tier: k.tier}.PlanKey() + "."
	for _, n := range notRun {
		if strings.HasPrefix(n.ID, prefix) {
			return n.Reason
		}
	}
	return "no " + sc + " cell in the run"
}
